"""One contract for every vector index backend: the same scenarios on Qdrant Edge and qdrant-client local mode."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from retrieval.encoding import SparseEncoder
from retrieval.index import EdgeIndex, IndexFilter, IndexPoint, ServerIndex
from tests.support import BACKENDS, FakeEmbedder

# New shards keep float16 vectors, and Edge computes their scores at that precision: a cosine is
# within about 1e-3 of float32's (0.99933 for a vector against itself), exact scores of a float32 store.
FLOAT16_SCORE = 2e-3
embedder = FakeEmbedder()
sparse = SparseEncoder()

DOCS = [
    ("alice", None, "work", "the deploy failed because of a missing config key"),
    ("alice", None, "personal", "lunch with Bo on friday"),
    ("alice", "team-a", "work", "team decision: ship the search index on monday"),
    ("bob", None, "work", "bob's private note about the deploy"),
    ("bob", "team-b", "work", "team b plans the payment gateway migration"),
]


def _open(backend: str, tmp_path: Path):  # type: ignore[no-untyped-def]
    if backend == "edge":
        return EdgeIndex(tmp_path / "edge", embedder.dimension)
    return ServerIndex(embedder.dimension, "contract", path=str(tmp_path / "local"))


def _points() -> list[IndexPoint]:
    points = []
    for i, (owner, team, bucket, text) in enumerate(DOCS):
        visibility = f"team:{team}" if team else f"owner:{owner}"
        payload = {
            "owner_id": owner,
            "visibility": visibility,
            "bucket": bucket,
            "scope": "",
            "path": f"p/{i}",
            "type": "episodic",
            "status": "active",
            "version": 1,
            "importance": 0.5,
            "occurred_ts": 1000.0 + i,
        }
        points.append(IndexPoint(str(uuid.UUID(int=i + 1)), embedder.embed([text])[0], sparse.document(text), payload))
    return points


def _ids(hits) -> list[int]:  # type: ignore[no-untyped-def]
    return [uuid.UUID(h.id).int - 1 for h in hits]


@pytest.fixture(params=BACKENDS)
def index(request, tmp_path):  # type: ignore[no-untyped-def]
    idx = _open(request.param, tmp_path)
    idx.upsert(_points())
    yield idx
    idx.close()


def _search(index, text, flt, limit=10):  # type: ignore[no-untyped-def]
    return index.search(embedder.embed_query(text), sparse.query(text), flt, limit, limit)


def test_count_and_ids(index):
    assert index.count() == len(DOCS)
    assert sorted(index.iter_ids()) == sorted(p.id for p in _points())


def test_visibility_filter_keeps_owner_and_teams_apart(index):
    alice = IndexFilter(visibility=("owner:alice", "team:team-a"))
    dense, bm25 = _search(index, "deploy", alice)
    assert set(_ids(dense)) == {0, 1, 2}
    assert set(_ids(bm25)) == {0}
    bob = IndexFilter(visibility=("owner:bob",))
    dense, bm25 = _search(index, "deploy", bob)
    assert set(_ids(dense)) == {3} and set(_ids(bm25)) == {3}


def test_field_filters(index):
    flt = IndexFilter(visibility=("owner:alice", "team:team-a"), bucket="work")
    dense, _ = _search(index, "anything", flt)
    assert set(_ids(dense)) == {0, 2}
    flt = IndexFilter(visibility=("owner:alice", "team:team-a"), path="p/1")
    dense, _ = _search(index, "anything", flt)
    assert _ids(dense) == [1]
    flt = IndexFilter(visibility=("owner:alice", "team:team-a"), ids=(str(uuid.UUID(int=3)),))
    dense, _ = _search(index, "anything", flt)
    assert _ids(dense) == [2]


def test_bm25_ranks_exact_terms_and_hits_carry_ranking_payload(index):
    flt = IndexFilter(visibility=("owner:alice", "team:team-a", "team:team-b", "owner:bob"))
    _, bm25 = _search(index, "payment gateway migration", flt)
    assert _ids(bm25)[0] == 4
    assert bm25[0].occurred_ts == 1004.0 and bm25[0].importance == 0.5
    dense, _ = _search(index, "team b plans the payment gateway migration", flt)
    assert _ids(dense)[0] == 4
    assert dense[0].score == pytest.approx(1.0, abs=FLOAT16_SCORE)


def test_status_payload_update_hides_and_delete_removes(index):
    flt = IndexFilter(visibility=("owner:alice",))
    target = str(uuid.UUID(int=1))
    index.set_payloads([(target, {"status": "archived"})])
    dense, _ = _search(index, "deploy", flt)
    assert 0 not in _ids(dense)
    dense, _ = _search(index, "deploy", IndexFilter(visibility=("owner:alice",), statuses=("archived",)))
    assert _ids(dense) == [0]
    index.delete([target])
    assert index.count() == len(DOCS) - 1


def test_dense_vectors_round_trip(index):
    target = str(uuid.UUID(int=2))
    vectors = index.dense_vectors([target])
    # to the float16 that new shards keep (about 3 decimal digits)
    assert np.allclose(vectors[target], embedder.embed([DOCS[1][3]])[0], atol=1e-3)


def test_reset_empties(index):
    index.reset()
    assert index.count() == 0
    index.upsert(_points()[:2])
    assert index.count() == 2


def test_empty_sparse_query_returns_no_bm25_hits(index):
    flt = IndexFilter(visibility=("owner:alice",))
    dense, bm25 = index.search(embedder.embed_query("the"), sparse.query("the"), flt, 5, 5)
    assert bm25 == [] and len(dense) == 2


@pytest.mark.parametrize("backend", BACKENDS)
def test_data_survives_reopen(backend, tmp_path):
    first = _open(backend, tmp_path)
    first.upsert(_points())
    first.close()
    again = _open(backend, tmp_path)
    assert again.count() == len(DOCS)
    again.close()


def test_dense_scores_are_exact_cosines_of_the_named_points(index):
    query = embedder.embed_query("lunch with Bo")
    wanted = [str(uuid.UUID(int=2)), str(uuid.UUID(int=4)), str(uuid.UUID(int=99))]
    scores = index.dense_scores(query, wanted)
    assert set(scores) == set(wanted[:2])
    for point_id in wanted[:2]:
        text = DOCS[uuid.UUID(point_id).int - 1][3]
        assert scores[point_id] == pytest.approx(float(embedder.embed([text])[0] @ query), abs=FLOAT16_SCORE)


def test_only_a_qdrant_server_that_counts_idf_over_the_searched_spaces_is_accepted():
    """A server before 1.19 ignores `params.idf` and counts BM25's statistics over every tenant."""
    from retrieval.index import counts_idf_per_corpus

    assert [counts_idf_per_corpus(v) for v in ("1.15.4", "1.18.2", "1.19.0", "v1.20.1-rc", "2.0.0", "dev")] == [
        False,
        False,
        True,
        True,
        True,
        False,
    ]


