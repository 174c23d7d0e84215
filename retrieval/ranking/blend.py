"""The final ranking: fused relevance, gently blended with recency and importance.

    final = relevance * (1 - W_RECENCY - W_IMPORTANCE + W_RECENCY * recency + W_IMPORTANCE * importance)
    recency = 0.5 ** (age_days / half_life_days)

Generative Agents (Park et al., UIST 2023) score memories by relevance, recency (exponential decay)
and importance. Here relevance dominates: recency and importance can move a memory by at most 20 %,
so an old but exactly matching memory still beats a fresh, vaguely related one. Ties break by id.
Recency and importance come from the index payload, so ranking needs no read of the records.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from .fusion import FusedCandidate

__all__ = ["W_IMPORTANCE", "W_RECENCY", "Ranked", "rank_candidates", "recency"]

W_RECENCY = 0.1
W_IMPORTANCE = 0.1


@dataclass(frozen=True, slots=True)
class Ranked:
    candidate: FusedCandidate
    relevance: float  # fused relevance scaled to [0, 1] by the best candidate of the query
    recency: float
    score: float

    @property
    def id(self) -> str:
        return self.candidate.id

    def components(self) -> dict[str, float | int | None]:
        c = self.candidate
        return {
            "dense_rank": c.dense_rank,
            "dense_score": c.dense_score,
            "bm25_rank": c.bm25_rank,
            "bm25_score": c.bm25_score,
            "fused": c.relevance,
            "relevance": self.relevance,
            "recency": self.recency,
            "importance": c.importance,
            "score": self.score,
        }


def recency(occurred_ts: float, now: datetime, half_life_days: float) -> float:
    """0.5 ** (age in days / half-life); 1 for a memory from now or the future."""
    age_days = max(0.0, (now.timestamp() - occurred_ts) / 86400.0)
    return float(0.5 ** (age_days / half_life_days))


def rank_candidates(candidates: Sequence[FusedCandidate], now: datetime, half_life_days: float) -> list[Ranked]:
    """Blend every candidate's relevance with its recency and importance; best first, ties by id."""
    best = max((c.relevance for c in candidates), default=0.0)
    ranked = []
    for candidate in candidates:
        relevance = candidate.relevance / best if best > 0 else 0.0
        fresh = recency(candidate.occurred_ts, now, half_life_days)
        factor = 1.0 - W_RECENCY - W_IMPORTANCE + W_RECENCY * fresh + W_IMPORTANCE * candidate.importance
        ranked.append(Ranked(candidate, relevance, fresh, relevance * factor))
    ranked.sort(key=lambda r: (-r.score, r.id))
    return ranked
