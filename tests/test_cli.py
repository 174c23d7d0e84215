"""The `xmemo` command line through click's runner: outputs, JSON, exit codes, export/import round trip."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from service.cli import cli


@pytest.fixture
def run(tmp_path, real_embedder):  # type: ignore[no-untyped-def]
    runner = CliRunner()

    def invoke(*args: str, data: str = "data"):  # type: ignore[no-untyped-def]
        return runner.invoke(cli, ["--data-dir", str(tmp_path / data), *args], catch_exceptions=False)

    return invoke


def test_remember_then_recall_context_and_search(run):
    assert run("remember", "--owner", "alice", "--path", "decisions", "We picked Qdrant Edge for the index.").exit_code == 0
    result = run("remember", "--owner", "alice", "--path", "support", "--json", "Ticket XJ-4471-QZ is about login.")
    assert result.exit_code == 0 and json.loads(result.output)["status"] == "active"
    text = run("recall-context", "--owner", "alice", "XJ-4471-QZ")
    assert text.exit_code == 0
    lines = text.output.splitlines()
    assert lines[0] == "### XMemo Context" and lines[2].endswith("| Location: support")
    pack = json.loads(run("recall-context", "--owner", "alice", "--json", "--max-items", "1", "index").output)
    assert pack["budget"]["used_items"] == 1
    found = json.loads(run("search", "--owner", "alice", "--json", "XJ-4471-QZ").output)
    assert found["results"][0]["path"] == "support"
    assert run("recall-context", "--owner", "bob", "XJ-4471-QZ").output.strip() == "No matching XMemo memory was found."


def test_user_errors_exit_1_with_a_message(run):
    result = run("recall-context", "--owner", "alice", "--max-items", "99", "q")
    assert result.exit_code == 1 and "max_items" in result.output
    result = run("remember", "--owner", "alice", "--path", "p", "   ")
    assert result.exit_code == 1 and "content" in result.output


def test_export_import_round_trip(run, tmp_path):
    for i in range(5):
        run("remember", "--owner", "alice", "--path", f"p/{i}", f"fact number {i} about the garden")
    run("remember", "--owner", "alice", "--path", "k", "--semantic-key", "colour", "blue")
    run("remember", "--owner", "alice", "--path", "k", "--semantic-key", "colour", "green")
    out = tmp_path / "export.jsonl"
    assert run("export", "--owner", "alice", str(out)).exit_code == 0
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert len(records) == 7 and {r["status"] for r in records} == {"active", "superseded"}
    result = run("import", "--owner", "alice", "--json", str(out), data="copy")
    assert result.exit_code == 0
    assert json.loads(result.output) == {"imported": 7, "skipped": 0, "keyed": 0}
    again = run("import", "--owner", "alice", "--json", str(out), data="copy")
    assert json.loads(again.output)["skipped"] == 7
    out2 = tmp_path / "export2.jsonl"
    run("export", str(out2), data="copy")
    second = sorted(out2.read_text().splitlines())
    first = sorted(out.read_text().splitlines())
    assert [json.loads(a)["content"] for a in first] == [json.loads(b)["content"] for b in second]
    assert [json.loads(a) for a in first] == [json.loads(b) for b in second]


def test_import_rejects_a_bad_file_and_writes_nothing(run, tmp_path):
    run("remember", "--owner", "alice", "--path", "p", "already here")
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"content": "fine", "path": "p"}\n{"content": "", "path": "p"}\n')
    result = run("import", "--owner", "alice", str(bad))
    assert result.exit_code == 1 and "line 2" in result.output
    out = tmp_path / "after.jsonl"
    run("export", str(out))
    assert [json.loads(line)["content"] for line in out.read_text().splitlines()] == ["already here"]
    assert run("export", str(out), data="nowhere").exit_code == 3


def test_reindex_rebuilds(run):
    run("remember", "--owner", "alice", "--path", "p", "the reindex keeps this memory findable")
    result = run("reindex")
    assert result.exit_code == 0
    pack = json.loads(run("recall-context", "--owner", "alice", "--json", "reindex findable").output)
    assert len(pack["items"]) == 1