def test_a_collection_of_the_earlier_layout_serves_as_it_is_until_it_is_rebuilt(tmp_path: Path) -> None:
    """A Qdrant collection made before this round holds the multivector in its graph ("multivector",
    base.py LAYOUTS): the server backend reads its layout, writes and searches it in those terms, and
    `reset` (what `xmemo reindex` runs) makes it in the rescored layout, one graph vector per memory."""
    from qdrant_client import QdrantClient, models

    client = QdrantClient(path=str(tmp_path / "local"))
    maxsim = models.MultiVectorConfig(comparator=models.MultiVectorComparator.MAX_SIM)
    params = models.VectorParams(size=embedder.dimension, distance=models.Distance.COSINE, multivector_config=maxsim)
    sparse_params = {"bm25": models.SparseVectorParams(modifier=models.Modifier.IDF)}
    client.create_collection("old", vectors_config={"dense": params}, sparse_vectors_config=sparse_params)
    client.close()
    index = ServerIndex(embedder.dimension, "old", path=str(tmp_path / "local"))
    assert index.layout == "multivector"
    points = _points()
    for layout in ("multivector", "rescore"):
        index.upsert(points)
        query = points[2].dense
        hits, _ = index.search(query, None, IndexFilter(visibility=("team:team-a",)), 5, 0)
        assert [h.id for h in hits] == [points[2].id] and hits[0].score == pytest.approx(1.0, abs=FLOAT16_SCORE)
        assert index.dense_scores(query, [points[2].id])[points[2].id] == pytest.approx(1.0, abs=FLOAT16_SCORE)
        np.testing.assert_allclose(index.dense_vectors([points[2].id])[points[2].id], query, atol=FLOAT16_SCORE)
        assert index.layout == layout
        index.reset()
    assert index.layout == "rescore"
    index.close()
