"""An Edge shard's generations (retrieval/index/edge.py): `install` replays what the shard in use was
given since `begin_rebuild`, a reader keeps the replaced shard until it lets go, and a closed index
installs nothing. The "child" here is a second EdgeIndex built in this process from the same points."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest
import qdrant_edge as qe

from retrieval.encoding import SparseEncoder
from retrieval.index import EdgeIndex, IndexFilter, IndexPoint

DIMENSION = 8
SPARSE = SparseEncoder()


def _point(name: str, importance: float = 0.5) -> IndexPoint:
    point_id = str(uuid.uuid5(uuid.NAMESPACE_OID, name))
    vector = np.random.default_rng(uuid.UUID(point_id).int % 2**32).standard_normal(DIMENSION).astype(np.float32)
    payload = {"visibility": "owner:a", "status": "active", "importance": importance}
    return IndexPoint(point_id, vector / np.linalg.norm(vector), SPARSE.document(f"note {name}"), payload)


def _build(target: Path, points: list[IndexPoint]) -> None:
    built = EdgeIndex(target, DIMENSION)
    built.upsert(points)
    built.optimize()
    built.close()


def _payloads(index: EdgeIndex) -> dict[str, float]:
    records = index._shard.retrieve([*index.iter_ids()], with_payload=True, with_vector=False)
    return {str(r.id): r.payload["importance"] for r in records}  # type: ignore[index]


def test_install_replays_what_came_after_the_build_read_the_record(tmp_path: Path) -> None:
    a, b, c = _point("a"), _point("b"), _point("c")
    live = EdgeIndex(tmp_path / "index", DIMENSION)
    live.upsert([a, b])
    target = live.begin_rebuild()
    assert live.rebuilding and target == tmp_path / "index.2"
    _build(target, [a, b])  # what the child read
    live.upsert([c])  # and what came after: a new point, a delete, a new version
    live.delete([a.id])
    b2 = _point("b", importance=0.9)
    live.upsert([b2])
    assert live.install(target) == 3
    assert live.path == target and not live.rebuilding
    assert _payloads(live) == {b.id: 0.9, c.id: 0.5}
    assert live.writes_since_build == 3  # the points replayed: c, a's delete, b again
    live.close()
    reopened = EdgeIndex(tmp_path / "index", DIMENSION)
    assert reopened.path == target and _payloads(reopened) == {b.id: 0.9, c.id: 0.5}
    assert not (tmp_path / "index").exists()
    assert reopened.writes_since_build == 3  # the clean close saved it
    reopened.close()


def test_a_reader_keeps_the_replaced_shard_until_it_lets_go(tmp_path: Path) -> None:
    points = [_point(str(n)) for n in range(2500)]
    live = EdgeIndex(tmp_path / "index", DIMENSION)
    live.upsert(points)
    reading = live.iter_ids()  # a read in progress holds the shard it started on
    first = next(reading)
    target = live.begin_rebuild()
    _build(target, points)
    live.install(target)
    assert (tmp_path / "index").exists()  # still read
    rest = list(reading)
    assert len({first, *rest}) == 2500  # the old shard answered the whole read
    del reading
    live.sweep()
    assert not (tmp_path / "index").exists()
    live.close()


def test_a_closed_index_installs_nothing_and_an_abandoned_build_leaves_no_directory(tmp_path: Path) -> None:
    live = EdgeIndex(tmp_path / "index", DIMENSION)
    live.upsert([_point("a")])
    target = live.begin_rebuild()
    _build(target, [_point("a")])
    live.close()
    assert live.install(target) is None and not target.exists()
    again = EdgeIndex(tmp_path / "index", DIMENSION)
    target = again.begin_rebuild()
    target.mkdir()
    again.abandon_rebuild(target)
    assert not target.exists() and not again.rebuilding
    again.close()


def test_a_build_leaves_no_count_beside_its_generation(tmp_path: Path) -> None:
    """The child's own close saves its count as `index.N.fresh`; the count the server keeps is `index.fresh`
    alone, so nothing named for a generation outlives the build, whether it was installed or abandoned."""
    live = EdgeIndex(tmp_path / "index", DIMENSION)
    live.upsert([_point("a")])
    first = live.begin_rebuild()
    _build(first, [_point("a")])
    assert (tmp_path / "index.2.fresh").exists()  # what the child's close wrote
    live.install(first)
    second = live.begin_rebuild()
    _build(second, [_point("a")])
    live.abandon_rebuild(second)
    live.close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".fresh")) == ["index.fresh"]
    (tmp_path / "index.7.fresh").write_text("index.7 3\n")  # a build killed before the server saw it
    EdgeIndex(tmp_path / "index", DIMENSION).close()
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".fresh")) == ["index.fresh"]


def test_a_rebuild_moves_a_store_of_the_earlier_layout_to_the_rescored_one_with_the_writes_made_meanwhile(
    tmp_path: Path,
) -> None:
    """A shard made before this round keeps every unit in its graph ("multivector", base.py LAYOUTS); it
    opens and serves as it is, and the next build (the upkeep's, `xmemo reindex`) makes the "rescore"
    layout. Writes journaled meanwhile were made for the old shard and are replayed in the new one's
    terms; a memory scores its best unit's cosine in both."""
    home = tmp_path / "index"
    maxsim = qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim)
    dense = qe.EdgeVectorParams(size=DIMENSION, distance=qe.Distance.Cosine, multivector_config=maxsim)
    sparse = {"bm25": qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)}
    qe.EdgeShard.create(str(home), qe.EdgeConfig(vectors={"dense": dense}, sparse_vectors=sparse)).close()
    units = np.eye(DIMENSION, dtype=np.float32)[:2]
    a, b = _point("a"), _point("b")
    c = IndexPoint(_point("c").id, _point("c").dense, SPARSE.document("note c"), _point("c").payload, units=units)
    live = EdgeIndex(home, DIMENSION)
    assert live.layout == "multivector"
    live.upsert([a, b, c])
    before = live.dense_scores(units[1], [a.id, b.id, c.id])
    assert before[c.id] == pytest.approx(1.0, abs=1e-3)  # c's second unit is the query itself
    target = live.begin_rebuild()
    _build(target, [a, b])
    live.upsert([c])  # journaled as the old shard took it
    assert live.install(target) == 1 and live.layout == "rescore"
    assert live.dense_scores(units[1], [a.id, b.id, c.id]) == pytest.approx(before, abs=1e-3)
    flt = IndexFilter(visibility=("owner:a",))
    hits, _ = live.search(units[1], None, flt, 2, 0)
    assert hits[0].id == c.id and hits[0].score == pytest.approx(1.0, abs=1e-3)
    assert set(live.dense_vectors([c.id])) == {c.id}
    np.testing.assert_allclose(live.dense_vectors([c.id])[c.id], c.dense, atol=1e-3)
    live.close()
