"""The embedding cache: vectors keyed by (model, the tenant's digest of a text), so no text is encoded twice.

Embedded (SQLite), it is a file of its own beside the record, written by the one process that owns
the data dir. On PostgreSQL it is the record's `embeddings` table (migration m004): every replica
reads what any replica encoded, so a text is encoded once per tenant, not once per replica.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from concurrent.futures import Future
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, delete, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert

from ..domain import tenant_digest, text_sha256
from ..storage import embeddings, private_file
from .base import Embedder, completed

__all__ = ["CachedEmbedder", "EmbeddingCache"]

log = logging.getLogger("xmemo.cache")

_CHUNK = 500  # keys per statement, under SQLite's bound-parameter limit


def _chunks(keys: Sequence[str]) -> list[list[str]]:
    unique = list(dict.fromkeys(keys))
    return [unique[start : start + _CHUNK] for start in range(0, len(unique), _CHUNK)]


class EmbeddingCache:
    """Vectors (float32 bytes) keyed by (model name, digest): a SQLite file, or `engine`'s table."""

    def __init__(self, path: Path | None = None, *, engine: Engine | None = None) -> None:
        if (path is None) == (engine is None):
            raise ValueError("an embedding cache lives in a file or in a database, exactly one of them")
        self.path = private_file(path) if path is not None else None
        self.engine = engine
        self._local = threading.local()
        if self.path is not None:
            with self._connection() as connection:
                connection.execute(
                    "CREATE TABLE IF NOT EXISTS embeddings (model TEXT NOT NULL, sha256 TEXT NOT NULL, "
                    "vector BLOB NOT NULL, PRIMARY KEY (model, sha256)) WITHOUT ROWID"
                )

    def _connection(self) -> sqlite3.Connection:
        connection = getattr(self._local, "connection", None)
        if connection is None:
            connection = sqlite3.connect(self.path, timeout=30, check_same_thread=False)  # type: ignore[arg-type]
            connection.execute("PRAGMA journal_mode=WAL")
            connection.execute("PRAGMA synchronous=NORMAL")
            connection.execute("PRAGMA secure_delete=ON")  # a forgotten vector leaves no free page behind
            self._local.connection = connection
        return connection

    def get_many(self, model: str, digests: Sequence[str]) -> dict[str, np.ndarray]:
        found: dict[str, np.ndarray] = {}
        for chunk in _chunks(digests):
            for digest, blob in self._select(model, chunk):
                found[digest] = np.frombuffer(blob, dtype=np.float32)
        return found

    def _select(self, model: str, chunk: list[str]) -> list[tuple[str, bytes]]:
        if self.engine is not None:
            c = embeddings.c
            with self.engine.connect() as connection:
                rows = connection.execute(select(c.sha256, c.vector).where(c.model == model, c.sha256.in_(chunk)))
                return [(row[0], bytes(row[1])) for row in rows]
        marks = ",".join("?" * len(chunk))
        return list(
            self._connection().execute(
                f"SELECT sha256, vector FROM embeddings WHERE model = ? AND sha256 IN ({marks})", [model, *chunk]
            )
        )

    def put_many(self, model: str, items: Sequence[tuple[str, np.ndarray]]) -> None:
        """Store vectors; a key already there (another writer, another replica) is kept as it is."""
        if not items:
            return
        rows = [(model, digest, np.asarray(v, dtype=np.float32).tobytes()) for digest, v in items]
        if self.engine is not None:
            statement = pg_insert(embeddings).on_conflict_do_nothing(index_elements=["model", "sha256"])
            with self.engine.begin() as connection:
                connection.execute(statement, [{"model": m, "sha256": d, "vector": v} for m, d, v in rows])
            return
        with self._connection() as connection:
            connection.executemany("INSERT OR IGNORE INTO embeddings (model, sha256, vector) VALUES (?, ?, ?)", rows)

    def batches(self, batch: int = 1000) -> Iterator[list[tuple[str, str, bytes]]]:
        """Every (model, digest, vector bytes), a batch at a time, in key order (migrate-store)."""
        after = ("", "")
        while True:
            if self.engine is not None:
                c = embeddings.c
                with self.engine.connect() as connection:
                    rows = [
                        (r[0], r[1], bytes(r[2]))
                        for r in connection.execute(
                            select(c.model, c.sha256, c.vector)
                            .where(tuple_(c.model, c.sha256) > after)
                            .order_by(c.model, c.sha256)
                            .limit(batch)
                        )
                    ]
            else:
                rows = list(
                    self._connection().execute(
                        "SELECT model, sha256, vector FROM embeddings WHERE (model, sha256) > (?, ?) "
                        "ORDER BY model, sha256 LIMIT ?",
                        [*after, batch],
                    )
                )
            if not rows:
                return
            yield rows
            after = (rows[-1][0], rows[-1][1])

    def put_rows(self, rows: Sequence[tuple[str, str, bytes]]) -> None:
        """Store (model, digest, vector bytes) rows as `batches` gives them; present keys are kept."""
        by_model: dict[str, list[tuple[str, np.ndarray]]] = {}
        for model, digest, blob in rows:
            by_model.setdefault(model, []).append((digest, np.frombuffer(blob, dtype=np.float32)))
        for model, items in by_model.items():
            self.put_many(model, items)

    def delete_many(self, digests: Sequence[str]) -> None:
        """Drop every model's vector of these keys (forget: nothing of the text stays behind). The SQLite
        file overwrites what it frees (secure_delete) and its write-ahead log is emptied, so that neither
        keeps the deleted rows' bytes until the next automatic checkpoint."""
        for chunk in _chunks(digests):
            if self.engine is not None:
                with self.engine.begin() as connection:
                    connection.execute(delete(embeddings).where(embeddings.c.sha256.in_(chunk)))
                continue
            with self._connection() as connection:
                connection.executemany("DELETE FROM embeddings WHERE sha256 = ?", [(d,) for d in chunk])
        if self.engine is None and digests:
            busy = self._connection().execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()[0]
            if busy:
                log.warning("the embedding cache's write-ahead log could not be emptied now; the next checkpoint does")

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None


