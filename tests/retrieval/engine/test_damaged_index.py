"""A damaged Qdrant Edge index (files really truncated or deleted) is rebuilt from the system of
record at start and by `xmemo reindex`, instead of stopping the service."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, remember
from tests.support import RunningServer, pack_for

ALICE = Principal.local("alice")
TOPICS = [
    "the staging database password rotates every month",
    "lunch is at noon on fridays",
    "the on-call phone lives in the second drawer",
]


def _store(data_dir: Path, embedder, count: int) -> list[str]:  # type: ignore[no-untyped-def]
    with MemoryEngine(RetrievalSettings(data_dir=data_dir), embedder=embedder) as engine:
        ids = [
            remember(engine, ALICE, RememberRequest(content=f"{TOPICS[i % 3]} (note {i})", path="notes")).memory.id
            for i in range(count)
        ]
        engine.index.optimize()
    return ids


def _damage(index_dir: Path, part: str, size: int = 0) -> int:
    """Truncate every dense vector file to `size` bytes, or delete every payload storage; returns how many."""
    if part == "vectors":
        files = [
            f
            for f in index_dir.rglob("*")
            if f.is_file() and f.parent.name == "vectors" and "vector_storage-dense" in f.parts[-3]
        ]
        for f in files:
            os.truncate(f, size)
        return len(files)
    dirs = list(index_dir.rglob("payload_storage"))
    for d in dirs:
        shutil.rmtree(d)
    return len(dirs)


def _first(engine: MemoryEngine, query: str) -> str:
    return str(pack_for(engine, ALICE, query, max_items=3).items[0].id)


@pytest.mark.parametrize(("part", "size"), [("vectors", 0), ("vectors", 1000), ("payload", 0)])
def test_start_rebuilds_a_damaged_index(tmp_path, fake_embedder, part, size):
    ids = _store(tmp_path / "data", fake_embedder, 60)
    assert _damage(tmp_path / "data" / "index", part, size) >= 1
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path / "data"), embedder=fake_embedder) as engine:
        assert engine.index.count() == engine.store.count_indexed() == 60
        assert _first(engine, "on-call phone drawer note 2") == ids[2]
        hits, _ = engine.index.search(fake_embedder.embed_query(TOPICS[0]), None, _filter_alice(), 5, 0)
        assert all(hit.occurred_ts > 0 for hit in hits), "hits carry their payloads again"


def _filter_alice():  # type: ignore[no-untyped-def]
    from retrieval.index import IndexFilter

    return IndexFilter(visibility=("owner:alice",))


@pytest.mark.slow
def test_reindex_and_serve_on_a_damaged_index(tmp_path, real_embedder):
    data_dir = tmp_path / "data"
    ids = _store(data_dir, real_embedder, 30)
    _damage(data_dir / "index", "vectors")
    done = subprocess.run(
        [sys.executable, "-c", "from service.cli import main; main()", "--data-dir", str(data_dir), "reindex"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    assert "reindexed 30 memories" in done.stderr
    _damage(data_dir / "index", "vectors")
    server = RunningServer(data_dir)  # raises if the process exits instead of becoming ready
    try:
        with server.client(server.key("alice")) as http:
            pack = http.post("/v1/recall/context", json={"query": "on-call phone drawer note 2"}).json()
        assert pack["items"][0]["id"] == ids[2]
    finally:
        server.stop()
