"""Whether a question is led by its time, and the words left for both channels to search."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.ranking import FusedCandidate, Ranked, lead_with_window, newest_first, query_window, read_time

ASKED = datetime(2026, 12, 3, 10, tzinfo=UTC)


@pytest.mark.parametrize(
    ("query", "words", "path"),
    [
        ("What happened yesterday?", "What happened ?", "time-led"),
        ("What did we decide last week?", "What did we decide ?", "time-led"),
        ("What happened 10 days ago?", "What happened ?", "time-led"),
        ("What did we decide on Wednesday last week?", "What did we decide ?", "time-led"),
        ("上周三我们决定了什么？", "我们决定了什么？", "time-led"),
        ("anything from March?", "anything from March?", "time-led"),  # a calendar date stays searched
        (
            "What did Marco say about the settlement window last week?",
            "What did Marco say about the settlement window ?",
            "preferred",
        ),
        (
            "What did we discuss about rates on 7 May 2023?",
            "What did we discuss about rates on 7 May 2023?",
            "preferred",
        ),
        ("上周关于结算窗口的讨论", "关于结算窗口的讨论", "preferred"),
        ("Who owns the settlement rewrite?", "Who owns the settlement rewrite?", None),
    ],
)
def test_a_question_is_time_led_when_its_date_is_most_of_what_it_says(query, words, path):
    asked = read_time(query, ASKED)
    assert (asked.words, asked.path) == (words, path)


def _ranked(memory_id: str, score: float, day: str) -> Ranked:
    ts = datetime.fromisoformat(f"{day}T12:00:00+00:00").timestamp()
    return Ranked(FusedCandidate(memory_id, score, 1, 0.5, None, None, ts), score, 1.0, score)


def test_the_window_leads_each_part_in_its_own_order():
    window = query_window("yesterday", ASKED)
    assert window is not None
    ranked = [_ranked("a", 0.9, "2026-11-01"), _ranked("b", 0.5, "2026-12-02"), _ranked("c", 0.4, "2026-12-02")]
    assert [r.id for r in lead_with_window(ranked, window)] == ["b", "c", "a"]


@pytest.mark.parametrize(
    ("query", "word"),
    [
        ("recent decisions on the payments project", "recent"),
        ("What is the latest on the settlement rewrite?", "latest"),
        ("What is Dana working on these days?", "these days"),
        ("Who currently owns the ledger?", "currently"),
        ("最近的决定有哪些？", "最近的"),
        ("Who owns the settlement rewrite?", None),
        ("What did we decide recently about rates last week?", None),  # a window says which time already
    ],
)
def test_a_question_without_a_date_may_ask_for_what_is_recent(query, word):
    assert read_time(query, ASKED).recent == word


@pytest.mark.parametrize(
    ("query", "words"),
    [
        # An adverb says when, not what: searched, "recently" lifted a turn that asks "Is that recent?"
        # among the answers (LoCoMo conv-26), and newest first then put it ahead of the answer.
        ("What workshop did Caroline attend recently?", "What workshop did Caroline attend ?"),
        ("Who currently owns the ledger?", "Who owns the ledger?"),
        ("What is Dana working on these days?", "What is Dana working on ?"),
        ("What have we decided lately", "What have we decided"),
        # An adjective may name the topic, and stays.
        ("recent decisions on the payments project", "recent decisions on the payments project"),
        ("Who is the current owner of the ledger?", "Who is the current owner of the ledger?"),
        ("recently", "recently"),  # nothing else to search for
    ],
)
def test_a_word_that_only_says_when_leaves_the_words_searched(query, words):
    assert read_time(query, ASKED).words == words


def test_the_newest_of_the_answers_lead_and_a_fresh_note_that_does_not_answer_stays_behind():
    ranked = [
        _ranked("old-answer", 1.0, "2026-11-02"),
        _ranked("new-answer", 0.95, "2026-12-01"),
        _ranked("mid-answer", 0.92, "2026-11-20"),
        _ranked("fresh-other", 0.5, "2026-12-03"),
    ]
    assert [r.id for r in newest_first(ranked)] == ["new-answer", "mid-answer", "old-answer", "fresh-other"]
    assert [r.id for r in newest_first(ranked, share=1.0)] == ["old-answer", "new-answer", "mid-answer", "fresh-other"]
    assert newest_first([]) == []
