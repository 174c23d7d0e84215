"""Build the next generation of the embedded index from the system of record, in a process of its own.

    python -m retrieval.engine.rebuild TARGET DIMENSION < settings.json

engine/upkeep.py starts it: the serving process journals its writes meanwhile and installs the result
(index/edge.py `install`). Qdrant Edge holds the GIL for as long as it builds a graph (13 s at 30,000
points), so the build cannot share a process with requests. It reads the record (a SQLite reader never
waits for the writer; PostgreSQL is read as any replica reads it) and the embedding cache, writes only
TARGET, and prints one JSON line: the points written and the seconds taken. It runs at a lower
priority than the server it works for.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np

from ..domain import RetrievalSettings
from ..encoding import CachedEmbedder, Embedder, EmbeddingCache, SparseEncoder, open_embedder
from ..index import EdgeIndex
from ..storage import FreeSpace, MemoryStore
from .feed import IndexFeed

__all__ = ["NICENESS", "build"]

NICENESS = 10  # requests first: the build may take minutes, a recall must not wait for it
BATCH = 512


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
        raise NotImplementedError("a rebuild embeds no queries")


def build(settings: RetrievalSettings, target: Path, dimension: int, embedder_name: str) -> int:
    """Write every record's current version to a new shard at `target`, build its graph; returns the count."""
    space = FreeSpace(settings.data_dir, settings.disk_reserve_bytes)
    store = MemoryStore.open(settings.database_url or settings.sql_path, space, settings.sqlite_busy_timeout_ms)
    try:
        model = _ServersModel(settings, store.get_meta("embedding_model"), embedder_name, dimension)
        cache = EmbeddingCache(engine=store.sql_engine) if store.is_postgresql else EmbeddingCache(settings.cache_path)
        feed = IndexFeed(settings, CachedEmbedder(model, cache), SparseEncoder(), space)
        index = EdgeIndex(target, dimension, 1)
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
    target, dimension, embedder_name = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    os.nice(NICENESS)
    settings = RetrievalSettings.model_validate(json.loads(sys.stdin.read()))
    started = time.perf_counter()
    points = build(settings, target, dimension, embedder_name)
    print(json.dumps({"points": points, "seconds": round(time.perf_counter() - started, 3)}), flush=True)


if __name__ == "__main__":
    main()
