"""Questions led by their time, asked as an agent asks them: through REST and MCP, on a fortnight of an
engineering agent's notes (tests/data/week_of_notes.json: decisions, ops notes, two speakers, and one
owner's weeks in Chinese), all asked on Thursday 2026-12-03. The real model, SQLite and Qdrant Edge."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.support import InProcess, in_process

DATA = json.loads((Path(__file__).parents[2] / "data" / "week_of_notes.json").read_text())
AS_OF = DATA["as_of"]
CHINESE = DATA["chinese_week"]


@pytest.fixture(scope="module")
def fortnight(tmp_path_factory, real_embedder) -> Iterator[tuple[InProcess, dict[str, dict[str, str]], dict[str, str]]]:  # type: ignore[no-untyped-def]
    """The notes written through REST by their owners; the app, each owner's headers, and each memory's
    content by id."""
    with in_process(tmp_path_factory.mktemp("fortnight") / "data", embedder=real_embedder) as app:
        headers = {"alice": app.headers("alice"), CHINESE["owner"]: app.headers(CHINESE["owner"])}
        contents = {}
        for owner, notes in (("alice", DATA["memories"]), (CHINESE["owner"], CHINESE["memories"])):
            for note in notes:
                created = app.client.post("/api/v1/remember", headers=headers[owner], json=note)
                assert created.status_code == 201, created.text
                contents[created.json()["id"]] = note["content"]
        yield app, headers, contents


def _notes(owner: str) -> list[dict[str, Any]]:
    return list(CHINESE["memories"] if owner == CHINESE["owner"] else DATA["memories"])


def _occurred(owner: str, *days: str) -> list[str]:
    return [n["content"] for n in _notes(owner) if n["occurred_at"][:10] in days]


def _decided(content: str) -> bool:
    return any(word in content.lower() for word in ("decid", "decision", "决定"))


def _day_of(owner: str, content: str) -> str:
    return next(n["occurred_at"][:10] for n in _notes(owner) if n["content"] == content)


LAST_WEEK = tuple(f"2026-11-{day}" for day in range(23, 30))
THIS_WEEK = ("2026-11-30", "2026-12-01", "2026-12-02", "2026-12-03")


def _asked(fortnight, owner: str, query: str, max_items: int) -> tuple[list[str], list[str], dict[str, Any]]:  # type: ignore[no-untyped-def]
    """What REST and MCP pack for `query` (their contents, best first) and REST's reading of it."""
    app, headers, contents = fortnight
    body = {"query": query, "max_items": max_items, "as_of": AS_OF}
    pack = app.client.post("/v1/recall/context", headers=headers[owner], json=body)
    assert pack.status_code == 200, pack.text
    failed, text = app.mcp(headers[owner], "recall_context", body)
    assert not failed, text
    by_mcp = [contents[memory_id] for memory_id in re.findall(r"^Reference: (\S+)", text, re.MULTILINE)]
    by_rest = [contents[item["id"]] for item in pack.json()["items"]]
    return by_rest, by_mcp, pack.json()["retrieval_plan"]["query"]


def test_yesterday_packs_every_note_of_yesterday(fortnight):
    for owner, query in (("alice", "What happened yesterday?"), (CHINESE["owner"], "昨天发生了什么？")):
        yesterday = _occurred(owner, "2026-12-02")
        rest, mcp, reading = _asked(fortnight, owner, query, 4)
        assert reading["time_window"]["path"] == "time-led"
        assert set(rest[: len(yesterday)]) == set(mcp[: len(yesterday)]) == set(yesterday)


def test_last_weeks_decisions_all_fit_in_six_and_none_from_another_week(fortnight):
    for owner, query in (("alice", "What did we decide last week?"), (CHINESE["owner"], "上周我们决定了什么？")):
        decisions = [c for c in _occurred(owner, *LAST_WEEK) if _decided(c)]
        assert len(decisions) == 3
        for packed in _asked(fortnight, owner, query, 6)[:2]:
            assert set(decisions) <= set(packed)
            assert [c for c in packed if _decided(c) and c not in decisions] == []


def test_wednesday_last_week_leads_with_that_day(fortnight):
    for owner, query, phrase in (
        ("alice", "What did we decide on Wednesday last week?", "on Wednesday last week"),
        (CHINESE["owner"], "上周三做了什么决定？", "上周三"),
    ):
        rest, mcp, reading = _asked(fortnight, owner, query, 3)
        assert (reading["time_window"]["phrase"], reading["time_window"]["start"]) == (phrase, "2026-11-25T00:00:00Z")
        assert _day_of(owner, rest[0]) == _day_of(owner, mcp[0]) == "2026-11-25"


def test_recent_decisions_lead_with_this_weeks(fortnight):
    for owner, query, word in (
        ("alice", "recent decisions on the payments project", "recent"),
        (CHINESE["owner"], "最近的决定", "最近的"),
    ):
        rest, mcp, reading = _asked(fortnight, owner, query, 4)
        assert (reading["recency"], reading["time_window"]) == (word, None)
        for packed in (rest, mcp):
            assert _decided(packed[0]) and _day_of(owner, packed[0]) in THIS_WEEK


def test_the_marco_question_leads_with_the_settlement_note(fortnight):
    rest, mcp, reading = _asked(fortnight, "alice", "What did Marco say about the settlement window?", 3)
    assert reading["speaker"] == "Marco"
    assert rest[0] == mcp[0] and rest[0].startswith("Priya: the settlement window must close")


@pytest.mark.parametrize(
    ("query", "phrase", "start", "end"),
    [
        ("两周前决定了什么？", "两周前", "2026-11-16T00:00:00Z", "2026-11-23T00:00:00Z"),
        ("这个月初发生了什么？", "这个月初", "2026-12-01T00:00:00Z", "2026-12-04T00:00:00Z"),
        ("上个月的决定", "上个月", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"),
    ],
)
def test_the_chinese_phrases_resolve_and_their_window_leads(fortnight, query, phrase, start, end):
    rest, mcp, reading = _asked(fortnight, CHINESE["owner"], query, 3)
    window = reading["time_window"]
    assert (window["phrase"], window["start"], window["end"], window["path"]) == (phrase, start, end, "time-led")
    for packed in (rest, mcp):
        assert start[:10] <= _day_of(CHINESE["owner"], packed[0]) < end[:10]
