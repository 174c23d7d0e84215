"""A shard gets its HNSW graph at the same number of vectors whatever their datatype (base.py
GRAPH_THRESHOLD_KIB): Edge counts its thresholds in KiB, so with float16 vectors a shard of 10,000
memories kept no graph and every search scanned each vector through its filter. A shard made before
(Edge's own thresholds) takes the graph at its next build."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from retrieval.encoding import SparseEncoder
from retrieval.index import DENSE, SPARSE, UNITS, EdgeIndex, IndexFilter, IndexPoint

DIMENSION = 384  # the default encoder's: the thresholds are KiB of vectors
BELOW = 6_400  # float32 vectors of 384 dimensions fill GRAPH_THRESHOLD_KIB at 6,666
ABOVE = 6_900
SPARSE_ENCODER = SparseEncoder()
FILTER = IndexFilter(visibility=("owner:a",))


def _points(count: int) -> list[IndexPoint]:
    vectors = np.random.default_rng(count).standard_normal((count, DIMENSION)).astype(np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    payload = {"visibility": "owner:a", "status": "active", "importance": 0.5}
    return [
        IndexPoint(str(uuid.UUID(int=n + 1)), vectors[n], SPARSE_ENCODER.document(f"note {n}"), payload)
        for n in range(count)
    ]


def _dense_indexes(home: Path) -> list[str]:
    """The dense vectors' index type of each segment of the shard at `home` that holds points."""
    kinds = []
    for segment in sorted(home.glob("segments/*/segment.json")):
        index = json.loads(segment.read_text())["config"]["vector_data"][DENSE]["index"]["type"]
        kinds.append(str(index))
    return kinds


def _built(home: Path, count: int, datatype: str) -> EdgeIndex:
    index = EdgeIndex(home, DIMENSION, datatype=datatype)
    points = _points(count)
    for start in range(0, count, 1_000):
        index.upsert(points[start : start + 1_000])
    index.optimize()
    return index


def test_float16_and_float32_shards_get_their_graph_at_the_same_number_of_vectors(tmp_path: Path) -> None:
    below = _built(tmp_path / "f16-below", BELOW, "float16")
    assert "hnsw" not in _dense_indexes(tmp_path / "f16-below")
    below.close()
    probe = _points(ABOVE)[1234]
    for datatype in ("float16", "float32"):
        home = tmp_path / f"{datatype}-above"
        index = _built(home, ABOVE, datatype)
        assert index.vector_datatype == datatype
        assert "hnsw" in _dense_indexes(home), datatype
        dense, _ = index.search(probe.dense, None, FILTER, 10, 0)  # through the graph, under the filter
        assert dense[0].id == probe.id and len(dense) == 10
        index.close()


def test_a_shard_made_with_edges_own_thresholds_takes_the_graph_at_its_next_build(tmp_path: Path) -> None:
    home = tmp_path / "index"
    maxsim = qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim)
    float16 = qe.VectorStorageDatatype.Float16
    earlier = qe.EdgeConfig(  # the "rescore" layout as the release before made it
        vectors={
            DENSE: qe.EdgeVectorParams(size=DIMENSION, distance=qe.Distance.Cosine, datatype=float16),
            UNITS: qe.EdgeVectorParams(
                size=DIMENSION,
                distance=qe.Distance.Cosine,
                multivector_config=maxsim,
                datatype=float16,
                hnsw_config=qe.HnswIndexConfig(m=0, ef_construct=100, full_scan_threshold=10_000),
            ),
        },
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        max_search_threads=1,
    )
    shard = qe.EdgeShard.create(str(home), earlier)
    points = _points(ABOVE)
    for start in range(0, ABOVE, 1_000):
        batch = points[start : start + 1_000]
        shard.update(
            qe.UpdateOperation.upsert_points(
                [
                    qe.Point(
                        p.id,
                        {
                            DENSE: p.dense.tolist(),
                            UNITS: p.dense_matrix(),
                            SPARSE: qe.SparseVector(list(p.sparse.indices), list(p.sparse.values)),
                        },
                        p.payload,
                    )
                    for p in batch
                ]
            )
        )
    shard.optimize()
    shard.close()
    assert "hnsw" not in _dense_indexes(home)  # 6,900 float16 vectors: 5.1 MiB, under Edge's 10,000 KiB

    index = EdgeIndex(home, DIMENSION)
    dense, _ = index.search(points[42].dense, None, FILTER, 5, 0)
    assert dense[0].id == points[42].id  # opens and answers as it was
    index.optimize()
    assert "hnsw" in _dense_indexes(home)
    dense, _ = index.search(points[42].dense, None, FILTER, 5, 0)
    assert dense[0].id == points[42].id
    index.close()
