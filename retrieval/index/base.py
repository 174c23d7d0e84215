"""What every vector index backend offers, and the one place that maps memories to index payloads."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Protocol

import numpy as np

from ..domain import Memory, MemoryStatus, ReadFilters, script_of
from ..encoding import SparseVector

__all__ = [
    "DENSE",
    "GRAPH_THRESHOLD_KIB",
    "KEYWORD_FIELDS",
    "LAYOUTS",
    "RANKING_FIELDS",
    "RESCORED",
    "SEARCH_EF",
    "SPARSE",
    "UNITS",
    "IndexFilter",
    "IndexHit",
    "IndexPoint",
    "VectorIndex",
    "graph_threshold_kib",
    "payload_for",
    "point_for",
]

DENSE = "dense"
SPARSE = "bm25"
UNITS = "units"

# How the dense side is laid out. "rescore" (what a new index is made with): an HNSW graph over one
# vector per memory, its whole text (DENSE), and the multivector [whole, *units] (UNITS) stored without
# a graph of its own, used only to rescore by MaxSim the candidates the whole-text search returns,
# RESCORED times as many as are asked for: Qdrant's own pattern for late interaction. "multivector"
# (until this round): DENSE is the multivector itself, and every unit is a vector of the graph search,
# which made each search dearer (docs/evaluation.md). An index keeps the layout it was made with until
# it is rebuilt (`xmemo reindex`). Both score a memory by its best unit's cosine.
LAYOUTS = ("rescore", "multivector")
RESCORED = 4


@dataclass(frozen=True, slots=True)
class IndexPoint:
    """A memory in the index: its whole-text vector, the vectors of its sentence units (none for a
    single sentence), its BM25 vector and its payload. The dense side keeps [whole, *units] as one
    multivector compared by MaxSim, so a single query vector scores a memory by its best unit
    (LAYOUTS: how the whole-text vector and the multivector are searched)."""

    id: str
    dense: np.ndarray
    sparse: SparseVector
    payload: dict[str, Any]
    units: np.ndarray | None = None

    def dense_matrix(self) -> list[list[float]]:
        """The stored multivector: the whole-text vector first, then the units."""
        rows = [self.dense] if self.units is None or not len(self.units) else [self.dense, *self.units]
        return [row.tolist() for row in rows]


@dataclass(frozen=True, slots=True)
class IndexHit:
    """A point a search found, with the payload fields the ranking reads. `semantic_key` is "" for a
    memory without one, and None for a point written before the payload held it (the record knows)."""

    id: str
    score: float
    occurred_ts: float = 0.0
    importance: float = 0.5
    speaker: str | None = None
    semantic_key: str | None = None
    script: str | None = None  # the writing system of the text (domain/writing_systems.py); None: not stored
    session: str | None = None  # the memory's session_id ("" none; None: not stored)


RANKING_FIELDS = ["occurred_ts", "importance", "speaker", "semantic_key", "script", "session"]

# Candidates a dense search keeps while it walks the HNSW graph (the engine's default is the result's
# size, here the candidate depth): at 200,000 points that walk missed about 6 % of the true top 10,
# 128 recovers most of it for a few percent more search time (docs/evaluation.md, "What Qdrant
# Edge's settings change"). Below the full-scan threshold a search is exact anyway.
SEARCH_EF = 128

# Qdrant gives a segment its HNSW graph once its vectors pass `indexing_threshold`, and a filtered search
# walks that graph once the vectors its filter matches pass `full_scan_threshold`; both are KiB of
# vectors, 10,000 by default. Counted in bytes, float16 vectors moved both switches to twice as many
# memories: at 10,000 memories (384 dimensions, 7.5 MiB) a shard kept no graph, and every search scanned
# each vector through its filter, 1.9-2.8 ms against 0.6-0.7 ms walking the graph (docs/evaluation.md,
# "A graph at the same size whatever the datatype"). The thresholds are set in float32's terms, so that
# the switch falls at the same number of vectors (6,666 at 384 dimensions) whatever the datatype.
GRAPH_THRESHOLD_KIB = 10_000  # for float32 vectors


def graph_threshold_kib(datatype: str) -> int:
    """Both thresholds, in KiB of vectors of `datatype`, that fall at GRAPH_THRESHOLD_KIB's float32 vectors."""
    return GRAPH_THRESHOLD_KIB * np.dtype(datatype).itemsize // np.dtype(np.float32).itemsize


