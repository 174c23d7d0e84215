"""The embedding cache: vectors keyed by (model, the tenant's digest of a text), so no text is encoded twice.

Embedded (SQLite), it is a file of its own beside the record, written by the one process that owns
the data dir. On PostgreSQL it is the record's `embeddings` table (migration m004): every replica
reads what any replica encoded, so a text is encoded once per tenant, not once per replica.
"""

from __future__ import annotations

import sqlite3
import threading
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
from sqlalchemy import Engine, delete, select, tuple_
from sqlalchemy.dialects.postgresql import insert as pg_insert

from .permissions import private_file
from .schema import embeddings

__all__ = ["EmbeddingCache"]

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
        return list(self._connection().execute(
            f"SELECT sha256, vector FROM embeddings WHERE model = ? AND sha256 IN ({marks})", [model, *chunk]
        ))

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
                    rows = [(r[0], r[1], bytes(r[2])) for r in connection.execute(
                        select(c.model, c.sha256, c.vector).where(tuple_(c.model, c.sha256) > after)
                        .order_by(c.model, c.sha256).limit(batch))]
            else:
                rows = list(self._connection().execute(
                    "SELECT model, sha256, vector FROM embeddings WHERE (model, sha256) > (?, ?) "
                    "ORDER BY model, sha256 LIMIT ?", [*after, batch]))
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
        """Drop every model's vector of these keys (forget: nothing of the text stays behind)."""
        for chunk in _chunks(digests):
            if self.engine is not None:
                with self.engine.begin() as connection:
                    connection.execute(delete(embeddings).where(embeddings.c.sha256.in_(chunk)))
                continue
            with self._connection() as connection:
                connection.executemany("DELETE FROM embeddings WHERE sha256 = ?", [(d,) for d in chunk])

    def close(self) -> None:
        connection = getattr(self._local, "connection", None)
        if connection is not None:
            connection.close()
            self._local.connection = None
