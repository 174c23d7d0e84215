"""Search says each thing once and lists it in the order of the scores it shows."""

from __future__ import annotations

from retrieval import Principal, RememberRequest, remember
from tests.support import search_for

ALICE = Principal.local("alice")


def test_search_lists_a_memory_and_its_copy_once_in_score_order(make_engine, real_embedder):
    engine = make_engine(real_embedder)
    fact = "Refunds for zero-decimal currencies use the ISO 4217 minor-units table."
    remember(engine, ALICE, RememberRequest(content=fact, path="bugs/PAY-2291"))
    remember(engine, ALICE, RememberRequest(content=fact, path="facts", memory_type="semantic"))  # a promoted copy
    for text in (
        "Refunds are approved by the payments lead.",
        "The currency table lives in refunds/amount.py.",
        "Zero-decimal currencies such as JPY have no minor unit.",
    ):
        remember(engine, ALICE, RememberRequest(content=text, path="notes"))
    found = search_for(engine, ALICE, "refunds zero-decimal currencies minor units", min_score=0.0).results
    contents = [r.content for r in found]
    assert contents.count(fact) == 1 and len(found) >= 3
    scores = [r.score for r in found]
    assert scores == sorted(scores, reverse=True), scores
