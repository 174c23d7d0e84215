"""Fusion and ranking formulas, each checked against a hand computation."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from retrieval.index import IndexHit
from retrieval.ranking import (
    RRF_K,
    W_IMPORTANCE,
    W_RECENCY,
    FusedCandidate,
    fuse_convex,
    fuse_rrf,
    rank_candidates,
    recency,
)

NOW = datetime(2026, 11, 29, tzinfo=UTC)


def test_rrf_hand_computed():
    dense = [IndexHit("a", 0.9), IndexHit("b", 0.8)]
    bm25 = [IndexHit("b", 7.0), IndexHit("c", 3.0)]
    fused = {c.id: c.relevance for c in fuse_rrf(dense, bm25)}
    assert fused["a"] == pytest.approx(1 / (RRF_K + 1))
    assert fused["b"] == pytest.approx(1 / (RRF_K + 2) + 1 / (RRF_K + 1))
    assert fused["c"] == pytest.approx(1 / (RRF_K + 2))
    assert [c.id for c in fuse_rrf(dense, bm25)] == ["b", "a", "c"]


def test_rrf_weights_and_keyword_only_hits_compete():
    dense = [IndexHit("a", 0.9)]
    bm25 = [IndexHit("k", 12.0)]
    order = [c.id for c in fuse_rrf(dense, bm25, dense_weight=1.0, bm25_weight=2.0)]
    assert order == ["k", "a"]


def test_convex_hand_computed():
    dense = [IndexHit("a", 0.6), IndexHit("b", 0.2)]
    bm25 = [IndexHit("b", 4.0), IndexHit("c", 2.0)]
    scores = {c.id: c.relevance for c in fuse_convex(dense, bm25, alpha=0.5)}
    assert scores["a"] == pytest.approx(0.5 * 1.0 + 0.5 * 0.0)
    assert scores["b"] == pytest.approx(0.5 * (1.2 / 1.6) + 0.5 * 1.0)
    assert scores["c"] == pytest.approx(0.5 * 0.0 + 0.5 * 0.5)


def test_ties_break_by_id_and_inputs_are_untouched():
    dense = [IndexHit("z", 0.5), IndexHit("y", 0.5)]
    before = list(dense)
    order = [c.id for c in fuse_rrf(dense[:1], dense[1:])]
    assert order == ["y", "z"]
    assert dense == before


def test_recency_half_life():
    week_ago = NOW.timestamp() - 7 * 86400
    assert recency(week_ago, NOW, 7.0) == pytest.approx(0.5)
    assert recency(NOW.timestamp() + 3600, NOW, 7.0) == 1.0


def test_blend_hand_computed():
    a = FusedCandidate("a", 1.0, 1, 0.9, None, None, occurred_ts=NOW.timestamp(), importance=1.0)
    b = FusedCandidate("b", 0.5, 2, 0.5, None, None, occurred_ts=NOW.timestamp() - 30 * 86400, importance=0.0)
    ranked = rank_candidates([b, a], NOW, 30.0)
    assert [r.id for r in ranked] == ["a", "b"]
    assert ranked[0].score == pytest.approx(1.0)
    assert ranked[1].score == pytest.approx(0.5 * (1 - W_RECENCY - W_IMPORTANCE + W_RECENCY * 0.5))


@given(st.floats(0, 3650), st.floats(0, 3650))
def test_recency_never_rises_with_age(age1, age2):
    older, newer = max(age1, age2), min(age1, age2)
    assert recency(NOW.timestamp() - older * 86400, NOW, 30.0) <= recency(NOW.timestamp() - newer * 86400, NOW, 30.0)


def test_a_memory_in_another_script_is_scored_by_meaning_alone_when_the_encoder_crosses_scripts():
    dense = [IndexHit("zh", 0.6, script="Han"), IndexHit("en", 0.5, script="Latin")]
    bm25 = [IndexHit("en-word", 4.0, script="Latin")]
    crossing = {c.id: c.relevance for c in fuse_convex(dense, bm25, 0.7, across="Latin")}
    assert crossing["zh"] == pytest.approx(1.0)  # its dense part alone: BM25 could never have matched it
    assert crossing["en"] == pytest.approx(0.7 * 1.5 / 1.6)  # same script, no shared word: BM25's 0 counts
    english_only = {c.id: c.relevance for c in fuse_convex(dense, bm25, 0.7)}
    assert english_only["zh"] == pytest.approx(0.7)
