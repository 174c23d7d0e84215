"""A boolean is not a number at the HTTP and MCP edges: `max_items: true` is a 422, never 1."""

from __future__ import annotations

import pytest

from tests.support import in_process

REST = [
    ("/v1/recall/context", {"query": "x", "max_items": True}),
    ("/v1/recall/context", {"query": "x", "max_tokens": False}),
    ("/v1/projects/p1/context", {"max_items": True}),
    ("/v1/projects/p1/context", {"max_tokens": True}),
    ("/api/v1/remember", {"content": "x", "path": "p", "importance": True}),
    ("/api/v1/remember", {"content": "x", "path": "p", "confidence": False}),
    ("/api/v1/reflect", {"dry_run": True, "limit": True}),
    ("/api/v1/reflect", {"dry_run": True, "time_window_hours": True}),
]
MCP = [
    ("recall_context", {"query": "x", "max_items": True}),
    ("recall_context", {"query": "x", "max_tokens": True}),
    ("recall", {"query": "x", "limit": True}),
    ("search_memory", {"query": "x", "limit": True}),
    ("search_memory", {"query": "x", "min_score": False}),
    ("remember", {"content": "x", "path": "p", "importance": True}),
    ("reflect", {"dry_run": True, "limit": True}),
    ("reflect", {"dry_run": True, "time_window_hours": True}),
]


def test_booleans_are_refused_for_numbers_over_rest(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        for route, body in REST:
            response = app.client.post(route, headers=alice, json=body)
            assert response.status_code == 422, (route, body, response.text)
        assert (
            app.client.post("/v1/recall/context", headers=alice, json={"query": "x", "max_items": 1}).status_code == 200
        )


def test_booleans_are_refused_for_numbers_over_mcp(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        for tool, arguments in MCP:
            failed, text = app.mcp(alice, tool, arguments)
            assert failed and "422 validation_error" in text, (tool, arguments, text)
        failed, text = app.mcp(alice, "recall_context", {"query": "x", "max_items": 1})
        assert not failed and text == "No matching XMemo memory was found."


@pytest.mark.parametrize("tool", ["recall_context", "recall", "search_memory", "reflect", "remember"])
def test_the_mcp_schema_still_names_number_types(tmp_path, tool):
    with in_process(tmp_path / "data") as app:
        listed = app.client.post(
            "/mcp",
            headers={**app.headers("alice"), "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        ).json()
    schema = {t["name"]: t["inputSchema"]["properties"] for t in listed["result"]["tools"]}[tool]
    numeric = {name: p["type"] for name, p in schema.items() if p.get("type") in ("integer", "number")}
    expected = {
        "recall_context": {"max_items": "integer", "max_tokens": "integer"},
        "recall": {"limit": "integer"},
        "search_memory": {"limit": "integer", "min_score": "number"},
        "reflect": {"time_window_hours": "number", "limit": "integer"},
        "remember": {"importance": "number"},
    }[tool]
    assert numeric == expected


def test_an_integral_float_is_still_an_integer_as_json_schema_says(tmp_path):
    with in_process(tmp_path / "data") as app:
        response = app.client.post(
            "/v1/recall/context", headers=app.headers("alice"), json={"query": "x", "max_items": 1.0}
        )
        assert response.status_code == 200 and response.json()["budget"]["max_items"] == 1
