"""Questions led by their time, on a constructed week of an engineering agent's notes (49 memories,
tests/data/week_of_notes.json, asked on Thursday 2026-12-03): the memories of the window the question
names fill the pack, and `retrieval_plan` says which path the time took. The real model, SQLite and
Qdrant Edge."""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

import pytest

from retrieval import Principal, RememberRequest, remember
from retrieval.engine import MemoryEngine
from tests.support import FixedClock, pack_for

DATA = json.loads((Path(__file__).parents[2] / "data" / "week_of_notes.json").read_text())
AS_OF = DATA["as_of"]
ALICE = Principal.local("alice")


@pytest.fixture(scope="module")
def week(tmp_path_factory, real_embedder):  # type: ignore[no-untyped-def]
    from tests.support import settings_for

    settings = settings_for(tmp_path_factory.mktemp("week") / "data", "edge")
    engine = MemoryEngine(settings, embedder=real_embedder, clock=FixedClock(datetime.fromisoformat(AS_OF)))
    ids = {}
    for note in DATA["memories"]:
        ids[note["content"]] = remember(engine, ALICE, RememberRequest(**note)).memory.id
    yield engine, ids
    engine.close()


def _occurred(prefix: str) -> list[str]:
    return [m["content"] for m in DATA["memories"] if m["occurred_at"].startswith(prefix)]


def _is_decision(content: str) -> bool:
    return "decid" in content.lower() or "decision" in content.lower()


def _decisions(days: tuple[str, ...]) -> list[str]:
    return [c for c in (c for d in days for c in _occurred(d)) if _is_decision(c)]


def _pack(engine, query, **fields):  # type: ignore[no-untyped-def]
    return pack_for(engine, ALICE, query, as_of=AS_OF, **fields)


def _contents(pack, ids):  # type: ignore[no-untyped-def]
    by_id = {memory_id: content for content, memory_id in ids.items()}
    return [by_id[item.id] for item in pack.items]


def test_what_happened_yesterday_packs_every_memory_of_yesterday(week):
    engine, ids = week
    pack = _pack(engine, "What happened yesterday?", max_items=4)
    window = pack.retrieval_plan.query["time_window"]
    assert (window["phrase"], window["start"], window["path"]) == ("yesterday", "2026-12-02T00:00:00Z", "time-led")
    assert window["candidates"] == 3
    assert set(_occurred("2026-12-02")) <= set(_contents(pack, ids)[:3])


def test_what_did_we_decide_last_week_packs_the_weeks_decisions_and_no_other_weeks(week):
    engine, ids = week
    last_week = tuple(f"2026-11-{day}" for day in range(23, 30))
    decisions = _decisions(last_week)
    assert len(decisions) == 3
    packed = _contents(_pack(engine, "What did we decide last week?", max_items=6), ids)
    assert set(decisions) <= set(packed)
    elsewhere = [c for c in packed if _is_decision(c) and c not in decisions]
    assert elsewhere == []


def test_ten_days_ago_reads_the_day_not_the_words_ten_and_days(week):
    engine, ids = week
    pack = _pack(engine, "What happened 10 days ago?", max_items=3)
    assert pack.retrieval_plan.query["time_window"]["start"] == "2026-11-23T00:00:00Z"
    assert set(_contents(pack, ids)) == set(_occurred("2026-11-23"))


def test_wednesday_last_week_is_the_25th_and_its_decision_comes_first(week):
    engine, ids = week
    pack = _pack(engine, "What did we decide on Wednesday last week?", max_items=3)
    window = pack.retrieval_plan.query["time_window"]
    assert (window["phrase"], window["start"], window["end"]) == (
        "on Wednesday last week",
        "2026-11-25T00:00:00Z",
        "2026-11-26T00:00:00Z",
    )
    assert _contents(pack, ids)[0] == _decisions(("2026-11-25",))[0]


def test_a_topic_and_a_time_keep_the_window_as_a_preference(week):
    engine, ids = week
    pack = _pack(engine, "What did we decide about the cache in front of the rates API last week?", max_items=3)
    assert pack.retrieval_plan.query["time_window"]["path"] == "preferred"
    assert _contents(pack, ids)[0].startswith("Decision: the cache in front of the rates API is dropped")


def test_a_named_speaker_never_outranks_the_memory_that_answers(week):
    engine, ids = week
    packed = _contents(_pack(engine, "What did Marco say about the settlement window?", max_items=3), ids)
    answer = next(c for c in _occurred("2026-11-27") if c.startswith("Priya: the settlement window"))
    unrelated = next(c for c in _occurred("2026-11-26") if c.startswith("Marco: the flaky test"))
    assert answer in packed and (unrelated not in packed or packed.index(answer) < packed.index(unrelated))


def test_a_question_without_a_date_has_no_window(week):
    engine, _ = week
    pack = _pack(engine, "Who owns the settlement rewrite timeline?", max_items=3)
    assert pack.retrieval_plan.query["time_window"] is None
