"""`xmemo mcp`: the MCP tools on stdin and stdout, for a desktop MCP client or an agent framework that starts
its MCP servers as a process. The tools, their descriptions and schemas are the HTTP endpoint's own
(service/mcp_tools.py build_mcp). Beside a running server each call goes to its `/mcp` as the operator
acting for `--owner` (cli/remote.py), so the answer is the server's, word for word; with none, the tools run
on the data dir as the other commands do (`Principal.local`), holding it while the session lasts.

Standard output is the protocol's alone: logs go to standard error (cli/__init__.py). The MCP SDK is
imported inside the command, as the HTTP app is inside `serve`."""

from __future__ import annotations

from typing import Any

import anyio
import click

from retrieval import MemoryEngine, Principal, StoreError, XMemoError

from .common import OWNER, open_private, settings_of
from .remote import Remote, remote_of

__all__ = ["mcp_command"]


@click.command("mcp")
@click.option("--owner", required=True, type=OWNER, help="Whose memories the tools read and write.")
@click.pass_context
def mcp_command(ctx: click.Context, owner: str) -> None:
    """Serve the MCP tools on stdin/stdout (beside a running server, through its API; else on the data dir)."""
    from compactor import ReflectSettings

    from ..mcp_tools import build_mcp

    settings = settings_of(ctx)
    remote = remote_of(settings)
    if remote is not None:
        forwarding = _Forwarding(remote, owner)
        anyio.run(build_mcp(_no_engine, ReflectSettings(), forward=forwarding.call).run_stdio_async)
        return
    principal = Principal.local(owner)
    with open_private(settings) as engine:
        server = build_mcp(lambda: engine, ReflectSettings(), principal_of=lambda _ctx: principal)
        anyio.run(server.run_stdio_async)


def _no_engine() -> MemoryEngine:
    raise StoreError("the running server holds the data dir; its API answers the tools")


class _Forwarding:
    """Each tool call to the running server, acting for the owner; its answer as it gave it."""

    def __init__(self, remote: Remote, owner: str) -> None:
        self.remote = remote
        self.owner = owner

    async def call(self, tool: str, arguments: dict[str, Any]) -> Any:
        from mcp.types import CallToolResult, TextContent

        try:
            result = await self.remote.mcp_result(self.owner, tool, arguments)
        except XMemoError as error:  # refused at the door, or the server went away mid-session
            text = f"{error.status} {error.code}: {error.message}"
            return CallToolResult(content=[TextContent(type="text", text=text)], is_error=True)
        return CallToolResult.model_validate(result)
