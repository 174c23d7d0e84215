"""Ranking metrics (nDCG@k, Recall@k, MRR@k) and TREC run files.

nDCG uses the linear gain (grade) and log2 discount of trec_eval's ndcg_cut (Järvelin & Kekäläinen
2002), so the figures agree with pytrec_eval and BEIR. Recall@k is the share of the relevant
documents found in the top k; MRR@k the reciprocal rank of the first relevant one.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Mapping, Sequence
from pathlib import Path

__all__ = ["HALVES", "half_of", "mrr_at_k", "ndcg_at_k", "recall_at_k", "write_trec_run"]

HALVES = ("a", "b")


def half_of(query_id: str) -> str:
    """The half of the questions `query_id` falls in, "a" or "b", fixed by a hash of the id: a change is
    chosen on one half and reported on the other, so that a gain tuned to the questions shows."""
    return HALVES[hashlib.sha256(query_id.encode()).digest()[0] & 1]


def ndcg_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(rank + 2) for rank, doc in enumerate(ranking[:k]))
    ideal = sorted(relevant.values(), reverse=True)[:k]
    idcg = sum(grade / math.log2(rank + 2) for rank, grade in enumerate(ideal))
    return dcg / idcg if idcg > 0 else 0.0


def recall_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(wanted & set(ranking[:k])) / len(wanted) if wanted else 0.0


def mrr_at_k(ranking: Sequence[str], relevant: Mapping[str, int], k: int) -> float:
    for rank, doc in enumerate(ranking[:k]):
        if relevant.get(doc, 0) > 0:
            return 1.0 / (rank + 1)
    return 0.0


def write_trec_run(path: Path, runs: Mapping[str, Sequence[tuple[str, float]]], tag: str) -> None:
    """`qid Q0 docid rank score tag` lines, the format trec_eval reads."""
    with path.open("w", encoding="utf-8") as handle:
        for query_id, ranked in runs.items():
            for rank, (doc_id, score) in enumerate(ranked, start=1):
                handle.write(f"{query_id} Q0 {doc_id} {rank} {score:.6f} {tag}\n")
