"""What a query says besides its words: the time it names (resolved against when it is asked) and the
speaker it asks about, and the priors both lend the fused relevance."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.ranking import (
    DATE_BOOST,
    SPEAKER_PRIOR,
    FusedCandidate,
    addressed_speaker,
    query_window,
    with_priors,
)

ASKED = datetime(2023, 5, 20, 15, 30, tzinfo=UTC)  # a Saturday


def _day(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did Caroline do last Saturday?", "2023-05-13", "2023-05-14"),
        ("Did I go hiking yesterday?", "2023-05-19", "2023-05-20"),
        ("What did I buy in May?", "2023-05-01", "2023-06-01"),
        ("what happened two weeks ago", "2023-05-03", "2023-05-10"),
        ("What did we discuss on 7 May 2023?", "2023-05-07", "2023-05-08"),
        ("what did I cook last week", "2023-05-08", "2023-05-15"),  # the calendar week before
        ("what did I do last month", "2023-04-01", "2023-05-01"),
        ("where did we travel in 2022", "2022-01-01", "2023-01-01"),
        ("How many videos have I watched in the past few weeks?", "2023-04-29", "2023-05-21"),
        ("the concerts I went to in the past two months", "2023-03-21", "2023-05-21"),
        ("the races I ran during the past month", "2023-04-20", "2023-05-21"),
        ("what did we ship on 5/12", "2023-05-12", "2023-05-13"),
    ],
)
def test_a_date_phrase_resolves_to_a_window_as_wide_as_it_is_precise(query, start, end):
    window = query_window(query, ASKED)
    assert window is not None
    assert (_day(window.start), _day(window.end)) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "When did Caroline go to the LGBTQ support group?",
        "I may go to the gym",
        "we should order 3 pizzas",
        "How many weeks ago did I attend the sale?",
        "How many days ago did I meet Emma?",
        "why did release 4.2 fail (12)",  # a bare number is no day of this month
        "what caused incident 1234",  # nor a year
        "purity rate of up to 50%",
    ],
)
def test_a_query_without_a_date_has_no_window(query):
    assert query_window(query, ASKED) is None


def test_the_window_moves_with_the_time_of_asking():
    later = query_window("what did I do yesterday", datetime(2024, 1, 1, 9, tzinfo=UTC))
    assert later is not None and _day(later.start) == "2023-12-31"


@pytest.mark.parametrize(
    ("query", "speakers", "expected", "without_name"),
    [
        ("What did Caroline paint?", {"Caroline", "Melanie"}, "Caroline", "What did paint?"),
        ("What is Caroline's job?", {"Caroline", "Melanie"}, "Caroline", "What is job?"),
        ("Did caroline and Melanie meet?", {"Caroline", "Melanie"}, None, None),
        ("What did they talk about?", {"Caroline", "Melanie"}, None, None),
        ("What did I buy for my sister?", {"user", "assistant"}, "user", "What did I buy for my sister?"),
        ("Can you remind me which hotel you recommended?", {"user", "assistant"}, "assistant", None),
        ("What did I buy?", {"Caroline", "Melanie"}, None, None),
        ("What is the capital of France?", {"user", "assistant"}, None, None),
    ],
)
def test_the_speaker_a_query_asks_about(query, speakers, expected, without_name):
    found = addressed_speaker(query, speakers)
    assert (found.speaker if found else None) == expected
    if found is not None and without_name is not None:
        assert found.query == without_name


def _candidate(memory_id: str, relevance: float, speaker: str | None, day: str = "2023-05-01") -> FusedCandidate:
    ts = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    return FusedCandidate(memory_id, relevance, 1, 0.5, None, None, ts, 0.5, speaker)


def test_priors_scale_relevance_and_reorder_but_never_drop():
    candidates = [
        _candidate("a", 1.00, "Melanie"),
        _candidate("b", 0.95, "Caroline"),
        _candidate("c", 0.80, None, day="2023-05-13"),
    ]
    window = query_window("what did Caroline do last Saturday", ASKED)
    weighed = with_priors(candidates, "Caroline", window)
    assert [c.id for c in weighed] == ["c", "b", "a"]
    by_id = {c.id: c.relevance for c in weighed}
    assert by_id["a"] == pytest.approx(1.0 * SPEAKER_PRIOR)
    assert by_id["b"] == pytest.approx(0.95)
    assert by_id["c"] == pytest.approx(0.80 * (1 + DATE_BOOST))
    assert with_priors(candidates, None, None) == candidates
