"""BM25's term statistics stay inside the spaces a caller reads (issue 36, item 1).

IDF was counted over the whole index, and `retrieval_plan` shows each item's raw `bm25_score`: a
tenant that stored "guess ALPHA-005" and recalled "ALPHA-005" with `path_filter` on it saw its score
drop when another owner's memory held ALPHA-005 (11.58 against 13.22), so any key that could write
could test whether a guessed identifier was in anyone's memories. Now nothing a caller receives
moves with memories it cannot read, nor with memories forgotten for good.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, remember
from retrieval.domain import bm25_text
from retrieval.encoding import BM25_AVG_LEN, BM25_B, BM25_K1
from retrieval.index import IndexFilter
from retrieval.usecases import forget_memory
from tests.support import BACKENDS, pack_for

ALICE = Principal(owner_id="alice")
MALLORY = Principal(owner_id="mallory")
ALICE_NOTES = [
    ("guess ALPHA-005", "alice/guesses"),
    ("ALPHA-905 shipped to the staging rack on Monday", "alice/ops"),
    ("the staging rack needs a new switch", "alice/ops"),
]
FOREIGN_NOTES = [
    "ALPHA-005 is the ticket for the payments outage",
    "remember ALPHA-005 and ALPHA-005 again",
    "guess what: ALPHA-005 was closed",
]


def _seen(engine: MemoryEngine) -> dict[str, Any]:
    """What alice receives for her recall: the items with their scores, the text, the whole plan."""
    pack = pack_for(engine, ALICE, "ALPHA-005", path_filter="alice/guesses")
    return {
        "items": [(item.id, item.score) for item in pack.items],
        "context_text": pack.context_text,
        "retrieval_plan": dataclasses.asdict(pack.retrieval_plan),
    }


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_recall_receives_the_same_whether_another_owner_holds_the_term_or_forgot_it(
    make_engine, real_embedder, clock, backend
):
    engine = make_engine(real_embedder, backend, clock=clock)
    for content, path in ALICE_NOTES:
        remember(engine, ALICE, RememberRequest(content=content, path=path))
    alone = _seen(engine)
    [item] = alone["retrieval_plan"]["items"]
    assert item["bm25_score"] > 0  # the recall did match on BM25

    foreign = [
        remember(engine, MALLORY, RememberRequest(content=content, path="mallory/notes")).memory.id
        for content in FOREIGN_NOTES
    ]
    assert _seen(engine) == alone
    for memory_id in foreign:
        forget_memory(engine, MALLORY, memory_id)
    assert _seen(engine) == alone


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_bm25_score_is_the_formula_over_the_readers_spaces(make_engine, fake_embedder, clock, backend):
    """The hand-computed BM25 of base.py VectorIndex.search, with N and n_t counted over alice's own
    memories (and her team's when she reads it): what a single-tenant store scored before."""
    engine = make_engine(fake_embedder, backend, clock=clock)
    team = Principal(owner_id="alice", team_ids=("core",))
    mine = [remember(engine, ALICE, RememberRequest(content=c, path=p)).memory for c, p in ALICE_NOTES]
    shared = remember(engine, team, RememberRequest(content="ALPHA-005 staging rack", path="t", team_id="core"))
    for content in FOREIGN_NOTES:
        remember(engine, MALLORY, RememberRequest(content=content, path="mallory/notes"))
    query = engine.sparse.query("ALPHA-005 staging rack")

    def check(spaces: tuple[str, ...], corpus: list[Any]) -> None:
        _, hits = engine.index.search(None, query, IndexFilter(visibility=spaces), 0, 10)
        expected = _bm25(engine, query.indices, corpus)
        assert {h.id: pytest.approx(h.score, rel=1e-5) for h in hits} == {
            memory_id: score for memory_id, score in expected.items() if score > 0
        }

    check(("owner:alice",), mine)
    check(("owner:alice", "team:core"), [*mine, shared.memory])
    forget_memory(engine, ALICE, mine[2].id)  # a memory forgotten for good stops counting at once
    check(("owner:alice",), mine[:2])


def _bm25(engine: MemoryEngine, terms: tuple[int, ...], corpus: list[Any]) -> dict[str, float]:
    """BM25 by hand: idf(t) = ln(1 + (N - n_t + 0.5) / (n_t + 0.5)) times the tf part
    tf * (k1 + 1) / (tf + k1 * (1 - b + b * |d| / avgdl)), which the document vector holds."""
    vectors = {m.id: engine.sparse.document(bm25_text(m), m.semantic_key) for m in corpus}
    holding = {t: sum(1 for v in vectors.values() if t in v.indices) for t in terms}
    idf = {t: math.log(1 + (len(corpus) - n + 0.5) / (n + 0.5)) for t, n in holding.items()}
    assert (BM25_K1, BM25_B, BM25_AVG_LEN) == (1.2, 0.75, 64.0)  # the constants the tf parts were made with
    return {
        memory_id: sum(idf[t] * value for t, value in zip(v.indices, v.values, strict=True) if t in idf)
        for memory_id, v in vectors.items()
    }
