"""The embedded backend: Qdrant Edge, Qdrant's engine in-process, on disk in the data dir."""

from __future__ import annotations

import shutil
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import qdrant_edge as qe

from ..domain import IndexUnavailableError
from ..encoding import SparseVector
from ..storage import map_edge_faults
from .base import DENSE, KEYWORD_FIELDS, RANKING_FIELDS, SPARSE, IndexFilter, IndexHit, IndexPoint, hit_from

__all__ = ["EdgeIndex"]


def _one_of(key: str, values: Sequence[str]) -> qe.FieldCondition:
    """`key` is one of `values`. A single value is matched as such: at 2,000 points a search's two
    requests cost 0.60 ms with MatchValue against 0.75 ms with a one-element MatchAny."""
    match = qe.MatchValue(values[0]) if len(values) == 1 else qe.MatchAny(list(values))
    return qe.FieldCondition(key, match=match)


def _condition_filter(flt: IndexFilter) -> qe.Filter:
    must: list[Any] = [_one_of("visibility", flt.visibility), _one_of("status", flt.statuses)]
    for key, value in (("bucket", flt.bucket), ("scope", flt.scope), ("path", flt.path), ("type", flt.memory_type)):
        if value is not None:
            must.append(qe.FieldCondition(key, match=qe.MatchValue(value)))
    if flt.ids is not None:
        must.append(qe.HasIdCondition(set(flt.ids)))
    return qe.Filter(must=must)


