"""A summary in a pack only groups (retrieval/ranking/grouping.py, usecases/reads.py `_grouped`): at any
budget the pack shows everything a pack of the same store without the summary shows, whole where that
one shows it whole; where grouping fits, the members share one header; where the group's dated lines
would outweigh the headers they save, the plain pack is used."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from retrieval import MemoryEngine, Principal, RetrievalSettings, import_records
from retrieval.domain import Memory, MemoryType
from retrieval.ranking import Group, fold_groups, group_candidate
from retrieval.usecases import ContextPack
from tests.support import pack_for

ALICE = Principal.local("alice")
QUERY = "JPY refund amounts"
M1 = "The JPY refund amounts were 100x too large on Monday."
M2 = "We fixed the JPY refund amounts with the minor-units table."
NOTES = [
    ("m1", M1, "2026-11-02T09:00:00Z"),
    ("m2", M2, "2026-11-04T09:00:00Z"),
    ("b", "Refund amounts above 5000 need the finance lead.", "2026-11-03T09:00:00Z"),
    ("c", "Refunds for EUR orders go out on Fridays.", "2026-11-03T10:00:00Z"),
]
SUMMARY = {
    "id": "s",
    "content": f"Summary of 2 related memories (2026-11-02 to 2026-11-04):\n- {M1}\n- {M2}",
    "derived_from": ["m1", "m2"],
    "occurred_at": "2026-11-04T09:00:00Z",
}


def _ids(name: str) -> str:
    return f"00000000-0000-4000-8000-{sum(ord(c) << (8 * i) for i, c in enumerate(name)):012d}"


def _store(path: Path, fake_embedder: Any, summary: bool, expires: dict[str, str] | None = None) -> MemoryEngine:
    engine = MemoryEngine(RetrievalSettings(data_dir=path), embedder=fake_embedder)
    lines = [{"id": _ids(n), "content": t, "path": "p", "occurred_at": at} for n, t, at in NOTES]
    for line, (name, _, _) in zip(lines, NOTES, strict=True):
        if expires and name in expires:
            line["expires_at"] = expires[name]
    if summary:
        lines.append(
            {**SUMMARY, "id": _ids("s"), "path": "p", "derived_from": [_ids(m) for m in SUMMARY["derived_from"]]}
        )
    import_records(engine, ALICE, lines)
    return engine


def _shown(pack: ContextPack) -> tuple[set[str], set[str]]:
    """The memories a pack shows (a group's members for its summary) and those it shows whole."""
    grouped: dict[str, set[str]] = {}
    for c in pack.retrieval_plan.collapsed:
        if c.reason == "grouped":
            grouped.setdefault(c.into, set()).add(c.id)
    shown, whole = set(), set()
    for item in pack.items:
        ids = grouped.get(item.id, {item.id})
        shown |= ids
        if not item.shortened:
            whole |= ids
    return shown, whole


def test_a_pack_with_the_summary_shows_all_a_pack_without_it_shows(tmp_path, fake_embedder):
    with (
        _store(tmp_path / "with", fake_embedder, summary=True) as reflected,
        _store(tmp_path / "without", fake_embedder, summary=False) as plain,
    ):
        members = {_ids("m1"), _ids("m2")}
        grouped_at, refused_at = [], []
        for budget in range(30, 160, 2):
            with_summary = pack_for(reflected, ALICE, QUERY, max_items=10, max_tokens=budget)
            without = pack_for(plain, ALICE, QUERY, max_items=10, max_tokens=budget)
            shown, whole = _shown(with_summary)
            plain_shown, plain_whole = _shown(without)
            assert shown >= plain_shown and whole >= plain_whole, budget
            assert with_summary.budget.used_tokens <= budget
            for pack in (with_summary, without):  # what the budget kept out is what the plan lists so
                budget_drops = [d for d in pack.retrieval_plan.dropped if d.reason == "budget"]
                assert pack.budget.dropped_items == len(budget_drops), budget
            if _ids("s") in {item.id for item in with_summary.items}:
                grouped_at.append(budget)
                assert len(with_summary.items) < len(shown)
                text = with_summary.context_text
                assert f"- 2026-11-02 {M1}" in text and f"- 2026-11-04 {M2}" in text
                assert text.count("2026-11-02 to 2026-11-04 · episodic · p") == 1
            elif members <= plain_whole:
                refused_at.append(budget)  # grouping possible, but it would have cost what the plain pack shows
        assert grouped_at and refused_at


def test_a_summary_whose_member_expired_or_is_filtered_out_ranks_as_itself(tmp_path, fake_embedder):
    """Past its expiry a member is never recalled (whether or not reflect recorded it): the summary is
    then the only memory holding its words, so it is packed as itself, heading and all."""
    with _store(tmp_path, fake_embedder, summary=True, expires={"m2": "2026-11-05T00:00:00Z"}) as engine:
        pack = pack_for(engine, ALICE, QUERY, max_items=10, max_tokens=1500)
        ids = [item.id for item in pack.items]
        assert _ids("m2") not in ids and _ids("s") in ids
        assert pack.blocks[ids.index(_ids("s"))].count("Summary of 2 related memories") == 1
        assert not [c for c in pack.retrieval_plan.collapsed if c.reason == "grouped"]


def test_a_group_takes_members_its_text_holds_whole_and_once():
    def memory(name: str, content: str, day: str, derived: tuple[str, ...] = ()) -> Memory:
        occurred = f"2026-11-0{day}T09:00:00Z"
        return Memory(name, "alice", content, "p", MemoryType.EPISODIC, occurred_at=occurred, derived_from=derived)

    a, b, c = memory("a", "Alpha ran.", "2"), memory("b", "Beta ran. Then it stopped.", "2"), memory("c", "Gamma.", "3")
    first = memory("s1", "Summary:\n- Alpha ran.\n- Beta ran.", "3", ("a", "b", "c"))  # b only in part
    second = memory("s2", "Summary:\n- Alpha ran.\n- Gamma.", "3", ("a", "c"))
    assert fold_groups([a, b, c], [first]) == []  # a alone: no group of one; b not held whole; c not held
    groups = fold_groups([a, b, c], [second, first])
    assert groups == [Group(second, (a, c))]  # and first, left with b, makes none
    block = group_candidate(groups[0])
    assert block.header == "2026-11-02 to 2026-11-03 · episodic · p"
    assert block.body == "- 2026-11-02 Alpha ran.\n- 2026-11-03 Gamma."
    whole = memory("s3", "Summary:\n- Alpha ran.\n- Beta ran. Then it stopped.", "3", ("a", "b"))
    same_day = group_candidate(fold_groups([a, b], [whole])[0])
    assert same_day.header.startswith("2026-11-02 · ") and same_day.body == "- Alpha ran.\n- Beta ran. Then it stopped."
