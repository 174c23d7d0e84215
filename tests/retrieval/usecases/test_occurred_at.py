"""`occurred_at` (when it happened) is taken by REST remember, MCP remember and import, kept, and shown in packs."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from service.cli import cli
from tests.support import in_process

GIVEN = "2023-05-08T13:56:00+02:00"
STORED = "2023-05-08T11:56:00.000000Z"


def _pack_shows(app, headers, memory_id: str) -> None:  # type: ignore[no-untyped-def]
    pack = app.client.post("/v1/recall/context", headers=headers, json={"query": "quarterly planning offsite"}).json()
    assert [(item["id"], item["occurred_at"]) for item in pack["items"]] == [(memory_id, STORED)]
    assert pack["context_text"].startswith("[1] 2023-05-08 · episodic · events/offsite\n")


def test_rest_remember_round_trips_occurred_at(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        created = app.client.post(
            "/api/v1/remember",
            headers=alice,
            json={"content": "quarterly planning offsite in Lisbon", "path": "events/offsite", "occurred_at": GIVEN},
        )
        assert created.status_code == 201, created.text
        record = app.client.get(f"/api/v1/memories/{created.json()['id']}", headers=alice).json()
        assert record["occurred_at"] == STORED and record["created_at"] != STORED
        _pack_shows(app, alice, record["id"])


@pytest.mark.parametrize("bad", ["2023-05-08T13:56:00", "yesterday", "1683550560", 1683550560, ""])
def test_rest_remember_refuses_a_naive_or_malformed_occurred_at(tmp_path, bad):
    with in_process(tmp_path / "data") as app:
        response = app.client.post(
            "/api/v1/remember", headers=app.headers("alice"), json={"content": "x", "path": "p", "occurred_at": bad}
        )
        assert response.status_code == 422 and "occurred_at" in response.json()["error"]["message"]


def test_mcp_remember_round_trips_occurred_at(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        failed, text = app.mcp(
            alice,
            "remember",
            {"content": "quarterly planning offsite in Lisbon", "path": "events/offsite", "occurred_at": GIVEN},
        )
        assert not failed, text
        memory_id = text.removeprefix("Remembered: ").split()[0]
        assert app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).json()["occurred_at"] == STORED
        _pack_shows(app, alice, memory_id)
        for bad in ("2023-05-08T13:56:00", "soon"):
            failed, text = app.mcp(alice, "remember", {"content": "x", "path": "p", "occurred_at": bad})
            assert failed and "422 validation_error: occurred_at must" in text


def test_cli_remember_and_import_keep_occurred_at(tmp_path, real_embedder):
    runner = CliRunner()

    def run(*args: str):  # type: ignore[no-untyped-def]
        return runner.invoke(cli, ["--data-dir", str(tmp_path / "data"), *args], catch_exceptions=False)

    source = tmp_path / "in.jsonl"
    source.write_text(
        json.dumps(
            {"content": "lunch with Bo at the harbour", "path": "events/lunch", "occurred_at": "2022-01-02T12:00:00Z"}
        )
        + "\n"
    )
    assert run("import", "--owner", "alice", str(source)).exit_code == 0
    assert (
        run(
            "remember",
            "--owner",
            "alice",
            "--path",
            "events/offsite",
            "--occurred-at",
            GIVEN,
            "quarterly planning offsite in Lisbon",
        ).exit_code
        == 0
    )
    assert run("remember", "--owner", "alice", "--path", "p", "--occurred-at", "2023-05-08", "x").exit_code == 1
    out = tmp_path / "out.jsonl"
    assert run("export", str(out)).exit_code == 0
    kept = {line["path"]: line["occurred_at"] for line in map(json.loads, out.read_text().splitlines())}
    assert kept == {"events/lunch": "2022-01-02T12:00:00.000000Z", "events/offsite": STORED}
    pack = json.loads(run("recall-context", "--owner", "alice", "--json", "offsite in Lisbon").output)
    assert pack["context_text"].startswith("[1] 2023-05-08 · episodic · events/offsite\n")
