"""Reads on the service's event loop: the query vector is awaited, never waited for on a thread.

recall_context and search await the query's vector (the model's thread batches it with every other
request's texts), then run the read on the event loop when the store is SQLite with an embedded
Qdrant Edge shard. So nothing a read does may wait for a lock: the read bookkeeping is written on a
thread of its own, and a caller that goes away before its batch runs must not stop the model's thread.
"""

from __future__ import annotations

import sqlite3
import threading
from concurrent.futures import CancelledError, Future
from pathlib import Path

import httpx
import numpy as np
import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, query_vector_later, recall_context, remember
from retrieval.embedding import CachedEmbedder, EmbeddingCache, InferenceBatcher, tenant_of

from .conftest import FakeEmbedder, settings_for
from .server import RunningServer

ALICE = Principal(owner_id="alice")


class _Model:
    """A model stand-in for the batcher: records each batch, and holds the first until released."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.running = threading.Event()
        self.release = threading.Event()

    def __call__(self, texts: list[str], _single: bool) -> np.ndarray:
        self.batches.append(list(texts))
        self.running.set()
        assert self.release.wait(60)
        return np.array([[float(len(text)), 1.0] for text in texts], dtype=np.float32)


def test_a_caller_that_goes_away_before_its_batch_runs_is_left_out_and_the_model_thread_lives_on():
    model = _Model()
    batcher = InferenceBatcher(model)
    first = batcher.embed_query_later("first")
    assert model.running.wait(60)  # the model's thread is inside the first batch
    gone = batcher.embed_query_later("gone")
    kept = batcher.embed_query_later("kept")
    assert gone.cancel()  # still queued: cancelling succeeds
    model.release.set()
    assert first.result(60).tolist() == [5.0, 1.0]
    assert kept.result(60).tolist() == [4.0, 1.0]
    with pytest.raises(CancelledError):
        gone.result()
    assert batcher.embed(["later", "still"], 2).tolist() == [[5.0, 1.0], [5.0, 1.0]]
    assert all("gone" not in batch for batch in model.batches)


class _Counting(FakeEmbedder):
    def __init__(self) -> None:
        self.queries: list[str] = []

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return super().embed_query(text)


def test_an_awaited_query_vector_is_kept_for_its_tenant_only(tmp_path: Path):
    model = _Counting()
    cached = CachedEmbedder(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    alice, carol = tenant_of("alice", None), tenant_of("carol", None)
    vector = cached.embed_query_later("merger date", tenant=alice).result(60)
    again: Future[np.ndarray] = cached.embed_query_later("merger date", tenant=alice)
    assert again.done() and np.array_equal(again.result(), vector)
    assert model.queries == ["merger date"]
    cached.embed_query_later("merger date", tenant=carol).result(60)
    assert model.queries == ["merger date"] * 2
    cached.cache.close()


def test_a_read_given_its_awaited_vector_answers_as_one_that_embeds_its_own(tmp_path: Path, real_embedder):
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=real_embedder) as engine:
        for note in ("The payments queue filled up at 03:14 and PAY-2291 failed.",
                     "Deploys go out on Tuesdays after the change review.",
                     "The on-call rota swaps every Monday at noon."):
            remember(engine, ALICE, RememberRequest(content=note, path="ops"))
        query = "why did the payments deploy fail"
        vector = query_vector_later(engine, ALICE, query).result(60)
        given = recall_context(engine, ALICE, query, query_vector=vector)
        own = recall_context(engine, ALICE, query)
        assert [item["id"] for item in given["items"]] == [item["id"] for item in own["items"]]
        assert given["context_text"] == own["context_text"]


def test_only_sqlite_with_an_embedded_shard_is_read_on_the_event_loop(tmp_path: Path, fake_embedder):
    from .pg import fresh_database

    with MemoryEngine(settings_for(tmp_path / "edge", "edge"), embedder=fake_embedder) as engine:
        assert engine.reads_in_process
    with MemoryEngine(settings_for(tmp_path / "server", "qdrant"), embedder=fake_embedder) as engine:
        assert not engine.reads_in_process  # qdrant-client: a server across a network
    with fresh_database() as url, MemoryEngine(settings_for(tmp_path / "pg", "edge", url), embedder=fake_embedder) as engine:
        assert not engine.reads_in_process


def test_reads_answer_while_a_writer_holds_the_database(tmp_path: Path):
    """The 256th read starts the bookkeeping write while another process holds SQLite's write lock:
    every read, and /healthz, still answers before that lock is let go, and no count is lost."""
    data_dir = tmp_path / "data"
    server = RunningServer(data_dir, extra_env={"XMEMO_SQLITE_BUSY_TIMEOUT_MS": "600000"})
    reads = 300
    try:
        with server.client(server.admin_key) as http:
            stored = http.post("/api/v1/remember", json={"content": "the spare key is under the blue mat",
                                                         "path": "home"})
            assert stored.status_code == 201, stored.text
            memory_id = stored.json()["id"]
            holder = sqlite3.connect(data_dir / "memories.sqlite", timeout=60, isolation_level=None,
                                     check_same_thread=False)
            holder.execute("BEGIN IMMEDIATE")  # the write lock, until the reads are done
            reads_done = threading.Event()
            released_after_reads: list[bool] = []

            def hold() -> None:
                released_after_reads.append(reads_done.wait(120))
                holder.execute("ROLLBACK")
                holder.close()

            holding = threading.Thread(target=hold)
            holding.start()
            try:
                for _ in range(reads):
                    pack = http.post("/v1/recall/context", json={"query": "where is the spare key"})
                    assert pack.status_code == 200 and pack.json()["items"][0]["id"] == memory_id
                assert httpx.get(f"{server.url}/healthz", timeout=60).status_code == 200
            finally:
                reads_done.set()
                holding.join()
            assert released_after_reads == [True], "a read waited for the writer's lock"
    finally:
        server.stop()  # a clean stop writes the counts still pending
    with sqlite3.connect(data_dir / "memories.sqlite") as connection:
        count = connection.execute("SELECT access_count FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
    assert count == reads
