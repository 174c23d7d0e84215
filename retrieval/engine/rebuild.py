"""Build the next generation of the embedded index from the system of record, in a process of its own.

    python -m retrieval.engine.rebuild TARGET DIMENSION EMBEDDER LAYOUT PARENT_PID < settings.json

engine/upkeep.py starts it: the serving process journals its writes meanwhile and installs the result
(index/edge.py `install`). Qdrant Edge holds the GIL for as long as it builds a graph (13 s at 30,000
points), so the build cannot share a process with requests. It reads the record (a SQLite reader never
waits for the writer; PostgreSQL is read as any replica reads it) and the embedding cache, writes only
TARGET (never the record, never the cache: a vector it had to encode is one a forget may just have
removed), and prints one JSON line: the points written and the seconds taken. It runs at a lower
priority than the server it works for, dies with it, and refuses to build another layout than the
server's (code upgraded under a running server).
"""

from __future__ import annotations

import ctypes
import json
import os
import signal
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from ..domain import RetrievalSettings
from ..encoding import CachedEmbedder, Embedder, EmbeddingCache, SparseEncoder, completed, open_embedder
from ..index import EdgeIndex
from ..storage import FreeSpace, MemoryStore, open_engine
from .feed import IndexFeed
from .memory_engine import index_layout

__all__ = ["NICENESS", "build"]

NICENESS = 10  # requests first: the build may take minutes, a recall must not wait for it
BATCH = 512
PR_SET_PDEATHSIG = 1  # prctl(2)


class _ReadOnlyCache(EmbeddingCache):
    """The embedding cache, read and never written."""

    def put_many(self, model: str, pairs: Sequence[tuple[str, np.ndarray]]) -> None:
        return None


def _die_with(parent: int) -> None:
    """SIGKILL when the server exits, however it exits (Linux); a build for a server that is gone
    would race the next server's own build into the same directory."""
    if sys.platform.startswith("linux"):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent:  # it went before the request above took hold
        raise SystemExit("the server that started this rebuild is gone")


class _ServersModel:
    """The server's embedder as this process sees it: its name and dimension, which key the cache, and
    the configured model for a vector the cache lacks, loaded only then, and only if it is the same
    model (a server handed an embedder of its own, as tests do, has every vector in the cache)."""

    def __init__(self, settings: RetrievalSettings, stored: str | None, name: str, dimension: int) -> None:
        self._settings, self._stored = settings, stored
        self._name, self._dimension = name, dimension
        self._model: Embedder | None = None

    @property
    def name(self) -> str:
        return self._name

    @property
    def dimension(self) -> int:
        return self._dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        if self._model is None:
            model = open_embedder(self._settings, self._stored)
            if model.name != self._name:
                raise RuntimeError(
                    f"a vector is missing from the cache of {self._name}; this process embeds with {model.name}"
                )
            self._model = model
        return self._model.embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        vectors: np.ndarray = self.embed([text])
        return np.asarray(vectors[0], dtype=np.float32)

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        """A rebuild asks for no query; the Embedder contract is kept all the same, answered at once."""
        return completed(self.embed_query(text))


def build(settings: RetrievalSettings, target: Path, dimension: int, embedder_name: str, layout: str) -> int:
    """Write every record's current version to a new shard at `target`, build its graph; returns the count."""
    if index_layout(settings) != layout:
        raise SystemExit(f"the server builds the index layout {layout}, this code {index_layout(settings)}")
    space = FreeSpace(settings.data_dir, settings.disk_reserve_bytes)
    # the server migrated the record when it opened it; this process only reads it
    store = MemoryStore(open_engine(settings.database_url or settings.sql_path, settings.sqlite_busy_timeout_ms), space)
    try:
        model = _ServersModel(settings, store.get_meta("embedding_model"), embedder_name, dimension)
        cache = _ReadOnlyCache(engine=store.sql_engine) if store.is_postgresql else _ReadOnlyCache(settings.cache_path)
        feed = IndexFeed(settings, CachedEmbedder(model, cache), SparseEncoder(), space)
        index = EdgeIndex(target, dimension, 1, settings.index_vector_datatype)
        total = 0
        try:
            batch = []
            for memory in store.iterate(batch=BATCH):
                batch.append(memory)
                if len(batch) == BATCH:
                    index.upsert(feed.points(batch))
                    total += len(batch)
                    batch = []
            index.upsert(feed.points(batch))
            total += len(batch)
            index.flush()
            index.optimize()
        finally:
            index.close()
            cache.close()
        return total
    finally:
        store.close()


def main() -> None:
    target, dimension, embedder_name, layout, parent = sys.argv[1:6]
    _die_with(int(parent))
    os.umask(0o077)  # the data dir's modes (storage/data_dir.py), whoever started the server
    os.nice(NICENESS)
    settings = RetrievalSettings.model_validate(json.loads(sys.stdin.read()))
    started = time.perf_counter()
    points = build(settings, Path(target), int(dimension), embedder_name, layout)
    print(json.dumps({"points": points, "seconds": round(time.perf_counter() - started, 3)}), flush=True)


if __name__ == "__main__":
    main()