@dataclass(frozen=True, slots=True)
class IndexFilter:
    """A read filter in the index's terms: any of `visibility`, every other field when set."""

    visibility: tuple[str, ...]
    statuses: tuple[str, ...] = (MemoryStatus.ACTIVE.value,)
    bucket: str | None = None
    scope: str | None = None
    path: str | None = None
    memory_type: str | None = None
    ids: tuple[str, ...] | None = None

    @classmethod
    def from_read_filters(cls, filters: ReadFilters, ids: Sequence[str] | None = None) -> IndexFilter:
        """Translate; a path pattern with `%` must come resolved as `ids` (see recall)."""
        if filters.team_id is not None:
            visibility: tuple[str, ...] = (team_key(filters.team_id),)
        else:
            visibility = (owner_key(filters.owner_id), *(team_key(t) for t in filters.team_ids))
        exact_path = filters.path_pattern.exact if filters.path_pattern else None
        return cls(
            visibility=visibility,
            statuses=tuple(s.value for s in filters.statuses),
            bucket=filters.bucket,
            scope=filters.scope,
            path=exact_path,
            memory_type=filters.memory_type.value if filters.memory_type else None,
            ids=tuple(ids) if ids is not None else None,
        )


def owner_key(owner_id: str) -> str:
    return f"owner:{owner_id}"


def team_key(team_id: str) -> str:
    return f"team:{team_id}"


def payload_for(memory: Memory) -> dict[str, Any]:
    """The payload the index keeps: only what filters and ranking need, never the content."""
    return {
        "owner_id": memory.owner_id,
        "visibility": team_key(memory.team_id) if memory.team_id is not None else owner_key(memory.owner_id),
        "bucket": memory.bucket,
        "scope": memory.scope,
        "path": memory.path,
        "type": memory.type.value,
        "status": memory.status.value,
        "version": memory.version,
        "importance": memory.importance,
        "occurred_ts": datetime.fromisoformat(memory.occurred_at.replace("Z", "+00:00")).timestamp(),
        "speaker": memory.speaker,
        "semantic_key": memory.semantic_key or "",
        "script": script_of(memory.content),
        "session": memory.session_id or "",
    }


def point_for(memory: Memory, dense: np.ndarray, sparse: SparseVector, units: np.ndarray | None = None) -> IndexPoint:
    return IndexPoint(id=memory.id, dense=dense, sparse=sparse, payload=payload_for(memory), units=units)


KEYWORD_FIELDS = ("owner_id", "visibility", "bucket", "scope", "path", "type", "status")


class VectorIndex(Protocol):
    """Dense (cosine, a multivector compared by MaxSim) plus BM25 sparse (IDF modifier, counted over
    the spaces a search reads) vectors with filterable payloads."""

    backend: str

    def upsert(self, points: Sequence[IndexPoint]) -> None: ...

    def set_payloads(self, payloads: Sequence[tuple[str, dict[str, Any]]]) -> None: ...

    def delete(self, ids: Sequence[str]) -> None: ...

    def search(
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        flt: IndexFilter,
        dense_limit: int,
        sparse_limit: int,
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        """Both channels at once: (dense hits, sparse hits), each best first.

        A sparse hit's score is BM25 with its term statistics counted over the spaces searched
        (`flt.visibility`: the owner's and its teams' points, every status, forgotten ones gone at
        once), never over the whole index: counted over the shard, a tenant's score for "ALPHA-005"
        dropped when another owner's memory held it (issue 36). For a query term t of weight q_t
        (1 for each distinct term) and a point d,

            score(d) = sum_t q_t * idf(t) * tf(t, d) * (k1 + 1) / (tf(t, d) + k1 * (1 - b + b * |d| / avgdl))
            idf(t)   = ln(1 + (N - n_t + 0.5) / (n_t + 0.5))

        where N is the number of points in those spaces, n_t those of them holding t, and k1, b and
        avgdl the constants of encoding/sparse.py (the document vector holds the tf part).
        """
        ...

    def dense_scores(self, dense: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        """Exact score of `dense` with each of these points (those that exist): its best unit's cosine."""
        ...

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The whole-text vector of each of these points (those that exist)."""
        ...

    def iter_ids(self) -> Iterator[str]: ...

    def count(self) -> int: ...

    def flush(self) -> None: ...

    def optimize(self) -> None:
        """Bring the index structures up to date after bulk writes (a no-op where a server does it)."""
        ...

    def reset(self) -> None:
        """Drop every point and recreate an empty index of the same shape."""
        ...

    def verify(self) -> None:
        """Read the stored points back; IndexUnavailableError if the storage is damaged."""
        ...

    def close(self) -> None: ...


RankingFields = tuple[float, float, str | None, str | None, str | None, str | None]


def ranking_fields(payload: dict[str, Any] | None) -> RankingFields:
    """What a hit holds besides its id and score (IndexHit's fields after `score`), from a point's payload."""
    payload = payload or {}
    speaker = payload.get("speaker")
    key = payload.get("semantic_key")
    script = payload.get("script")
    session = payload.get("session")
    return (
        float(payload.get("occurred_ts", 0.0)),
        float(payload.get("importance", 0.5)),
        speaker if isinstance(speaker, str) else None,
        key if isinstance(key, str) else None,
        script if isinstance(script, str) else None,
        session if isinstance(session, str) else None,
    )


def hit_from(point_id: str, score: float, payload: dict[str, Any] | None) -> IndexHit:
    return IndexHit(point_id, float(score), *ranking_fields(payload))
