"""A question about several events spreads its ranking over the sessions that match."""

from __future__ import annotations

import pytest

from retrieval.ranking import FusedCandidate, Ranked, asks_several_events, spread_sessions


def _ranked(memory_id: str, score: float, session: str | None) -> Ranked:
    candidate = FusedCandidate(memory_id, score, 1, 0.5, None, None, session=session)
    return Ranked(candidate, score, 1.0, score)


@pytest.mark.parametrize(
    ("query", "several"),
    [
        ("Which event did I participate in first, the volleyball league or the charity 5K?", True),
        ("What is the order of the three sports events I participated in during the past month?", True),
        ("How many road trips did I take?", True),
        ("How much money did I raise for charity in total?", True),
        ("Where did I buy my new binoculars?", False),
        ("What did Caroline paint?", False),
    ],
)
def test_what_asks_about_several_events(query, several):
    assert asks_several_events(query) is several


def test_a_sessions_further_turns_count_for_less_and_its_best_keeps_its_score():
    ranked = [_ranked("s1-a", 1.0, "s1"), _ranked("s1-b", 0.9, "s1"), _ranked("s1-c", 0.8, "s1")]
    ranked += [_ranked("s2-a", 0.6, "s2"), _ranked("none", 0.55, None)]
    spread = spread_sessions(ranked, 0.5)
    assert [r.id for r in spread] == ["s1-a", "s2-a", "none", "s1-b", "s1-c"]
    assert [r.score for r in spread] == pytest.approx([1.0, 0.6, 0.55, 0.45, 0.2])
    assert spread_sessions(ranked, 1.0) == ranked
