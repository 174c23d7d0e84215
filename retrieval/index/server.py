"""The server backend: a Qdrant server or cluster through qdrant-client (local mode in tests)."""

from __future__ import annotations

import re
import warnings
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import numpy as np
from qdrant_client import QdrantClient, models

from ..domain import IndexUnavailableError
from ..encoding import SparseVector
from ..storage import map_server_faults
from .base import (
    DENSE,
    KEYWORD_FIELDS,
    RANKING_FIELDS,
    RESCORED,
    SEARCH_EF,
    SPARSE,
    UNITS,
    IndexFilter,
    IndexHit,
    IndexPoint,
    graph_threshold_kib,
    hit_from,
)

T = TypeVar("T")

__all__ = ["IDF_CORPUS_SINCE", "ServerIndex", "counts_idf_per_corpus"]


def _condition_filter(flt: IndexFilter) -> models.Filter:
    must: list[Any] = [
        models.FieldCondition(key="visibility", match=models.MatchAny(any=list(flt.visibility))),
        models.FieldCondition(key="status", match=models.MatchAny(any=list(flt.statuses))),
    ]
    for key, value in (("bucket", flt.bucket), ("scope", flt.scope), ("path", flt.path), ("type", flt.memory_type)):
        if value is not None:
            must.append(models.FieldCondition(key=key, match=models.MatchValue(value=value)))
    if flt.ids is not None:
        must.append(models.HasIdCondition(has_id=list(flt.ids)))
    return models.Filter(must=must)


def _idf_corpus(flt: IndexFilter) -> models.Filter:
    """The points BM25's IDF is counted over: every point of the spaces searched (base.py VectorIndex.search)."""
    spaces = models.FieldCondition(key="visibility", match=models.MatchAny(any=list(flt.visibility)))
    return models.Filter(must=[spaces])


# The first Qdrant that counts a sparse search's IDF over a corpus filter (`params.idf`); an earlier
# server ignores the field and counts it over the whole collection, every tenant's points with it.
IDF_CORPUS_SINCE = (1, 19)


def counts_idf_per_corpus(version: str) -> bool:
    """Whether a Qdrant server of this version ("1.19.0", "v1.20.1-rc") honours `params.idf`."""
    numbers = re.findall(r"\d+", version)
    return len(numbers) >= 2 and (int(numbers[0]), int(numbers[1])) >= IDF_CORPUS_SINCE


