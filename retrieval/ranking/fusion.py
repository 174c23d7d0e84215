"""Pure functions that fuse the dense and BM25 rankings into one relevance score per candidate.

Candidates are the union of both channels, so a memory that only one channel found still competes
(a keyword-only hit such as a ticket number can win). Two fusions are offered:

- `rrf`: reciprocal rank fusion, sum of w / (k + rank), k = 60 (Cormack, Clarke & Buettcher, SIGIR 2009).
- `convex`: a convex combination of normalised scores, alpha * dense + (1 - alpha) * bm25, with the
  dense cosine normalised by its theoretical range and BM25 by the best BM25 score of the query
  ("TM2C2" in Bruch, Gai & Ingber, "An Analysis of Fusion Functions for Hybrid Retrieval", TOIS 2023,
  who found it more effective and more sample-efficient than RRF).
A candidate missing from a channel scores 0 in it. Ties break by id, so results are deterministic.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ..domain import NO_SCRIPT
from ..index import IndexHit

__all__ = ["RRF_K", "FusedCandidate", "fuse_convex", "fuse_rrf"]

RRF_K = 60  # Cormack et al. 2009


@dataclass(frozen=True, slots=True)
class FusedCandidate:
    id: str
    relevance: float
    dense_rank: int | None
    dense_score: float | None
    bm25_rank: int | None
    bm25_score: float | None
    occurred_ts: float = 0.0
    importance: float = 0.5
    speaker: str | None = None
    semantic_key: str | None = None  # as IndexHit's: "" none, None not in the index's payload
    script: str | None = None  # the memory's writing system, None where the payload does not hold it
    session: str | None = None  # its session_id, "" none, None where the payload does not hold it


def _channels(dense: Sequence[IndexHit], bm25: Sequence[IndexHit]) -> dict[str, list]:  # type: ignore[type-arg]
    """id -> [dense rank, dense score, bm25 rank, bm25 score, occurred_ts, importance, speaker, key, script,
    session]."""
    table: dict[str, list] = {}  # type: ignore[type-arg]
    for rank, hit in enumerate(dense, start=1):
        table.setdefault(hit.id, _row(hit))[0:2] = [rank, hit.score]
    for rank, hit in enumerate(bm25, start=1):
        table.setdefault(hit.id, _row(hit))[2:4] = [rank, hit.score]
    return table


def _row(hit: IndexHit) -> list:  # type: ignore[type-arg]
    return [
        None,
        None,
        None,
        None,
        hit.occurred_ts,
        hit.importance,
        hit.speaker,
        hit.semantic_key,
        hit.script,
        hit.session,
    ]


def _ranked(table: dict[str, list], scores: dict[str, float]) -> list[FusedCandidate]:  # type: ignore[type-arg]
    order = sorted(scores, key=lambda memory_id: (-scores[memory_id], memory_id))
    return [FusedCandidate(i, scores[i], *table[i]) for i in order]


def fuse_rrf(
    dense: Sequence[IndexHit],
    bm25: Sequence[IndexHit],
    dense_weight: float = 1.0,
    bm25_weight: float = 1.0,
    k: int = RRF_K,
) -> list[FusedCandidate]:
    """Weighted reciprocal rank fusion over the union of both channels, best first."""
    table = _channels(dense, bm25)
    scores = {}
    for memory_id, (d_rank, _, b_rank, *_) in table.items():
        score = 0.0
        if d_rank is not None:
            score += dense_weight / (k + d_rank)
        if b_rank is not None:
            score += bm25_weight / (k + b_rank)
        scores[memory_id] = score
    return _ranked(table, scores)


def _other_script(script: str | None, across: str | None) -> bool:
    return script is not None and across is not None and NO_SCRIPT not in (script, across) and script != across


def fuse_convex(
    dense: Sequence[IndexHit],
    bm25: Sequence[IndexHit],
    alpha: float,
    dense_fill: Mapping[str, float] | None = None,
    across: str | None = None,
) -> list[FusedCandidate]:
    """alpha * dense_norm + (1 - alpha) * bm25_norm over the union, best first.

    Each channel is scaled from its theoretical minimum (cosine -1, BM25 0) to the best score it
    returned for this query, so both parts lie in [0, 1] and the best of each channel scores 1.
    `dense_fill` gives the exact cosine of candidates only BM25 found; without it they would score
    the dense minimum and a keyword-only hit could hardly win. A candidate only the dense channel
    found scores 0 in BM25, which is close: it ranked below BM25's cut.

    `across` is the query's writing system when the dense channel maps languages into one space
    (XMEMO_ENCODER=multilingual): a memory written in another script shares no word with the query,
    so BM25 cannot vote on it at all, and its absence says nothing. Such a memory, when BM25 did not
    find it, is scored by its dense part alone (the weights renormalised over the channel that can
    vote) instead of losing the BM25 share to a channel that was never able to match it.
    """
    table = _channels(dense, bm25)
    for memory_id, cosine in (dense_fill or {}).items():
        if memory_id in table and table[memory_id][1] is None:
            table[memory_id][1] = cosine
    best_dense = max((hit.score for hit in dense), default=0.0)
    best_bm25 = max((hit.score for hit in bm25), default=0.0)
    scores = {}
    for memory_id, (_, d_score, _, b_score, *_, script, _) in table.items():
        dense_part = (d_score + 1.0) / (best_dense + 1.0) if d_score is not None and best_dense > -1.0 else 0.0
        bm25_part = b_score / best_bm25 if b_score is not None and best_bm25 > 0 else 0.0
        if b_score is None and _other_script(script, across):
            scores[memory_id] = dense_part
        else:
            scores[memory_id] = alpha * dense_part + (1.0 - alpha) * bm25_part
    return _ranked(table, scores)
