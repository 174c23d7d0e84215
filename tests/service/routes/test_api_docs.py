"""The APIs describe themselves (service/api_docs.py): a bearer scheme Swagger can authorize with, an id
and a summary per operation, and a description for every field, parameter and MCP tool argument."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.support import in_process


def _walk(schema: Any, where: str) -> list[str]:
    """Every property under `schema` (nested objects and arrays too) that has no description."""
    missing = []
    if isinstance(schema, dict):
        for name, prop in schema.get("properties", {}).items():
            if not (isinstance(prop, dict) and prop.get("description")):
                missing.append(f"{where}.{name}")
            missing += _walk(prop, f"{where}.{name}")
        for key in ("items", "additionalProperties"):
            missing += _walk(schema.get(key), where)
        for key in ("anyOf", "allOf", "oneOf"):
            for part in schema.get(key, []):
                missing += _walk(part, where)
    return missing


def test_the_openapi_document_describes_every_operation_field_and_parameter(tmp_path: Path) -> None:
    with in_process(tmp_path / "data") as service:
        spec = service.client.get("/openapi.json").json()
    assert spec["components"]["securitySchemes"]["bearer"] == {
        "type": "http",
        "scheme": "bearer",
        "description": "An API key: xmemo keys create",
    }
    ids = []
    for path, operations in spec["paths"].items():
        for method, operation in operations.items():
            where = f"{method.upper()} {path}"
            assert operation.get("operationId") and operation.get("summary"), where
            assert not operation["summary"].endswith("Route"), where
            ids.append(operation["operationId"])
            public = path in ("/healthz", "/readyz", "/metrics")
            assert (operation.get("security") == [{"bearer": []}]) != public, where
            for parameter in operation.get("parameters", []):
                assert parameter.get("description"), f"{where} ?{parameter['name']}"
    assert len(ids) == len(set(ids))
    archive = spec["paths"]["/api/v1/memories/{memory_id}"]["delete"]
    assert archive["operationId"] == "archive_or_forget_memory" and archive["summary"].startswith("Archive")
    missing = [m for name, model in spec["components"]["schemas"].items() for m in _walk(model, name)]
    assert missing == []
    remember = spec["components"]["schemas"]["RememberBody"]["properties"]
    assert "supersedes" in remember["semantic_key"]["description"] and len(remember) >= 15


def test_every_mcp_tool_parameter_has_a_description(tmp_path: Path) -> None:
    with in_process(tmp_path / "data") as service:
        response = service.client.post(
            "/mcp",
            headers={**service.headers("ana"), "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}},
        )
    tools = response.json()["result"]["tools"]
    assert {t["name"] for t in tools} >= {"remember", "recall_context", "search_memory", "reflect"}
    missing = [m for tool in tools for m in _walk(tool["inputSchema"], tool["name"])]
    assert missing == []
    count = sum(len(tool["inputSchema"].get("properties", {})) for tool in tools)
    assert count >= 35
