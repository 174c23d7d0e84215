"""Backups keep their owners: export carries owner_id and team_id, import restores them or refuses a foreign line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from retrieval import Memory, MemoryType, ValidationError
from retrieval.storage import content_id, line_owner


def write_lines(path: Path, lines: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def exported(run, path: Path, data: str = "data") -> list[dict[str, Any]]:  # type: ignore[no-untyped-def]
    assert run("export", str(path), data=data).exit_code == 0
    return sorted((json.loads(line) for line in path.read_text().splitlines()), key=lambda r: r["id"])


@pytest.fixture
def three_tenants(run, tmp_path):  # type: ignore[no-untyped-def]
    run("remember", "--owner", "alice", "--path", "diary", "alice's private diary entry")
    run("remember", "--owner", "bob", "--path", "diary", "bob's private diary entry")
    team = write_lines(
        tmp_path / "team.jsonl", [{"content": "the team's launch plan", "path": "plans", "team_id": "t1"}]
    )
    assert run("import", "--owner", "carol", str(team)).exit_code == 0
    return exported(run, tmp_path / "all.jsonl")


def test_export_lines_carry_owner_and_team(three_tenants):
    assert [
        (r["owner_id"], r["team_id"], r["content"]) for r in sorted(three_tenants, key=lambda r: r["owner_id"])
    ] == [
        ("alice", None, "alice's private diary entry"),
        ("bob", None, "bob's private diary entry"),
        ("carol", "t1", "the team's launch plan"),
    ]


def test_import_as_one_owner_refuses_the_line_of_another(run, tmp_path, three_tenants):
    backup = tmp_path / "all.jsonl"
    lines = backup.read_text().splitlines()
    foreign = next(n for n, line in enumerate(lines, start=1) if json.loads(line)["owner_id"] != "alice")
    result = run("import", "--owner", "admin", str(backup), data="restored")
    assert result.exit_code == 1
    assert f"line 1: belongs to owner {json.loads(lines[0])['owner_id']!r}, not 'admin'" in result.output
    result = run("import", "--owner", "alice", str(backup), data="restored")
    assert result.exit_code == 1 and f"line {foreign}: belongs to owner" in result.output
    # nothing was written: not even the data dir, which a read names instead of making (exit 1)
    refused = run("export", str(tmp_path / "none.jsonl"), data="restored")
    assert refused.exit_code == 1 and "no data dir at" in refused.output and "restored" in refused.output


def test_import_without_owner_restores_every_line_as_it_was(run, tmp_path, three_tenants):
    assert run("import", str(tmp_path / "all.jsonl"), data="restored").exit_code == 0
    assert exported(run, tmp_path / "again.jsonl", data="restored") == three_tenants
    pack = json.loads(
        run("recall-context", "--owner", "admin", "--json", "private diary entry", data="restored").output
    )
    assert pack["items"] == []


def test_a_plain_line_needs_an_owner(run, tmp_path):
    plain = write_lines(tmp_path / "plain.jsonl", [{"content": "no owner here", "path": "p"}])
    result = run("import", str(plain))
    assert result.exit_code == 1 and "line 1: no owner_id; import it with --owner OWNER" in result.output


def test_reimporting_an_id_less_file_adds_nothing(run, tmp_path):
    lines = [
        {"content": f"note {i} about the garden", "path": "garden", "occurred_at": f"2026-01-0{i}T09:00:00Z"}
        for i in range(1, 4)
    ] + [
        {"content": "note 1 about the garden", "path": "garden", "occurred_at": "2026-01-01T09:00:00Z"}
    ]  # repeated within the file
    plain = write_lines(tmp_path / "plain.jsonl", lines)
    first = run("import", "--owner", "alice", "--json", str(plain))
    assert json.loads(first.output) == {"imported": 3, "skipped": 1, "keyed": 0}
    second = run("import", "--owner", "alice", "--json", str(plain))
    assert json.loads(second.output) == {"imported": 0, "skipped": 4, "keyed": 0}
    assert len(exported(run, tmp_path / "out.jsonl")) == 3


def test_the_same_text_of_two_owners_is_two_memories(run, tmp_path):
    plain = write_lines(tmp_path / "plain.jsonl", [{"content": "the same words", "path": "p"}])
    for owner in ("alice", "bob"):
        assert json.loads(run("import", "--owner", owner, "--json", str(plain)).output)["imported"] == 1


def test_line_owner_rules():
    assert line_owner(None, {"owner_id": "bob"}) == "bob"
    assert line_owner("bob", {"owner_id": "bob"}) == line_owner("bob", {}) == "bob"
    for owner, line in ((None, {}), ("admin", {"owner_id": "bob"}), (None, {"owner_id": ""}), (None, {"owner_id": 7})):
        with pytest.raises(ValidationError):
            line_owner(owner, line)


def test_content_id_depends_on_whose_and_what():
    base = Memory(id="x", owner_id="alice", content="c", path="p", type=MemoryType.EPISODIC)
    others = [
        Memory(id="x", owner_id="bob", content="c", path="p", type=MemoryType.EPISODIC),
        Memory(id="x", owner_id="alice", content="c", path="p", type=MemoryType.EPISODIC, team_id="t1"),
        Memory(id="x", owner_id="alice", content="d", path="p", type=MemoryType.EPISODIC),
    ]
    assert content_id(base, None) == content_id(base, None)
    assert (
        len(
            {
                content_id(base, None),
                content_id(base, "2026-01-01T00:00:00.000000Z"),
                *(content_id(m, None) for m in others),
            }
        )
        == 5
    )
