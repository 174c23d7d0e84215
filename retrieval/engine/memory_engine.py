"""The memory engine: opens the stores, keeps the vector index in step with the system of record.

Every write is a unit of work (`writing`): it commits to SQL first, then reaches the index, then
records the version the index holds. A crash between those steps leaves records whose
`indexed_version` lags; `repair` (run at every start) and `reindex` (a full rebuild) bring the index
back from SQL and the embedding cache. A replica of a PostgreSQL store with its own embedded index
follows the shared change sequence instead (engine/replica.py).
"""

from __future__ import annotations

import contextlib
import logging
import secrets
import threading
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path

import numpy as np
from threadpoolctl import threadpool_limits

from ..domain import (
    IndexUnavailableError,
    Memory,
    ModelMismatchError,
    Phases,
    RetrievalSettings,
    StorageFullError,
    embed_digest,
    utc_now,
)
from ..encoding import CachedEmbedder, Embedder, EmbeddingCache, SparseEncoder, open_embedder
from ..index import EdgeIndex, IndexFilter, VectorIndex, open_index, remove_shards, shards_exist
from ..ranking import TokenCounter, token_counter
from ..storage import (
    MODEL_KEYS,
    FreeSpace,
    MemoryStore,
    UnitOfWork,
    lock_data_dir,
    map_sql_faults,
    replace_private,
    secure_data_dir,
)
from .feed import IndexFeed
from .read_tracking import ReadTracker
from .replica import ChangeFollower, HeldVersions
from .upkeep import IndexUpkeep

__all__ = ["INDEX_BATCH", "LAYOUT_KEY", "MemoryEngine", "index_layout"]

log = logging.getLogger("xmemo.engine")

INDEX_BATCH = 512
# What the index holds for a memory besides the model's vectors (domain/texts.py: the dense units, the
# BM25 text). An index built with another layout is rebuilt from the system of record: the embedded one
# at the next start by itself, a Qdrant server's collection by `xmemo reindex`. The embedded index keeps
# its layout in a file beside it (each process has its own), a server's is in the record's meta.
LAYOUT_KEY = "index_layout"
# A reindex notes the model it rebuilds with before it empties the index, and clears the note when the
# whole record is in: an index that a killed reindex left half in one model and half in another is never
# read (both models may give vectors of one dimension, so nothing else would tell). Where the layout is
# kept, the note is too: a file beside the embedded index, the record's meta for a server's collection.
REINDEX_KEY = "reindex_pending"


def index_layout(settings: RetrievalSettings) -> str:
    return f"dense={settings.dense_units};bm25=speaker,context,month;v2"


