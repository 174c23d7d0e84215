"""`xmemo memories ...` through click's runner on a real data dir: list, edit, archive, restore, batch, forget."""

from __future__ import annotations

import json


def test_the_management_verbs(run, tmp_path):
    batch = tmp_path / "batch.jsonl"
    batch.write_text("\n".join(json.dumps({"content": f"garden fact {n}", "path": "garden"}) for n in range(3)) + "\n")
    assert run("memories", "batch", "--owner", "alice", str(batch)).output.strip() == "3 created, 0 unchanged"
    assert run("memories", "batch", "--owner", "alice", str(batch)).output.strip() == "0 created, 3 unchanged"
    listed = json.loads(run("memories", "list", "--owner", "alice", "--limit", "2", "--json").output)
    assert len(listed["memories"]) == 2 and listed["next_cursor"]
    first = listed["memories"][0]["id"]
    edited = run("memories", "edit", "--owner", "alice", "--expected-version", "1", "--content", "garden fact 9", first)
    assert edited.exit_code == 0 and " v2 " in edited.output
    stale = run("memories", "edit", "--owner", "alice", "--expected-version", "1", "--path", "x", first)
    assert stale.exit_code == 1 and "version" in stale.output
    assert "archived" in run("memories", "archive", "--owner", "alice", first).output
    assert "active" in run("memories", "restore", "--owner", "alice", first).output
    assert run("memories", "list", "--owner", "bob", "--json").output.count('"id"') == 0
    history = json.loads(run("memories", "history", "--owner", "alice", first).output)
    assert [a["action"] for a in history["audit"]] == ["create", "edit", "archive", "restore"]
    assert run("memories", "forget", "--owner", "alice", "--yes", first).exit_code == 0
    assert run("memories", "history", "--owner", "alice", first).exit_code == 1
    out = tmp_path / "export.jsonl"
    run("export", str(out))
    assert "garden fact 9" not in out.read_text() and out.read_text().count("\n") == 2
    assert run("memories", "forget-owner", "--yes", "alice").output.strip() == "forgot 2 memories of alice"


def test_list_takes_any_status_as_the_console_does(run):
    assert run("remember", "--owner", "alice", "--path", "p", "--json", "a note to archive").exit_code == 0
    first = json.loads(run("memories", "list", "--owner", "alice", "--json").output)["memories"][0]["id"]
    assert run("memories", "archive", "--owner", "alice", first).exit_code == 0
    every = json.loads(run("memories", "list", "--owner", "alice", "--status", "any", "--json").output)
    assert [(m["id"], m["status"]) for m in every["memories"]] == [(first, "archived")]
    active = json.loads(run("memories", "list", "--owner", "alice", "--status", "active", "--json").output)
    assert active["memories"] == []
    wrong = run("memories", "list", "--owner", "alice", "--status", "gone")
    assert wrong.exit_code == 1 and "'gone' is not one of 'active', 'archived', 'expired', 'superseded', 'any'" in (
        wrong.output
    )


def test_history_links_a_superseding_remember_both_ways_and_the_old_version_takes_no_edit(run):
    said = ("PAY-2291: refunds over 10,000 EUR time out.", "PAY-2291: fixed in 4.2; refunds go through.")
    first, second = (
        json.loads(
            run("remember", "--owner", "alice", "--path", "bugs", "--semantic-key", "bug:PAY-2291", "--json", s).output
        )["id"]
        for s in said
    )
    was = json.loads(run("memories", "history", "--owner", "alice", first).output)
    now = json.loads(run("memories", "history", "--owner", "alice", second).output)
    assert (was["supersedes"], was["superseded_by"], now["supersedes"], now["superseded_by"]) == (
        [],
        [second],
        [first],
        [],
    )
    assert [v["action"] for v in was["versions"]] == ["created", "supersede"]
    assert [v["action"] for v in now["versions"]] == ["create"]
    edit = run("memories", "edit", "--owner", "alice", "--expected-version", "2", "--content", "no", first)
    assert edit.exit_code == 1 and f"superseded by {second}" in edit.output
