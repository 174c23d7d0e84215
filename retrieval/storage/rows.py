"""The stored form of a record: the row a write stores and the record a row holds, and the row-level
reads that both the store and a unit of work run on a connection they are given."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from sqlalchemy import select
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError

from ..domain import Memory, MemoryStatus, embed_digest
from .columns import RECORD_FIELDS, memory_from_values, memory_to_row
from .schema import memories

__all__ = [
    "chunks",
    "find_active_by_key",
    "memory_of_row",
    "read_memory",
    "read_versions",
    "stored_row",
    "unique_violation",
    "updated_row",
]


def stored_row(memory: Memory) -> dict[str, Any]:
    return {**memory_to_row(memory), "embed_sha256": embed_digest(memory), "indexed_version": None}


def updated_row(memory: Memory) -> dict[str, Any]:
    """The columns an update of `memory` writes: all but its id and what only the index writes track."""
    row = stored_row(memory)
    del row["id"], row["indexed_version"]
    return row


def chunks(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """Ids in slices that stay under SQLite's bound-parameter limit."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def unique_violation(error: IntegrityError) -> bool:
    """A unique index refused the row (SQLSTATE 23505 on PostgreSQL; SQLite says so in its message)."""
    return getattr(error.orig, "sqlstate", None) == "23505" or "UNIQUE constraint failed" in str(error.orig)


def memory_of_row(row: Row[Any]) -> Memory:
    """The record of a row of `select(memories)`: the record's columns come first, in the record's
    field order (tests/retrieval/storage/test_store.py holds the table to it)."""
    return memory_from_values(row[: len(RECORD_FIELDS)])


def read_memory(connection: Connection, memory_id: str) -> Memory | None:
    row = connection.execute(select(memories).where(memories.c.id == memory_id)).first()
    return memory_of_row(row) if row is not None else None


def read_versions(connection: Connection, ids: Sequence[str]) -> dict[str, int]:
    """The stored version of each of these ids that exists."""
    found: dict[str, int] = {}
    for chunk in chunks(ids):
        rows = connection.execute(select(memories.c.id, memories.c.version).where(memories.c.id.in_(chunk)))
        found.update({row[0]: row[1] for row in rows})
    return found


def find_active_by_key(
    connection: Connection, column: str, key: str, owner_id: str, bucket: str, scope: str, team_id: str | None
) -> Memory | None:
    """The active memory holding `key` in `column` (semantic_key or state_key) within one space."""
    c = memories.c
    team_clause = c.team_id.is_(None) if team_id is None else c.team_id == team_id
    row = connection.execute(
        select(memories)
        .where(
            c[column] == key,
            c.owner_id == owner_id,
            c.bucket == bucket,
            c.scope == scope,
            team_clause,
            c.status == MemoryStatus.ACTIVE.value,
        )
        .order_by(c.version.desc())
        .limit(1)
    ).first()
    return memory_of_row(row) if row is not None else None
