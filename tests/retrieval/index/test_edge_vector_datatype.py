"""New Qdrant Edge shards keep their dense vectors as float16 (the setting `index_vector_datatype`).
Edge refuses to open a shard with another datatype than it was made with, so a float32 shard of an
earlier release opens as it is and answers as before, and its next build (the upkeep's rebuild,
`xmemo reindex`) makes it float16."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import numpy as np
import qdrant_edge as qe

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, remember
from retrieval.encoding import SparseEncoder
from retrieval.index import DENSE, SPARSE, UNITS, EdgeIndex, IndexFilter, IndexPoint
from tests.support import pack_for

DIMENSION = 16
SPARSE_ENCODER = SparseEncoder()
FILTER = IndexFilter(visibility=("owner:a",))


def _point(n: int) -> IndexPoint:
    vector = np.random.default_rng(n).standard_normal(DIMENSION).astype(np.float32)
    payload = {"visibility": "owner:a", "status": "active", "importance": 0.5}
    return IndexPoint(
        str(uuid.UUID(int=n + 1)), vector / np.linalg.norm(vector), SPARSE_ENCODER.document(f"n{n}"), payload
    )


def _float32_shard(path: Path, dimension: int) -> None:
    """A shard as releases before float16 made them: Edge's default datatype."""
    config = qe.EdgeConfig(
        vectors={
            DENSE: qe.EdgeVectorParams(
                size=dimension,
                distance=qe.Distance.Cosine,
                multivector_config=qe.MultiVectorConfig(comparator=qe.MultiVectorComparator.MaxSim),
            )
        },
        sparse_vectors={SPARSE: qe.EdgeSparseVectorParams(modifier=qe.Modifier.Idf)},
        max_search_threads=1,
    )
    qe.EdgeShard.create(str(path), config).close()
    assert "datatype" not in json.loads((path / "edge_config.json").read_text())["vectors"][DENSE]


def _stored(path: Path) -> str:
    return str(json.loads((path / "edge_config.json").read_text())["vectors"][DENSE].get("datatype", "float32"))


def _nearest(index: EdgeIndex, point: IndexPoint) -> list[str]:
    dense, _ = index.search(point.dense, None, FILTER, 5, 0)
    return [hit.id for hit in dense]


def test_a_new_shard_keeps_float16_and_reads_back_the_float16_of_what_it_was_given(tmp_path: Path) -> None:
    points = [_point(n) for n in range(20)]
    index = EdgeIndex(tmp_path / "index", DIMENSION)
    assert index.vector_datatype == "float16" and _stored(tmp_path / "index") == "float16"
    index.upsert(points)
    stored = index.dense_vectors([points[3].id])[points[3].id]
    assert not np.array_equal(stored, points[3].dense)  # rounded, not kept as given
    assert np.allclose(stored, points[3].dense.astype(np.float16).astype(np.float32), atol=1e-6)
    assert _nearest(index, points[3])[0] == points[3].id
    index.close()


def test_a_float32_shard_opens_as_such_and_its_rebuild_is_float16(tmp_path: Path) -> None:
    points = [_point(n) for n in range(40)]
    home = tmp_path / "index"
    _float32_shard(home, DIMENSION)
    live = EdgeIndex(home, DIMENSION)
    assert live.vector_datatype == "float32"
    live.upsert(points)
    assert np.array_equal(live.dense_vectors([points[7].id])[points[7].id], points[7].dense)
    assert all(_nearest(live, p)[0] == p.id for p in points)
    target = live.begin_rebuild()
    built = EdgeIndex(target, DIMENSION)  # what the upkeep's child does: a new generation
    built.upsert(points)
    built.optimize()
    built.close()
    live.upsert([_point(99)])  # journaled meanwhile, replayed into the float16 shard
    assert live.install(target) == 1
    assert live.vector_datatype == "float16" and _stored(target) == "float16"
    assert all(_nearest(live, p)[0] == p.id for p in points)  # neighbours closer than float16 may swap
    assert live.count() == len(points) + 1
    live.close()
    reopened = EdgeIndex(home, DIMENSION)
    assert reopened.path == target and reopened.vector_datatype == "float16"
    reopened.close()


