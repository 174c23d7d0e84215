"""A relevance floor relative to the top score ends a pack early; off by default."""

from __future__ import annotations

from retrieval import Principal, import_records
from tests.support import pack_for

ALICE = Principal(owner_id="alice")


def test_a_floor_keeps_only_memories_near_the_top(make_engine) -> None:  # type: ignore[no-untyped-def]
    engine = make_engine()
    import_records(
        engine,
        ALICE,
        [
            {"content": "deploy deploy checklist for the payments service", "path": "ops"},
            {"content": "deploy notes from last week", "path": "ops"},
            {"content": "lunch menu for friday", "path": "misc"},
        ],
    )
    everything = pack_for(engine, ALICE, "deploy checklist", max_items=10)
    assert everything.retrieval_plan.relevance_floor == 0.0 and len(everything.items) >= 2
    scores = [item.score for item in everything.items]
    strict = pack_for(engine, ALICE, "deploy checklist", max_items=10, relevance_floor=1.0)
    assert [i.id for i in strict.items] == [i.id for i in everything.items if i.score >= scores[0]]
    half = pack_for(engine, ALICE, "deploy checklist", max_items=10, relevance_floor=0.5)
    assert [i.id for i in half.items] == [i.id for i in everything.items if i.score >= 0.5 * scores[0]]
    assert half.retrieval_plan.relevance_floor == 0.5