class MemoryEngine:
    """The stores of one data dir: SQL record, embedding cache, vector index. One process at a time."""

    def __init__(
        self,
        settings: RetrievalSettings,
        *,
        embedder: Embedder | None = None,
        clock: Callable[[], datetime] = utc_now,
        allow_model_change: bool = False,
    ) -> None:
        self.settings = settings
        self.clock = clock
        self._closed = False
        self.phases = Phases()
        secure_data_dir(settings.data_dir)
        self._lock_file = lock_data_dir(settings.data_dir)
        try:
            self._open(settings, embedder, clock, allow_model_change)
        except BaseException:  # a store that cannot open (a model mismatch, a fault) holds nothing
            self._abandon()
            raise

    def _open(
        self,
        settings: RetrievalSettings,
        embedder: Embedder | None,
        clock: Callable[[], datetime],
        allow_model_change: bool,
    ) -> None:
        # numpy's BLAS only (OpenBLAS): the encoders run on their own threads (encoder_threads)
        threadpool_limits(limits=settings.blas_threads, user_api="blas")
        self.space = FreeSpace(settings.data_dir, settings.disk_reserve_bytes)
        with self.phases("open the system of record"):
            self.store = MemoryStore.open(
                settings.database_url or settings.sql_path, self.space, settings.sqlite_busy_timeout_ms
            )
        inner = embedder or open_embedder(settings, self.store.get_meta("embedding_model"))
        # On PostgreSQL the cache is the record's table, shared by every replica (encoding/cache.py).
        cache = (
            EmbeddingCache(engine=self.store.sql_engine)
            if self.store.is_postgresql
            else EmbeddingCache(settings.cache_path)
        )
        self.embedder = CachedEmbedder(inner, cache)
        # Mode (b) of scaling out: a PostgreSQL record, an embedded index of this replica's own.
        self.follows = self.store.is_postgresql and not settings.qdrant_url
        self.held = HeldVersions()
        self.follower: ChangeFollower | None = None
        self.upkeep: IndexUpkeep | None = None
        self.sparse = SparseEncoder()
        self.feed = IndexFeed(settings, self.embedder, self.sparse, self.space)
        self.tokens: TokenCounter = token_counter()
        self.write_lock = threading.RLock()
        self.read_tracker = ReadTracker(self.store, clock)
        with self.phases("open the index"):
            self.index: VectorIndex = self._open_index(allow_model_change)
        if self.follows:
            store_id = self.store.ensure_meta("store_id", secrets.token_hex(8))
            self.follower = ChangeFollower(self, settings.data_dir / "follow.json", store_id)
        if not allow_model_change:
            try:
                with self.phases("check the index against the record"):
                    self.repair()
            except StorageFullError as error:  # reads still work; the next start or write catches up
                log.warning("index repair postponed: %s", error.message)
        if self.follower is not None and not allow_model_change:
            self.follower.start()

    @property
    def reads_in_process(self) -> bool:
        """Whether a read touches only this process's own files (SQLite in WAL mode and an embedded
        Qdrant Edge shard), never a network: readers there never wait for writers, and the read
        tracker writes its bookkeeping on a thread of its own. A service may run small such reads on
        its event loop (usecases/retrieve.py prepare_read, service/loop_reads.py); PostgreSQL and
        qdrant-client are read from worker threads."""
        return not self.store.is_postgresql and self.index.backend == "edge"

    # -- opening ------------------------------------------------------------------------------

    def _open_index(self, allow_model_change: bool) -> VectorIndex:
        pending = self._reindex_pending()
        if pending is not None and not allow_model_change:
            raise ModelMismatchError(
                f"a reindex with {pending} stopped before it finished: the index holds vectors of two models. "
                "Run `xmemo reindex` to finish it."
            )
        stored = self.store.get_metas(MODEL_KEYS)
        if "embedding_model" not in stored:  # a new store: replicas starting together agree on one writer
            stored = self.store.ensure_metas(self._model_meta())
        stored_model, stored_sparse = stored.get("embedding_model"), stored.get("sparse_model")
        if (stored_model != self.embedder.name or stored_sparse != self.sparse.name) and not allow_model_change:
            raise ModelMismatchError(
                f"this store was embedded with {stored_model} ({stored_sparse}); the configured model is "
                f"{self.embedder.name} ({self.sparse.name}). Run `xmemo reindex` to re-embed it."
            )
        dimension = int(stored.get("embedding_dimension") or self.embedder.dimension)
        layout = index_layout(self.settings)
        if not allow_model_change and not self.settings.qdrant_url and self._edge_layout() != layout:
            if shards_exist(self.settings.edge_path):
                log.info("the embedded index was built with another layout; rebuilding it from the system of record")
            fresh = self._fresh_edge_index(dimension)
            self._layout_file.write_text(layout + "\n", encoding="utf-8")
            return fresh
        if not allow_model_change and self.settings.qdrant_url:
            known = self.store.get_metas((LAYOUT_KEY,))
            if LAYOUT_KEY not in known and self.store.count() == 0:  # nothing indexed yet: this layout
                known = self.store.ensure_metas({LAYOUT_KEY: layout})
            if known.get(LAYOUT_KEY) != layout:  # a store of a release before the layout was recorded too
                built = known.get(LAYOUT_KEY) or "of an earlier release"
                raise ModelMismatchError(
                    f"the Qdrant collection was built with the index layout {built}; this release builds "
                    f"{layout}. Run `xmemo reindex` to rebuild it."
                )
        if allow_model_change:
            if dimension != self.embedder.dimension and not self.settings.qdrant_url:
                log.info(
                    "the model's vectors have %d dimensions, the index's %d: starting a new index",
                    self.embedder.dimension,
                    dimension,
                )
                return self._fresh_edge_index(self.embedder.dimension)
            dimension = self.embedder.dimension
        index: VectorIndex | None = None
        try:
            index = open_index(self.settings, dimension)
            index.verify()
            return index
        except IndexUnavailableError as error:
            if self.settings.qdrant_url:
                raise
            log.warning("the embedded index is damaged (%s); rebuilding it from the system of record", error.message)
            if index is not None:
                with contextlib.suppress(IndexUnavailableError):
                    index.close()
            return self._fresh_edge_index(dimension)

    @property
    def _layout_file(self) -> Path:
        return self.settings.data_dir / "index-layout"

    def _edge_layout(self) -> str | None:
        """The layout the embedded index was built with; None when there is no index or it predates the file."""
        if not shards_exist(self.settings.edge_path):
            return None
        try:
            return self._layout_file.read_text(encoding="utf-8").strip()
        except FileNotFoundError:
            return None

    def _record_layout(self) -> None:
        layout = index_layout(self.settings)
        if self.settings.qdrant_url:
            self.store.set_metas({LAYOUT_KEY: layout})
        else:
            self._layout_file.write_text(layout + "\n", encoding="utf-8")

    @property
    def _reindex_file(self) -> Path:
        return self.settings.data_dir / "reindex-pending"

    def _reindex_pending(self) -> str | None:
        """The model of a reindex that began and has not finished, or None."""
        if self.settings.qdrant_url:
            return self.store.get_metas((REINDEX_KEY,)).get(REINDEX_KEY) or None
        try:
            return self._reindex_file.read_text(encoding="utf-8").strip() or None
        except FileNotFoundError:
            return None

    def _note_reindex(self, model: str) -> None:
        """On disk before the index is emptied (a crash after it leaves the note)."""
        if self.settings.qdrant_url:
            self.store.set_metas({REINDEX_KEY: model})
        else:
            replace_private(self._reindex_file, model + "\n")

    def _reindex_finished(self) -> None:
        """The record names the model the whole index now holds; then the note goes."""
        if self.settings.qdrant_url:
            self.store.set_metas({**self._model_meta(), REINDEX_KEY: ""})
            return
        self.store.set_metas(self._model_meta())
        self._reindex_file.unlink(missing_ok=True)

    def _model_meta(self) -> dict[str, str]:
        """What the record says this store is embedded with (storage/store.py MODEL_KEYS)."""
        return {
            "embedding_model": self.embedder.name,
            "embedding_dimension": str(self.embedder.dimension),
            "sparse_model": self.sparse.name,
        }

    def _fresh_edge_index(self, dimension: int) -> VectorIndex:
        """An empty embedded index in place of the old one; `repair` then fills it from SQL."""
        remove_shards(self.settings.edge_path)
        if self.follows:
            (self.settings.data_dir / "follow.json").unlink(missing_ok=True)
        else:
            self.store.clear_indexed()
        return open_index(self.settings, dimension)

    def warm(self) -> None:
        """Load the model and touch the index with one real query embedding and one real search.

        The first recall after a start took 14 s (model load, query graph tracing, index pages)
        while /readyz already said ready; the service calls this before it reports ready."""
        query = "warm up the model and the index"
        with self.phases("load the model"):
            dense = self.embedder.inner.embed_query(query)  # the inner model: no cache entry for this text
            self.embedder.inner.embed([query])
        with self.phases("first search"):
            self.index.search(dense, self.sparse.query(query), IndexFilter(visibility=("owner:",)), 1, 1)
        with self.phases("load the token counter"):
            self.tokens.count(query)

    def _abandon(self) -> None:
        """Close what a failed open had opened, newest first, and let the data dir go."""
        for name in ("index", "embedder", "store"):
            opened = self.__dict__.get(name)
            if opened is not None:
                with contextlib.suppress(Exception):
                    (opened.cache if name == "embedder" else opened).close()
        self._lock_file.close()

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self.upkeep is not None:
            self.upkeep.stop()
        if self.follower is not None:
            self.follower.stop()
        self.read_tracker.close()
        self.index.close()
        self.embedder.cache.close()
        self.store.close()
        self._lock_file.close()

    def start_upkeep(self) -> None:
        """Keep the embedded index fast as it grows, for a process that serves for long (engine/upkeep.py).
        A Qdrant server optimizes its own collections."""
        if self.upkeep is None and isinstance(self.index, EdgeIndex):
            self.upkeep = IndexUpkeep(
                lambda: self.index,
                self.settings,
                self.embedder.name,
                index_layout(self.settings),
                forgets_of=self.store.forget_count,
            )
            self.upkeep.start()

    def after_forget(self) -> None:
        """Deleted points are out of every search already; get their vectors off the disk too: the
        upkeep's next generation leaves them behind, or, in a process without upkeep, `optimize` now."""
        if self.upkeep is not None and self.upkeep.running:
            self.upkeep.after_forget()
            return
        self.index.flush()
        self.index.optimize()

    def __enter__(self) -> MemoryEngine:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    # -- writing ------------------------------------------------------------------------------

    @contextlib.contextmanager
    def writing(self) -> Iterator[UnitOfWork]:
        """The one way to change the record: under this process's write lock, one transaction
        (storage/unit_of_work.py); once it commits, the index takes what changed. Raising rolls back."""
        with self.write_lock:
            with self.store.unit_of_work() as work:
                yield work
            if work.deleted:
                try:
                    self.index.delete(work.deleted)
                except IndexUnavailableError as error:
                    # The record no longer holds them, and reads take only what it holds: the change
                    # happened, so say so; the index drops the points when it is repaired (at the next
                    # start, or `xmemo reindex`).
                    log.warning("removed from the record, not yet from the index (%s): repaired later", error.message)
                self.held.forget(work.deleted)
            changed = list(work.changed.values())
            if work.recontext:
                changed += [m for m in self.store.get_many(sorted(work.recontext - set(work.changed))).values()]
            if changed:
                given = [work.vectors[m.id] for m in changed if m.id in work.vectors]
                self.sync(changed, np.stack(given) if len(given) == len(changed) else None)

    # -- keeping the index in step ------------------------------------------------------------

    def vectors_for(self, memories: Sequence[Memory]) -> np.ndarray:
        """Dense vectors of these memories, from the cache or encoded (engine/feed.py)."""
        return self.feed.vectors_for(memories)

    def whole_vectors(self, memories: Sequence[Memory]) -> dict[str, np.ndarray]:
        """The whole-text vectors of these memories by id, never encoding: from the embedding cache (a
        read of float32 bytes), from the index for what the cache lacks. Reading 16 of them out of an
        Edge shard, which hands each back as Python lists of floats, was 5.9 % of a loaded server's GIL."""
        digests = {m.id: embed_digest(m) for m in memories}
        with map_sql_faults("the embedding cache failed"):
            by_digest = self.embedder.cached_vectors(sorted(set(digests.values())))
        found = {memory_id: by_digest[digest] for memory_id, digest in digests.items() if digest in by_digest}
        missing = [m.id for m in memories if m.id not in found]
        if missing:
            found.update(self.index.dense_vectors(missing))
        return found

    def sync(self, memories: Sequence[Memory], vectors: np.ndarray | None = None) -> None:
        """Write these records' current versions to the index, then record that it holds them
        (INDEX_BATCH at a time)."""
        for start in range(0, len(memories), INDEX_BATCH):
            batch = memories[start : start + INDEX_BATCH]
            points = self.feed.points(batch, vectors[start : start + INDEX_BATCH] if vectors is not None else None)
            self.space.check()
            self.index.upsert(points)
            self.held.record(batch)
            if not self.follows:  # a replica's index is its own: the shared row cannot say what it holds
                self.store.mark_indexed((m.id, m.version) for m in batch)

    def repair(self) -> int:
        """Index every record whose current version the index lacks; reconcile counts. Returns fixes.

        A replica (self.follows) replays the change sequence from its saved mark instead."""
        if self.follower is not None:
            fixed = self.follower.catch_up()
            if self.index.count() != self.store.count():
                fixed += self._reconcile()
            return fixed
        fixed = 0
        while True:
            rows = self.store.unindexed(INDEX_BATCH)
            if not rows:
                break
            self.sync([memory for memory, _ in rows])
            fixed += len(rows)
        if self.index.count() != self.store.count():
            fixed += self._reconcile()
        if fixed:
            self.index.flush()
            log.info("repaired %d index entries", fixed)
        return fixed

    def reconcile_all(self) -> int:
        """Index every record's current version and delete strays (a replica without a usable mark)."""
        return self._sync_every_record() + self._reconcile()

    def _sync_every_record(self, progress: Callable[[int], None] | None = None) -> int:
        """Write every record's current version to the index, INDEX_BATCH at a time; returns the count."""
        total = 0
        batch: list[Memory] = []
        for memory in self.store.iterate(batch=INDEX_BATCH):
            batch.append(memory)
            if len(batch) == INDEX_BATCH:
                self.sync(batch)
                total += len(batch)
                batch = []
                if progress:
                    progress(total)
        self.sync(batch)
        total += len(batch)
        if progress:
            progress(total)
        return total

    def _reconcile(self) -> int:
        """Make the index hold exactly the SQL ids: add the missing, delete the strays."""
        sql_ids = {m.id for m in self.store.iterate()}
        index_ids = set(self.index.iter_ids())
        strays = sorted(index_ids - sql_ids)
        self.index.delete(strays)
        missing = sorted(sql_ids - index_ids)
        for start in range(0, len(missing), INDEX_BATCH):
            chunk = self.store.get_many(missing[start : start + INDEX_BATCH])
            self.sync(list(chunk.values()))
        return len(strays) + len(missing)

    def reindex(self, progress: Callable[[int], None] | None = None) -> int:
        """Rebuild the whole index from SQL with the configured model; returns the records indexed."""
        with self.write_lock:
            dimension = self.embedder.dimension
            self._note_reindex(self.embedder.name)
            if self.settings.qdrant_url:
                self.index.close()
            else:  # a damaged shard may fail to close; it is thrown away anyway
                with contextlib.suppress(IndexUnavailableError):
                    self.index.close()
                remove_shards(self.settings.edge_path)
            self.index = open_index(self.settings, dimension)
            self.index.reset()
            mark = self.store.changes.last() if self.follows else 0
            forgets = self.store.forget_count()  # every one of them is gone from the new index
            if not self.follows:
                self.store.clear_indexed()
            total = self._sync_every_record(progress)
            self.index.flush()
            self.index.optimize()
            if isinstance(self.index, EdgeIndex):  # so the upkeep does not rebuild for them again
                IndexUpkeep.note_purged(self.index, forgets)
            self._record_layout()
            self._reindex_finished()
            if self.follower is not None:  # follow on from before the rebuild (replaying is idempotent)
                self.follower.seq = mark
                self.follower.checkpoint()
            return total