class ServerIndex:
    """One collection with a named dense vector and a BM25 sparse vector with the IDF modifier, its
    statistics counted over the spaces a search reads (Qdrant 1.19 or later; base.py VectorIndex.search).

    `location=":memory:"` or a `path` runs qdrant-client's local mode, which the tests use as the
    stand-in for a server (the same client code runs against both).
    """

    backend = "server"

    def __init__(
        self,
        dimension: int,
        collection: str,
        url: str | None = None,
        api_key: str | None = None,
        location: str | None = None,
        path: str | None = None,
        datatype: str = "float16",
    ) -> None:
        self.dimension = dimension
        self.datatype = datatype  # of a collection this index creates; an existing one keeps its own
        self.layout = "rescore"  # base.py LAYOUTS: an existing collection keeps its own
        self.collection = collection
        # a server walks the HNSW graph; local mode always searches exactly and warns at search params
        self._remote = url is not None
        with map_server_faults(f"cannot reach Qdrant ({url or location or path})"):
            if url is not None:
                self._client = QdrantClient(url=url, api_key=api_key, timeout=10)
                self._require_idf_corpus(url)
            else:
                self._client = QdrantClient(location=location, path=path)
            self._ensure_collection()

    def _require_idf_corpus(self, url: str) -> None:
        """Refuse a server that would count BM25's statistics over every tenant's points."""
        version = self._client.info().version
        if not counts_idf_per_corpus(version):
            self._client.close()
            raise IndexUnavailableError(
                f"the Qdrant server at {url} is version {version}: it counts BM25's term statistics over "
                "every tenant's memories. Upgrade it to Qdrant 1.19 or later."
            )

    def _ensure_collection(self) -> None:
        """Create the collection in the "rescore" layout (base.py LAYOUTS), or read an existing one's."""
        if self._client.collection_exists(self.collection):
            vectors = self._client.get_collection(self.collection).config.params.vectors
            whole = vectors.get(DENSE) if isinstance(vectors, dict) else vectors
            self.layout = "multivector" if whole is not None and whole.multivector_config else "rescore"
            return
        maxsim = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
        datatype = models.Datatype(self.datatype)
        threshold = graph_threshold_kib(self.datatype)  # the graph's switch at the same number of vectors (base.py)
        self._client.create_collection(
            self.collection,
            vectors_config={
                DENSE: models.VectorParams(
                    size=self.dimension,
                    distance=models.Distance.COSINE,
                    datatype=datatype,
                    hnsw_config=models.HnswConfigDiff(full_scan_threshold=threshold),
                ),
                UNITS: models.VectorParams(
                    size=self.dimension,
                    distance=models.Distance.COSINE,
                    multivector_config=maxsim,
                    datatype=datatype,
                    hnsw_config=models.HnswConfigDiff(m=0),  # no graph: the units only rescore
                ),
            },
            sparse_vectors_config={SPARSE: models.SparseVectorParams(modifier=models.Modifier.IDF)},
            optimizers_config=models.OptimizersConfigDiff(indexing_threshold=threshold),
        )
        self.layout = "rescore"
        with warnings.catch_warnings():  # local mode warns that payload indexes are a server feature
            warnings.simplefilter("ignore")
            for key in KEYWORD_FIELDS:
                self._client.create_payload_index(self.collection, key, models.PayloadSchemaType.KEYWORD)

    def upsert(self, points: Sequence[IndexPoint]) -> None:
        if not points:
            return
        structs = [models.PointStruct(id=p.id, vector=self._vectors(p), payload=p.payload) for p in points]
        self._call(self._client.upsert, self.collection, structs, wait=True)

    def _vectors(self, point: IndexPoint) -> dict[str, Any]:
        sparse = models.SparseVector(indices=list(point.sparse.indices), values=list(point.sparse.values))
        if self.layout == "multivector":
            return {DENSE: point.dense_matrix(), SPARSE: sparse}
        return {DENSE: point.dense.tolist(), UNITS: point.dense_matrix(), SPARSE: sparse}

    def set_payloads(self, payloads: Sequence[tuple[str, dict[str, Any]]]) -> None:
        for point_id, payload in payloads:
            self._call(self._client.set_payload, self.collection, payload=payload, points=[point_id], wait=True)

    def delete(self, ids: Sequence[str]) -> None:
        if ids:
            self._call(self._client.delete, self.collection, points_selector=models.PointIdsList(points=list(ids)))

    def search(
        self,
        dense: np.ndarray | None,
        sparse: SparseVector | None,
        flt: IndexFilter,
        dense_limit: int,
        sparse_limit: int,
    ) -> tuple[list[IndexHit], list[IndexHit]]:
        condition = _condition_filter(flt)
        requests: list[models.QueryRequest] = []
        if dense is not None and dense_limit > 0:
            requests.append(self._dense_request(dense.tolist(), condition, dense_limit))
        if sparse is not None and sparse.indices and sparse_limit > 0:
            query = models.SparseVector(indices=list(sparse.indices), values=list(sparse.values))
            requests.append(
                models.QueryRequest(
                    query=query,
                    using=SPARSE,
                    limit=sparse_limit,
                    filter=condition,
                    params=models.SearchParams(idf=models.IdfCorpusParams(corpus=_idf_corpus(flt))),
                    with_payload=RANKING_FIELDS,
                )
            )
        if not requests:
            return [], []
        responses = self._call(self._client.query_batch_points, self.collection, requests=requests)
        hits = [[hit_from(str(p.id), p.score, p.payload) for p in r.points] for r in responses]
        dense_hits = hits.pop(0) if dense is not None and dense_limit > 0 else []
        sparse_hits = hits.pop(0) if hits else []
        return dense_hits, sparse_hits

    def _dense_request(self, vector: list[float], condition: models.Filter, limit: int) -> models.QueryRequest:
        """The dense channel (edge.py `_dense_request`): the whole-text graph's RESCORED x `limit`
        nearest rescored by their best unit, or, in a collection of the earlier layout, its graph."""
        depth = RESCORED * limit if self.layout == "rescore" else limit
        params = models.SearchParams(hnsw_ef=max(SEARCH_EF, depth)) if self._remote else None
        if self.layout == "multivector":
            return models.QueryRequest(
                query=[vector], using=DENSE, limit=limit, filter=condition, params=params, with_payload=RANKING_FIELDS
            )
        nearest = models.Prefetch(query=vector, using=DENSE, limit=depth, filter=condition, params=params)
        return models.QueryRequest(
            prefetch=[nearest], query=[vector], using=UNITS, limit=limit, with_payload=RANKING_FIELDS
        )

    def dense_scores(self, dense: np.ndarray, ids: Sequence[str]) -> dict[str, float]:
        if not ids:
            return {}
        response = self._call(
            self._client.query_points,
            self.collection,
            query=[dense.tolist()],
            using=UNITS if self.layout == "rescore" else DENSE,
            limit=len(ids),
            query_filter=models.Filter(must=[models.HasIdCondition(has_id=list(ids))]),
        )
        return {str(p.id): float(p.score) for p in response.points}

    def dense_vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        if not ids:
            return {}
        records = self._call(self._client.retrieve, self.collection, ids=list(ids), with_vectors=[DENSE])
        stored: dict[str, Any] = {str(r.id): r.vector[DENSE] for r in records}  # type: ignore[call-overload, index]
        if self.layout == "multivector":  # the whole text is the multivector's first row
            return {i: np.asarray(v[0], dtype=np.float32) for i, v in stored.items()}
        return {i: np.asarray(v, dtype=np.float32) for i, v in stored.items()}

    def iter_ids(self) -> Iterator[str]:
        offset = None
        while True:
            records, offset = self._call(
                self._client.scroll, self.collection, limit=1000, offset=offset, with_payload=False, with_vectors=False
            )
            for record in records:
                yield str(record.id)
            if offset is None:
                return

    def count(self) -> int:
        return int(self._call(self._client.count, self.collection, exact=True).count)

    def flush(self) -> None:
        """Writes wait for the server's acknowledgement; nothing is buffered here."""

    def optimize(self) -> None:
        """A Qdrant server runs its optimizers in the background by itself."""

    def verify(self) -> None:
        """A server keeps its own storage healthy; reaching the collection is the check."""
        self.count()

    def reset(self) -> None:
        self._call(self._client.delete_collection, self.collection)
        with map_server_faults():
            self._ensure_collection()

    def close(self) -> None:
        self._client.close()

    def _call(self, method: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        with map_server_faults():
            return method(*args, **kwargs)