def test_reindex_makes_a_float32_store_float16_and_recall_finds_the_same(tmp_path: Path, fake_embedder) -> None:
    owner = Principal.local("alice")
    settings = RetrievalSettings(data_dir=tmp_path)
    texts = ["the invoice run failed on the 3rd", "Bo owns the refunds queue", "deploys wait for monday"]
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        for text in texts:
            remember(engine, owner, RememberRequest(content=text, path="notes"))
        home = engine.settings.edge_path
        assert engine.index.path == home  # the first generation: no rebuild ran
        records = engine.index._shard.retrieve(  # type: ignore[attr-defined]
            list(engine.index.iter_ids()), with_payload=True, with_vector=True
        )
    # the same points in a float32 shard, as an earlier release left the store
    shutil.rmtree(home)
    _float32_shard(home, fake_embedder.dimension)
    old = qe.EdgeShard.load(str(home), None)
    then = [qe.Point(r.id, {DENSE: r.vector[UNITS], SPARSE: r.vector[SPARSE]}, r.payload) for r in records]
    old.update(qe.UpdateOperation.upsert_points(then))  # in the layout of then: every unit in the graph
    old.close()
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        assert engine.index.vector_datatype == "float32"  # type: ignore[attr-defined]
        assert engine.index.layout == "multivector"  # type: ignore[attr-defined]
        first = pack_for(engine, owner, "who owns refunds").items[0].id
        assert engine.reindex() == len(texts)
        assert engine.index.vector_datatype == "float16"  # type: ignore[attr-defined]
        assert engine.index.layout == "rescore"  # type: ignore[attr-defined]
        assert pack_for(engine, owner, "who owns refunds").items[0].id == first


def test_the_setting_chooses_the_datatype_of_what_is_built_next(tmp_path: Path, fake_embedder) -> None:
    owner = Principal.local("alice")
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        remember(engine, owner, RememberRequest(content="the invoice run failed on the 3rd", path="notes"))
    wide = RetrievalSettings(data_dir=tmp_path, index_vector_datatype="float32")
    with MemoryEngine(wide, embedder=fake_embedder) as engine:
        assert engine.index.vector_datatype == "float16"  # type: ignore[attr-defined]
        engine.reindex()
        assert engine.index.vector_datatype == "float32"  # type: ignore[attr-defined]
        assert pack_for(engine, owner, "invoice run").items


def test_the_upkeeps_build_makes_its_shard_with_the_setting(tmp_path: Path, fake_embedder) -> None:
    """The upkeep's child process (engine/rebuild.py), run as the upkeep runs it: it reads the record
    and the embedding cache and builds a new generation in the datatype the server's settings name."""
    from retrieval.engine import index_layout

    owner = Principal.local("alice")
    settings = RetrievalSettings(data_dir=tmp_path / "data")
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        for text in ("the invoice run failed on the 3rd", "Bo owns the refunds queue"):
            remember(engine, owner, RememberRequest(content=text, path="notes"))
    for datatype in ("float32", "float16"):
        chosen = settings.model_copy(update={"index_vector_datatype": datatype})
        target = tmp_path / f"built-{datatype}"
        arguments = [str(target), str(fake_embedder.dimension), fake_embedder.name, index_layout(chosen)]
        child = subprocess.run(
            [sys.executable, "-m", "retrieval.engine.rebuild", *arguments, str(os.getpid())],
            input=json.dumps(chosen.model_dump(mode="json")),
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert child.returncode == 0, child.stderr[-2000:]
        assert json.loads(child.stdout)["points"] == 2
        assert _stored(target) == datatype
