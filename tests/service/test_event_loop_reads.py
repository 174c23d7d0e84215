"""Reads on the service's event loop: the query vector is awaited, never waited for on a thread.

recall_context and search check the request, await the query's vector (the model's thread batches
it with every other request's texts), then run the read on the event loop when it stays in this
process (SQLite, an embedded Qdrant Edge shard, no `%` path filter). So nothing such a read does may
wait: the read bookkeeping is written on a thread of its own, and a caller that goes away before its
batch runs must not stop the model's thread.
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from concurrent.futures import CancelledError, Future
from pathlib import Path

import httpx
import numpy as np
import pytest

from retrieval import (
    LightRecallRequest,
    MemoryEngine,
    PreparedRead,
    Principal,
    RecallRequest,
    RememberRequest,
    SearchRequest,
    prepare_read,
    recall_context,
    remember,
)
from retrieval.domain import tenant_of
from retrieval.encoding import CachedEmbedder, EmbeddingCache, InferenceBatcher, completed
from retrieval.engine import FLUSH_EVERY_READS, ReadTracker
from retrieval.usecases import ReadRequest
from service.loop_reads import read_for_query
from tests.support import FakeEmbedder, RunningServer, in_process, pack_for, settings_for

ALICE = Principal(owner_id="alice")


class _Model:
    """A model stand-in for the batcher: records each batch, and holds the first until released."""

    def __init__(self) -> None:
        self.batches: list[list[str]] = []
        self.lanes: list[bool] = []  # whether each batch was marked as queries
        self.running = threading.Event()
        self.release = threading.Event()

    def __call__(self, texts: list[str], queries: bool, _single: bool) -> np.ndarray:
        self.batches.append(list(texts))
        self.lanes.append(queries)
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


def test_a_query_waits_for_at_most_one_batch_of_documents_and_documents_still_get_their_turn():
    """Reads' queries and writes' notes wait in two lanes that the model's thread takes in turn: with
    one queue a recall's query waited behind every write queued before it."""
    model = _Model()
    batcher = InferenceBatcher(model)
    first = batcher.submit(["note 0"], False)
    assert model.running.wait(60)  # the model's thread is inside the first batch (documents)
    later = [
        batcher.submit(["note 1", "note 1b"], False),
        batcher.embed_query_later("query 1"),
        batcher.submit(["note 2"], False),
        batcher.embed_query_later("query 2"),
    ]
    model.release.set()
    assert first.result(60).tolist() == [[6.0, 1.0]]
    assert [np.asarray(f.result(60)).tolist() for f in later] == [
        [[6.0, 1.0], [7.0, 1.0]],
        [7.0, 1.0],
        [[6.0, 1.0]],
        [7.0, 1.0],
    ]
    # the queries queued after notes go first; then the notes, all in one batch
    assert model.batches == [["note 0"], ["query 1", "query 2"], ["note 1", "note 1b", "note 2"]]
    assert model.lanes == [False, True, False]  # a model with a query prefix knows which batch is which

    model = _Model()
    batcher = InferenceBatcher(model)
    first = batcher.embed_query_later("query 0")
    assert model.running.wait(60)
    later = [batcher.submit(["note 1"], False), batcher.embed_query_later("query 1"), batcher.submit(["note 2"], False)]
    model.release.set()
    for future in [first, *later]:
        future.result(60)
    # after a batch of queries the waiting notes take their turn, however many queries are queued
    assert model.batches == [["query 0"], ["note 1", "note 2"], ["query 1"]]

    model = _Model()
    batcher = InferenceBatcher(model)
    first = batcher.embed_query_later("query 0")
    assert model.running.wait(60)
    size = InferenceBatcher.DOCUMENT_BATCH_TEXTS
    lines = [f"line {i}" for i in range(3 * size)]
    import_job = batcher.submit(lines, False)
    writes = [batcher.submit([f"note {i}"] * (size // 2), False) for i in range(3)]
    model.release.set()
    for future in [first, *writes]:
        future.result(60)
    # a job larger than a document batch runs a batch at a time, its shortest texts first; the
    # others fill batches of at most that many texts; every caller gets its vectors in its own order
    assert [len(batch) for batch in model.batches] == [1, size, size, size, size, size // 2]
    assert model.batches[1] == lines[:size] and sorted(model.batches[1] + model.batches[2]) == sorted(lines[:16])
    assert import_job.result(60).tolist() == [[float(len(line)), 1.0] for line in lines]
    assert [(r.queries, r.texts) for r in batcher.recent_batches()] == [
        (True, 1),
        (False, size),
        (False, size),
        (False, size),
        (False, size),
        (False, size // 2),
    ]


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
        for note in (
            "The payments queue filled up at 03:14 and PAY-2291 failed.",
            "Deploys go out on Tuesdays after the change review.",
            "The on-call rota swaps every Monday at noon.",
        ):
            remember(engine, ALICE, RememberRequest(content=note, path="ops"))
        query = "why did the payments deploy fail"
        prepared = prepare_read(engine, ALICE, RecallRequest(query=query))
        prepared.vector.result(60)  # awaited, as the service awaits it
        given = recall_context(engine, prepared)
        engine.embedder._queries.clear()  # the read below embeds its own query again
        own = pack_for(engine, ALICE, query)
        assert [item.id for item in given.items] == [item.id for item in own.items]
        assert given.context_text == own.context_text


def test_a_read_given_a_vector_never_asks_the_model(tmp_path: Path):
    model = _Counting()
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=model) as engine:
        remember(engine, ALICE, RememberRequest(content="the spare key is under the blue mat", path="home"))
        request = RecallRequest(query="spare key")
        vector = completed(model.embed(["spare key"])[0])
        pack = recall_context(engine, PreparedRead(request, request.filters_for(ALICE), vector, in_process=False))
        assert len(pack.items) == 1 and model.queries == []


def test_only_small_reads_of_this_process_files_run_on_the_event_loop(tmp_path: Path, fake_embedder):
    """Which thread a read runs on: the loop's for a pack of up to 8 items on SQLite with an Edge
    shard; a worker's for a larger pack, a search (it reads every candidate), a `%` path filter
    (resolved by a scan in SQL), qdrant-client and PostgreSQL."""
    from tests.support import fresh_database

    def where(_engine: MemoryEngine, _read: PreparedRead[ReadRequest]) -> threading.Thread:
        return threading.current_thread()

    def runs_on_loop(engine: MemoryEngine, request: ReadRequest | None = None) -> bool:
        request = request or RecallRequest(query="spare key")
        return asyncio.run(read_for_query(engine, ALICE, request, where)) is threading.current_thread()

    with MemoryEngine(settings_for(tmp_path / "edge", "edge"), embedder=fake_embedder) as engine:
        assert runs_on_loop(engine) and runs_on_loop(engine, RecallRequest(query="spare key", path_filter="home/keys"))
        assert not runs_on_loop(engine, RecallRequest(query="spare key", path_filter="home/%"))
        assert not runs_on_loop(engine, RecallRequest(query="spare key", max_items=9))
        assert not runs_on_loop(engine, SearchRequest(query="spare key"))  # a search reads every candidate
        assert runs_on_loop(engine, LightRecallRequest(query="spare key", limit=8))
    with MemoryEngine(settings_for(tmp_path / "local", "qdrant"), embedder=fake_embedder) as engine:
        assert not runs_on_loop(engine)  # qdrant-client (local mode here; a server elsewhere)
    with (
        fresh_database() as url,
        MemoryEngine(settings_for(tmp_path / "pg", "edge", url), embedder=fake_embedder) as engine,
    ):
        assert not runs_on_loop(engine)


def test_a_refused_read_never_runs_the_model(tmp_path: Path):
    model = _Counting()
    with in_process(tmp_path / "data", embedder=model) as app:
        client, _engine, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        asked = len(model.queries)  # the warm-up's query
        writer_only = _key_with(tmp_path / "data", scopes=("memory:write",))
        for headers, body, status in (
            ({"Authorization": f"Bearer {writer_only}"}, {"query": "spare key"}, 403),
            ({"Authorization": f"Bearer {key}"}, {"query": "spare key", "team_id": "not-mine"}, 403),
            ({"Authorization": f"Bearer {key}"}, {"query": "spare key", "path_filter": "   "}, 422),
        ):
            assert client.post("/v1/recall/context", json=body, headers=headers).status_code == status
        assert len(model.queries) == asked


def _key_with(data_dir: Path, scopes: tuple[str, ...]) -> str:
    from service.api_keys import KeyStore

    keys = KeyStore.open(data_dir)
    try:
        return keys.create("alice", scopes=scopes).key
    finally:
        keys.close()


def test_bookkeeping_behind_a_held_lock_loses_nothing_and_close_waits_for_it(tmp_path: Path, fake_embedder):
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=fake_embedder) as engine:
        stored = remember(engine, ALICE, RememberRequest(content="the spare key is under the mat", path="home"))
        tracker = ReadTracker(engine.store, engine.clock)
        holder = sqlite3.connect(engine.settings.sql_path, timeout=60, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        for _ in range(FLUSH_EVERY_READS):  # the last one starts the background write, which waits
            tracker.record([stored.memory.id], used=[stored.memory.id])
        writing = [t for t in threading.enumerate() if t.name == "xmemo-read-tracking"]
        assert writing and writing[0].is_alive(), "the read that started the write waited for it"
        assert engine.store.get(stored.memory.id).access_count == 0  # type: ignore[union-attr]
        holder.execute("ROLLBACK")
        holder.close()
        tracker.record([stored.memory.id], used=[stored.memory.id])  # after the started write, still counted
        tracker.close()
        assert engine.store.get(stored.memory.id).access_count == FLUSH_EVERY_READS + 1  # type: ignore[union-attr]


def test_reads_answer_while_a_writer_holds_the_database(tmp_path: Path):
    """Reads start the bookkeeping write (every 5 s or 256 reads) while another process holds
    SQLite's write lock: every read, and /healthz, still answers before that lock is let go, and no
    count is lost."""
    data_dir = tmp_path / "data"
    server = RunningServer(data_dir, extra_env={"XMEMO_SQLITE_BUSY_TIMEOUT_MS": "600000"})
    reads = 300
    try:
        with httpx.Client(
            base_url=server.url, headers={"Authorization": f"Bearer {server.admin_key}"}, timeout=120
        ) as http:
            stored = http.post(
                "/api/v1/remember", json={"content": "the spare key is under the blue mat", "path": "home"}
            )
            assert stored.status_code == 201, stored.text
            memory_id = stored.json()["id"]
            holder = sqlite3.connect(
                data_dir / "memories.sqlite", timeout=60, isolation_level=None, check_same_thread=False
            )
            holder.execute("BEGIN IMMEDIATE")  # the write lock, until the reads are done
            reads_done = threading.Event()
            released_after_reads: list[bool] = []

            def hold() -> None:
                released_after_reads.append(reads_done.wait(30))  # then let go: a waiting read would finish
                holder.execute("ROLLBACK")
                holder.close()

            holding = threading.Thread(target=hold)
            holding.start()
            try:
                for _ in range(reads):  # a pack notes its question; a fetch by id counts a use
                    pack = http.post("/v1/recall/context", json={"query": "where is the spare key"})
                    assert pack.status_code == 200 and pack.json()["items"][0]["id"] == memory_id
                    assert http.get(f"/api/v1/memories/{memory_id}").status_code == 200
                assert httpx.get(f"{server.url}/healthz", timeout=60).status_code == 200
            finally:
                reads_done.set()
                holding.join()
            assert released_after_reads == [True], "a read waited for the writer's lock"
    finally:
        server.stop()  # a clean stop writes the counts still pending
    with sqlite3.connect(data_dir / "memories.sqlite") as connection:
        count = connection.execute("SELECT access_count FROM memories WHERE id = ?", (memory_id,)).fetchone()[0]
        noted = connection.execute("SELECT count(*) FROM read_questions WHERE memory_id = ?", (memory_id,)).fetchone()
    assert count == reads and noted[0] == 1


def test_queries_full_of_dates_leave_the_event_loop_free(tmp_path: Path):
    """A server asked for packs on the longest query full of date-like numbers, four at a time, while
    /healthz is asked again and again: date phrases are read from a bounded stretch of each query and
    the model runs on its own thread, so no recall holds the event loop and /healthz answers at once
    throughout. The bound, half a second, is several times what /healthz waits here (0.13 s at most,
    four recalls in flight) and below what it waited when the whole query was parsed (0.7 s; 4.7 s
    per query before the patterns were linear, issue 46)."""
    from concurrent.futures import ThreadPoolExecutor
    from time import perf_counter, sleep

    query = ("12/11 1/2 3/4 " * 700)[:8192]
    server = RunningServer(tmp_path / "data")
    try:
        headers = {"Authorization": f"Bearer {server.admin_key}"}
        stored = httpx.post(
            f"{server.url}/api/v1/remember", headers=headers, json={"content": "12/11: shipped", "path": "p"}
        )
        assert stored.status_code == 201, stored.text
        done = threading.Event()
        waits: list[float] = []

        def probe() -> None:
            with httpx.Client(base_url=server.url, timeout=60) as http:
                while not done.is_set():
                    started = perf_counter()
                    assert http.get("/healthz").status_code == 200
                    waits.append(perf_counter() - started)
                    sleep(0.005)

        def recall(_: int) -> int:
            with httpx.Client(base_url=server.url, headers=headers, timeout=120) as http:
                return http.post("/v1/recall/context", json={"query": query, "max_items": 4}).status_code

        prober = threading.Thread(target=probe)
        prober.start()
        try:
            with ThreadPoolExecutor(4) as pool:
                statuses = list(pool.map(recall, range(40)))
        finally:
            done.set()
            prober.join()
    finally:
        server.stop()
    assert statuses == [200] * 40
    assert len(waits) >= 5 and max(waits) < 0.5, sorted(waits)[-5:]
