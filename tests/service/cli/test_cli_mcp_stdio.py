"""`xmemo mcp`: the MCP tools on stdin/stdout, driven by the MCP SDK's own stdio client, with the same tools,
descriptions, schemas and texts as the HTTP endpoint: on the data dir when no server runs, through the
running server's API when one does."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path
from typing import Any

import httpx
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from tests.support import ROOT, RunningServer

AS_OF = "2026-12-01T12:00:00Z"
NOTES = [
    ("PAY-2291: refunds over 10,000 EUR time out in the payments gateway.", "projects/payments"),
    ("The payments gateway timeout was raised to 30 s on 2026-11-20.", "projects/payments"),
    ("Standup moved to 9:30 from next Monday.", "calendar"),
]
READS: list[tuple[str, dict[str, Any]]] = [
    ("recall_context", {"query": "What is the status of PAY-2291?", "as_of": AS_OF}),
    ("recall_context", {"query": "payments gateway timeout", "max_items": 1, "max_tokens": 60}),
    ("search_memory", {"query": "payments gateway refunds", "path_filter": "projects/%"}),
    ("recall", {"query": "When is standup?"}),
    ("recall_context", {"query": "anything", "max_items": 0}),  # refused alike: a tool error
]
TOOLS = ["get_mcp_identity", "recall", "recall_context", "reflect", "remember", "search_memory"]


def _texts(results: list[Any]) -> list[tuple[bool, str]]:
    return [(bool(r.is_error), r.content[0].text) for r in results]


async def _over_stdio(
    data: Path, owner: str, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[Any, list[Any], list[Any]]:
    """Start `xmemo mcp` as a desktop client would; initialize, list the tools, make the calls."""
    params = StdioServerParameters(
        command=sys.executable,
        args=["-c", "from service.cli import main; main()", "--data-dir", str(data), "mcp", "--owner", owner],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        cwd=str(ROOT),
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        initialized = await session.initialize()
        tools = (await session.list_tools()).tools
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return initialized, tools, results


def _over_http(
    server: RunningServer, owner: str, calls: list[tuple[str, dict[str, Any]]]
) -> tuple[list[Any], list[Any]]:
    """The HTTP endpoint's tools/list and tools/call answers for a key of `owner`."""
    headers = {"Authorization": f"Bearer {server.key(owner)}", "Accept": "application/json, text/event-stream"}

    def rpc(method: str, params: dict[str, Any]) -> Any:
        body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
        return httpx.post(f"{server.url}/mcp", headers=headers, json=body, timeout=120).json()["result"]

    tools = rpc("tools/list", {})["tools"]
    results = [rpc("tools/call", {"name": name, "arguments": arguments}) for name, arguments in calls]
    return tools, [(bool(r.get("isError")), r["content"][0]["text"]) for r in results]


def _listed(tools: list[Any]) -> list[tuple[str, str, Any]]:
    return sorted((t.name, t.description, t.input_schema) for t in tools)


def _listed_http(tools: list[dict[str, Any]]) -> list[tuple[str, str, Any]]:
    return sorted((t["name"], t["description"], t["inputSchema"]) for t in tools)


def _remember(run, owner: str) -> None:  # type: ignore[no-untyped-def]
    for content, path in NOTES:
        written = run("remember", "--owner", owner, "--path", path, "--occurred-at", AS_OF, content)
        assert written.exit_code == 0, written.output


def test_xmemo_mcp_on_the_data_dir_answers_as_the_http_endpoint(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    _remember(run, "ana")
    initialized, tools, results = asyncio.run(_over_stdio(data, "ana", [*READS, ("get_mcp_identity", {})]))
    assert initialized.server_info.name == "xmemo"
    assert sorted(t.name for t in tools) == TOOLS
    stdio = _texts(results)
    assert "PAY-2291" in stdio[0][1] and stdio[0][1].startswith("### XMemo Context\nItems: ")
    assert stdio[-1] == (False, stdio[-1][1]) and stdio[-1][1].startswith("Owner ID: ana\n")
    assert stdio[-2][0] and "422 validation_error" in stdio[-2][1]
    server = RunningServer(data)  # the data dir is free again: the session ended with the client
    try:
        http_tools, http = _over_http(server, "ana", READS)
    finally:
        server.stop()
    assert _listed(tools) == _listed_http(http_tools)
    assert stdio[: len(READS)] == http


def test_xmemo_mcp_beside_a_running_server_goes_through_its_api(run, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    data = tmp_path / "data"
    _remember(run, "ana")
    server = RunningServer(data)
    try:
        stored = ("remember", {"content": "The on-call rota changes on Fridays.", "path": "calendar"})
        http_tools, http = _over_http(server, "ana", READS)
        _, tools, results = asyncio.run(_over_stdio(data, "ana", [*READS, stored]))
        with server.client(server.key("ana")) as client:
            contents = [m["content"] for m in client.get("/api/v1/memories").json()["memories"]]
    finally:
        server.stop()
    assert _listed(tools) == _listed_http(http_tools)
    stdio = _texts(results)
    assert stdio[: len(READS)] == http
    assert not stdio[-1][0] and stdio[-1][1].startswith("Remembered: ")
    assert "The on-call rota changes on Fridays." in contents  # written by the server, for ana