class EdgeIndex:
    """A Qdrant Edge shard with a named dense vector and a BM25 sparse vector (IDF at query time)."""

    backend = "edge"

    def __init__(self, path: Path, dimension: int, search_threads: int = 1) -> None:
        self.path = path
        self.dimension = dimension
        self.search_threads = search_threads  # Edge keeps it in the shard's config: given on every load
        self._lock = threading.RLock()
        self._closed = False
        self._shard = self._open()

    def _config(self) -> qe.EdgeConfig:
        return qe.EdgeConfig(
            vectors={
                DENSE: qe.EdgeVectorParams(
                    size=self.dimension,
                    distance=qe.Distance.Cosine,
                    multivector_config=qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim),
                )
            },
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
            max_search_threads=self.search_threads,
        )

    def _open(self) -> qe.EdgeShard:
        with map_edge_faults(f"cannot open the Qdrant Edge shard at {self.path}"):
            if self.path.exists() and any(self.path.iterdir()):
                return qe.EdgeShard.load(str(self.path), self._config())
            shard = qe.EdgeShard.create(str(self.path), self._config())
            for key in KEYWORD_FIELDS:
                shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
            return shard

    def verify(self) -> None:
        """Every point has its payload and a readable dense vector; IndexUnavailableError names the damage.

        Loading a shard checks little: with a truncated vector file or a deleted payload storage it
        loads, then a search fails ("vector 3 is not readable", a Rust panic) or returns hits without
        payloads. So this reads each point's `visibility` (the field every search filters on), counts
        the points that have a dense vector, and runs one exact search, which reads every vector inside
        the engine. Once per start; at 1,000,000 points it takes 4.4-7.0 s, where reading every whole
        payload and vector into Python took 13-15 s."""
        offset = None
        while True:
            with map_edge_faults(f"the Qdrant Edge shard at {self.path} is damaged"):
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=10_000, with_payload=["visibility"], with_vector=False)
                )
            for record in records:
                payload = record.payload
                if not payload or "visibility" not in payload:
                    raise IndexUnavailableError(
                        f"the Qdrant Edge shard at {self.path} lost the payload of point {record.id}"
                    )
            if offset is None:
                break
        with map_edge_faults(f"the Qdrant Edge shard at {self.path} is damaged"):
            total = self._shard.count(qe.CountRequest(exact=True))
            has_vector = qe.Filter(must=[qe.HasVectorCondition(DENSE)])
            with_vector = self._shard.count(qe.CountRequest(exact=True, filter=has_vector))
            if with_vector != total:
                raise IndexUnavailableError(
                    f"the Qdrant Edge shard at {self.path} lost the dense vectors of "
                    f"{total - with_vector} of {total} points"
                )
            if total:
                probe = [1.0 / np.sqrt(self.dimension)] * self.dimension
                self._shard.query(
                    qe.QueryRequest(
                        limit=1, query=qe.Query.Nearest([probe], using=DENSE), params=qe.SearchParams(exact=True)
                    )
                )

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        if not points:
            return
        edge_points = [
            qe.Point(
                p.id,
                {DENSE: p.dense_matrix(), SPARSE: qe.SparseVector(list(p.sparse.indices), list(p.sparse.values))},
                p.payload,
            )
            for p in points
        ]
        with self._lock, map_edge_faults():
            self._shard.update(qe.UpdateOperation.upsert_points(edge_points))

    def set_payloads(self, payloads: Sequence[tuple[str, dict[str, Any]]]) -> None:
        with self._lock, map_edge_faults():
            for point_id, payload in payloads:
                self._shard.update(qe.UpdateOperation.set_payload([point_id], payload))

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            with self._lock, map_edge_faults():
                self._shard.update(qe.UpdateOperation.delete_points(list(ids)))

    def search(
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        flt: IndexFilter,
        dense_limit: int,
        sparse_limit: int,
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        condition = _condition_filter(flt)
        requests: list[qe.QueryRequest] = []
        if dense is not None and dense_limit > 0:
            requests.append(
                qe.QueryRequest(
                    limit=dense_limit,
                    query=qe.Query.Nearest([dense.tolist()], using=DENSE),
                    filter=condition,
                    with_payload=RANKING_FIELDS,
                )
            )
        if sparse is not None and sparse.indices and sparse_limit > 0:
            query = qe.SparseVector(list(sparse.indices), list(sparse.values))
            requests.append(
                qe.QueryRequest(
                    limit=sparse_limit,
                    query=qe.Query.Nearest(query, using=SPARSE),
                    filter=condition,
                    with_payload=RANKING_FIELDS,
                )
            )
        if not requests:
            return [], []
        with map_edge_faults():
            results = self._shard.query_batch(qe.QueryBatchRequest(requests))
        hits = [[hit_from(str(p.id), p.score, p.payload) for p in result] for result in results]
        dense_hits = hits.pop(0) if dense is not None and dense_limit > 0 else []
        sparse_hits = hits.pop(0) if hits else []
        return dense_hits, sparse_hits

    def dense_scores(self, dense: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        if not ids:
            return {}
        request = qe.QueryRequest(
            limit=len(ids),
            query=qe.Query.Nearest([dense.tolist()], using=DENSE),
            filter=qe.Filter(must=[qe.HasIdCondition(set(ids))]),
        )
        with map_edge_faults():
            points = self._shard.query(request)
        return {str(p.id): float(p.score) for p in points}

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        with map_edge_faults():
            records = self._shard.retrieve(list(ids), with_payload=False, with_vector=[DENSE])
        return {str(r.id): np.asarray(r.vector[DENSE][0], dtype=np.float32) for r in records}  # type: ignore[call-overload, index]

    def iter_ids(self) -> Iterator[str]:
        offset = None
        while True:
            with map_edge_faults():
                records, offset = self._shard.scroll(
                    qe.ScrollRequest(offset=offset, limit=1000, with_payload=False, with_vector=False)
                )
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def count(self) -> int:
        with map_edge_faults():
            return int(self._shard.count(qe.CountRequest(exact=True)))

    def segment_count(self) -> int:
        """How many segments a search visits (Edge merges them only when asked to `optimize`)."""
        with map_edge_faults():
            return int(self._shard.info().segments_count)

    def flush(self) -> None:
        with self._lock, map_edge_faults():
            self._shard.flush()

    def optimize(self) -> None:
        """Build HNSW and merge segments now (Edge runs no optimizer in the background).

        Measured at 10,000 memories: the two-channel search went from 5.7 ms to 3.2 ms; the pass
        itself took 4.6 s. Bulk writers (import, reindex) call it when they finish."""
        with self._lock, map_edge_faults():
            self._shard.optimize()

    def reset(self) -> None:
        with self._lock:
            with map_edge_faults():
                self._shard.close()
            shutil.rmtree(self.path, ignore_errors=True)
            self._shard = self._open()
            self._closed = False

    def close(self) -> None:
        """Flush and close; a second close does nothing."""
        with self._lock, map_edge_faults():
            if self._closed:
                return
            self._closed = True
            self._shard.flush()
            self._shard.close()
