"""Metadata is bounded in depth and size on every way in (REST, MCP, CLI import): 422, never a stored 500."""

from __future__ import annotations

import json
from typing import Any

import pytest
from click.testing import CliRunner

from retrieval import ValidationError
from retrieval.domain import MAX_METADATA_BYTES, MAX_METADATA_DEPTH, check_metadata
from service.cli import cli
from tests.support import in_process


def nested(depth: int) -> dict[str, Any]:
    """A metadata object `depth` levels deep: {"k": {"k": ... {}}}."""
    value: dict[str, Any] = {}
    for _ in range(depth - 1):
        value = {"k": value}
    return value


def test_the_bounds_hold_exactly():
    assert check_metadata(nested(MAX_METADATA_DEPTH)) == nested(MAX_METADATA_DEPTH)
    with pytest.raises(ValidationError, match=f"nested deeper than {MAX_METADATA_DEPTH} levels"):
        check_metadata(nested(MAX_METADATA_DEPTH + 1))
    with pytest.raises(ValidationError, match="nested deeper"):
        check_metadata({"list": json.loads("[" * MAX_METADATA_DEPTH + "]" * MAX_METADATA_DEPTH)})
    with pytest.raises(ValidationError, match=f"exceeds {MAX_METADATA_BYTES} bytes"):
        check_metadata({"text": "x" * MAX_METADATA_BYTES})
    with pytest.raises(ValidationError, match="plain JSON"):
        check_metadata({"n": float("nan")})


def test_nesting_far_beyond_the_stack_is_refused_not_crashed():
    with pytest.raises(ValidationError, match="nested deeper"):
        check_metadata(nested(100_000))


def test_rest_refuses_deep_metadata_and_the_team_audit_keeps_working(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice, bob = app.headers("alice", team_ids=("t1",)), app.headers("bob", team_ids=("t1",))
        body = {"content": "release notes", "path": "p", "team_id": "t1", "metadata": nested(255)}
        refused = app.client.post("/api/v1/remember", headers=alice, json=body)
        assert refused.status_code == 422
        assert refused.json()["error"] == {
            "code": "validation_error",
            "message": f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels",
        }
        for route in ("/api/v1/update_state", "/api/v1/timeline/events"):
            extra = (
                {"state_key": "s"} if "state" in route else {"event_type": "e", "occurred_at": "2026-01-01T00:00:00Z"}
            )
            assert (
                app.client.post(
                    route, headers=alice, json={"content": "x", "metadata": nested(255), **extra}
                ).status_code
                == 422
            )
        kept = app.client.post("/api/v1/remember", headers=alice, json={**body, "metadata": nested(MAX_METADATA_DEPTH)})
        assert kept.status_code == 201
        assert app.client.get(f"/api/v1/memories/{kept.json()['id']}", headers=bob).json()["metadata"] == nested(
            MAX_METADATA_DEPTH
        )
        assert app.client.get("/api/v1/audit", headers=bob).status_code == 200


def test_mcp_refuses_deep_metadata_with_422(tmp_path):
    with in_process(tmp_path / "data") as app:
        failed, text = app.mcp(
            app.headers("alice"), "remember", {"content": "x", "path": "p", "metadata": nested(MAX_METADATA_DEPTH + 8)}
        )
        assert failed and "422 validation_error: metadata is nested deeper" in text


def test_cli_import_names_the_line_with_deep_metadata(tmp_path, real_embedder):
    source = tmp_path / "in.jsonl"
    lines = [{"content": "fine", "path": "p"}, {"content": "deep", "path": "p", "metadata": nested(255)}]
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "data"), "import", "--owner", "alice", str(source)])
    assert result.exit_code == 1
    assert f"line 2: metadata is nested deeper than {MAX_METADATA_DEPTH} levels" in result.output