class CachedEmbedder:
    """An Embedder that serves repeated texts from the cache and encodes only the new ones."""

    QUERY_CACHE_SIZE = 1024

    def __init__(self, inner: Embedder, cache: EmbeddingCache) -> None:
        self.inner = inner
        self.cache = cache
        self._queries: OrderedDict[str, np.ndarray] = OrderedDict()
        self._queries_lock = threading.Lock()

    @property
    def name(self) -> str:
        return self.inner.name

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self.embed_with_digests(texts, [text_sha256(t) for t in texts])

    def embed_query(self, text: str, tenant: str | None = None) -> np.ndarray:
        return self.embed_query_later(text, tenant).result()

    def embed_query_later(self, text: str, tenant: str | None = None) -> Future[np.ndarray]:
        """Queries are kept in an in-memory LRU, not on disk: agents repeat them, but they are many.

        The LRU is keyed by the asking tenant (`tenant_of(owner_id, None)`), so that one tenant's
        queries never make another's fast; a query without a tenant is encoded and not kept.
        """
        if tenant is None:
            return self.inner.embed_query_later(text)
        key = tenant_digest(tenant, text)
        with self._queries_lock:
            vector = self._queries.get(key)
            if vector is not None:
                self._queries.move_to_end(key)
                return completed(vector)
        later = self.inner.embed_query_later(text)
        later.add_done_callback(lambda done: self._keep_query(key, done))
        return later

    def clear_queries(self) -> None:
        """Drop every kept query vector (a forget: the keys do not say whose text they hold)."""
        with self._queries_lock:
            self._queries.clear()

    def _keep_query(self, key: str, done: Future[np.ndarray]) -> None:
        if done.cancelled() or done.exception() is not None:
            return
        with self._queries_lock:
            self._queries[key] = done.result()
            if len(self._queries) > self.QUERY_CACHE_SIZE:
                self._queries.popitem(last=False)

    def embed_with_digests(self, texts: Sequence[str], digests: Sequence[str]) -> np.ndarray:
        cached = self.cache.get_many(self.name, digests)
        missing = {d: t for t, d in zip(texts, digests, strict=True) if d not in cached}
        if missing:
            fresh = self.inner.embed(list(missing.values()))
            pairs = list(zip(missing.keys(), fresh, strict=True))
            self.cache.put_many(self.name, pairs)
            cached.update(pairs)
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        return np.stack([cached[d] for d in digests]).astype(np.float32, copy=False)

    def cached_vectors(self, digests: Sequence[str]) -> dict[str, np.ndarray]:
        """Stored vectors only, never encoding (the compactor reads these)."""
        return self.cache.get_many(self.name, digests)
