"""Qdrant Edge keeps its search thread count in the shard's config: every open gives it, and a shard
made before the count was set (as earlier releases made them) opens with it too."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import qdrant_edge as qe

from retrieval.encoding import SparseEncoder
from retrieval.index import DENSE, SPARSE, EdgeIndex, IndexFilter, IndexPoint
from tests.support import FakeEmbedder

embedder = FakeEmbedder()
sparse = SparseEncoder()
TEXTS = [
    "the deploy failed because of a missing config key",
    "lunch with Bo on friday",
    "the deploy of the search index waits for monday",
]


def _points() -> list[IndexPoint]:
    payload = {
        "owner_id": "alice",
        "visibility": "owner:alice",
        "bucket": "work",
        "scope": "",
        "path": "p",
        "type": "episodic",
        "status": "active",
        "version": 1,
        "importance": 0.5,
        "occurred_ts": 1000.0,
    }
    return [
        IndexPoint(str(uuid.UUID(int=i + 1)), embedder.embed([t])[0], sparse.document(t), payload)
        for i, t in enumerate(TEXTS)
    ]


def test_a_shard_opens_with_the_thread_count_given_and_answers_the_same(tmp_path: Path) -> None:
    path = tmp_path / "edge"
    qe.EdgeShard.create(
        str(path),
        qe.EdgeConfig(  # as releases before the setting created shards (with today's multivector)
            vectors={
                DENSE: qe.EdgeVectorParams(
                    size=embedder.dimension,
                    distance=qe.Distance.Cosine,
                    multivector_config=qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim),
                )
            },
            sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        ),
    ).close()
    assert "max_search_threads" not in json.loads((path / "edge_config.json").read_text())
    flt = IndexFilter(visibility=("owner:alice",))
    answers = []
    for threads in (1, 3, 1):
        index = EdgeIndex(path, embedder.dimension, threads)
        assert json.loads((path / "edge_config.json").read_text())["max_search_threads"] == threads
        if not answers:
            index.upsert(_points())
            index.flush()
        dense, bm25 = index.search(embedder.embed_query("deploy"), sparse.query("deploy"), flt, 10, 10)
        answers.append(([h.id for h in dense], [h.id for h in bm25]))
        index.close()
    assert len(answers[0][0]) == 3 and len(answers[0][1]) == 2
    assert answers.count(answers[0]) == 3
