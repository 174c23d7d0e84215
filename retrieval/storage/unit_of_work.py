"""One transaction on the system of record: the only way records change (MemoryStore.unit_of_work).

It checks versions, stores each record's embedding-cache key, appends the change sequence on
PostgreSQL, and says what the index must take once it commits (`MemoryEngine.writing`). It works on
the connection it is given; the stored form of a record is storage/rows.py.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import numpy as np
from sqlalchemy import and_, bindparam, delete, or_, select, text, update
from sqlalchemy.engine import Connection, Row

from ..domain import ConflictError, Memory, MemoryStatus
from .data_dir import FreeSpace
from .rows import chunks, find_active_by_key, memory_of_row, read_memory, read_versions, stored_row, updated_row
from .schema import audit_log, changes, memories, meta, read_questions

__all__ = ["CHANGE_LOCK", "FORGETS_KEY", "UnitOfWork"]

# The advisory lock a PostgreSQL transaction holds from appending its change rows until it commits:
# change numbers are then handed out in commit order, so a replica that has read up to N has seen
# every change numbered below N (see engine/replica.py).
CHANGE_LOCK = 0x786D656D6F01
FORGETS_KEY = "hard_forgets"  # meta: how many hard forgets the record has taken (count_forget)


class UnitOfWork:
    """One transaction on the system of record. Writes check versions and store embedding-cache keys;
    `changed` and `deleted` are what the index must take after the commit (MemoryEngine.writing)."""

    def __init__(self, connection: Connection, space: FreeSpace | None = None) -> None:
        self.connection = connection
        self.space = space
        self.is_postgresql = connection.dialect.name == "postgresql"
        self.changed: dict[str, Memory] = {}
        self.vectors: dict[str, np.ndarray] = {}  # vectors a caller already holds, by memory id
        self.deleted: list[str] = []
        self.recontext: set[str] = set()  # ids whose derived BM25 context changed (read back after commit)

    # -- reads in the transaction ---------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        return read_memory(self.connection, memory_id)

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        return read_versions(self.connection, ids)

    def find_active_by_key(self, column: str, memory: Memory, key: str) -> Memory | None:
        """The active memory holding `key` in `column` (semantic_key or state_key) in `memory`'s space."""
        return find_active_by_key(
            self.connection, column, key, memory.owner_id, memory.bucket, memory.scope, memory.team_id
        )

    def check_space(self) -> None:
        """StorageFullError (503) when the data dir's free-space reserve is short (record writes only)."""
        if self.space is not None:
            self.space.check()

    # -- writes -----------------------------------------------------------------------------------

    def _changed(self, memory: Memory, vector: np.ndarray | None = None) -> None:
        self.changed[memory.id] = memory
        if vector is not None:
            self.vectors[memory.id] = vector

    def insert(self, new: Sequence[Memory], vectors: Sequence[np.ndarray] | np.ndarray | None = None) -> None:
        """Insert new records; `vectors` (one per record) spares the index a cache lookup after commit.
        A second active memory of one key is a ConflictError (the unique index of m003)."""
        if not new:
            return
        self.check_space()
        self.connection.execute(memories.insert(), [stored_row(memory) for memory in new])
        for i, memory in enumerate(new):
            self._changed(memory, vectors[i] if vectors is not None else None)

    def replace(self, memory: Memory, expected_version: int, vector: np.ndarray | None = None) -> None:
        """Write `memory` over its stored row if that row is still at `expected_version`, else conflict."""
        self.check_space()
        result = self.connection.execute(
            update(memories)
            .where(memories.c.id == memory.id, memories.c.version == expected_version)
            .values(**updated_row(memory))
        )
        if result.rowcount != 1:
            raise ConflictError(f"memory {memory.id} changed since it was read (expected version {expected_version})")
        self.vectors.pop(memory.id, None)
        self._changed(memory, vector)

    def replace_many(self, pairs: Sequence[tuple[Memory, int]]) -> None:
        """`replace` for many (memory, expected_version) pairs in order, as one executemany.

        A memory may appear more than once (each expecting the version the previous pair wrote).
        Any row not at its expected version makes the whole call a ConflictError naming the first ones.
        """
        if not pairs:
            return
        self.check_space()
        first_expected: dict[str, int] = {}
        for memory, expected in pairs:
            first_expected.setdefault(memory.id, expected)
        stored = self.versions(list(first_expected))
        moved = [i for i, expected in first_expected.items() if stored.get(i) != expected]
        if moved:
            shown = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
            raise ConflictError(f"memories changed since they were read: {shown}")
        columns = list(updated_row(pairs[0][0]))
        statement = (
            update(memories)
            .where(memories.c.id == bindparam("b_id"), memories.c.version == bindparam("b_expected"))
            .values({name: bindparam(f"b_{name}") for name in columns})
        )
        values = [
            {"b_id": memory.id, "b_expected": expected, **{f"b_{k}": v for k, v in updated_row(memory).items()}}
            for memory, expected in pairs
        ]
        result = self.connection.execute(statement, values)
        if result.rowcount != len(values):
            raise ConflictError("memories changed while the changes were being written")
        for memory, _ in pairs:
            self.vectors.pop(memory.id, None)
            self._changed(memory)

    def set_status(self, memory: Memory, status: MemoryStatus, now: str) -> Memory:
        """Move one memory to `status`, bumping its version; conflict if it changed meanwhile."""
        changed = replace(memory, status=status, updated_at=now, version=memory.version + 1)
        self.replace(changed, memory.version)
        return changed

    def set_context(self, memory_id: str, context: str | None) -> None:
        """Rewrite a memory's derived BM25 context (no new version); the index takes it again."""
        self.connection.execute(
            update(memories).where(memories.c.id == memory_id).values(context=context, indexed_version=None)
        )
        self.recontext.add(memory_id)

    def delete(self, ids: Sequence[str]) -> None:
        """Remove these records for good (forget); only the forget use case (usecases/manage.py) calls this."""
        for chunk in chunks(ids):
            self.connection.execute(delete(memories).where(memories.c.id.in_(chunk)))
            self.connection.execute(delete(read_questions).where(read_questions.c.memory_id.in_(chunk)))
        self.deleted.extend(ids)
        for memory_id in ids:
            self.changed.pop(memory_id, None)
            self.vectors.pop(memory_id, None)

    def audit(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Insert audit records (their layout: storage/audit_log.py); returns their ids in order."""
        if rows:
            self.connection.execute(audit_log.insert(), list(rows))
        return [str(row["id"]) for row in rows]

    def audit_mentioning(self, memory_id: str) -> list[Row[Any]]:
        """Audit records whose memory_ids name this memory (id, before, after)."""
        c = audit_log.c
        return list(
            self.connection.execute(
                select(c.id, c.before, c.after).where(c.memory_ids.contains(json.dumps(memory_id), autoescape=True))
            )
        )

    def rewrite_audit(self, record_id: str, before: str, after: str) -> None:
        self.connection.execute(update(audit_log).where(audit_log.c.id == record_id).values(before=before, after=after))

    def embed_shas_in_use(self, digests: Sequence[str]) -> set[str]:
        """Which of these embedding-cache keys some stored record still uses."""
        found: set[str] = set()
        for chunk in chunks(digests):
            rows = self.connection.execute(select(memories.c.embed_sha256).where(memories.c.embed_sha256.in_(chunk)))
            found.update(row[0] for row in rows)
        return found

    def with_context_containing(self, owner_id: str, session_id: str, snippet: str) -> list[Memory]:
        """Memories of this owner's session whose BM25 context holds `snippet` (a forgotten turn)."""
        c = memories.c
        rows = self.connection.execute(
            select(memories).where(
                c.owner_id == owner_id, c.session_id == session_id, c.context.contains(snippet, autoescape=True)
            )
        )
        return [memory_of_row(row) for row in rows]

    def of_tenant_containing(self, owner_id: str, team_id: str | None, words: Sequence[str]) -> list[Memory]:
        """The memories of one tenant (a team's, or an owner's personal ones) whose content holds any of
        `words` (forget: which cache keys another memory still gives)."""
        c = memories.c
        tenant = c.team_id == team_id if team_id is not None else and_(c.owner_id == owner_id, c.team_id.is_(None))
        found: dict[str, Memory] = {}
        for chunk in chunks(list(words), 50):
            matching = or_(*(c.content.contains(word, autoescape=True) for word in chunk))
            for row in self.connection.execute(select(memories).where(tenant, matching)):
                found.setdefault(row.id, memory_of_row(row))
        return list(found.values())

    def count_forget(self) -> None:
        """One more hard forget (FORGETS_KEY in meta), in the forget's transaction: a durable note that
        every index built before it still holds the forgotten points' payloads on disk. Each index's
        upkeep (engine/upkeep.py) compares it with the count its generation in use was built after, so
        a rebuild that died, a restart, and every replica sharing this record, purge their own files."""
        self.lock(FORGETS_KEY)
        current = self.connection.execute(select(meta.c.value).where(meta.c.key == FORGETS_KEY)).scalar()
        self.connection.execute(meta.delete().where(meta.c.key == FORGETS_KEY))
        self.connection.execute(meta.insert(), [{"key": FORGETS_KEY, "value": str(int(current or 0) + 1)}])

    def lock(self, name: str) -> None:
        """Wait for the lock on `name`, held until this transaction ends, across every process of the
        database (PostgreSQL advisory lock). SQLite: one process, whose write lock already serialises."""
        if self.is_postgresql:
            self.connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": name})

    def try_lock(self, name: str) -> bool:
        """A lock on `name` held until this transaction ends, across every process of the database
        (PostgreSQL advisory lock); False when another holds it. SQLite: one process, always True."""
        if not self.is_postgresql:
            return True
        return bool(
            self.connection.execute(text("SELECT pg_try_advisory_xact_lock(hashtext(:name))"), {"name": name}).scalar()
        )

    def _log_changes(self) -> None:
        """PostgreSQL: append the change sequence last, under CHANGE_LOCK (numbers in commit order)."""
        if not self.is_postgresql:
            return
        rows = [{"memory_id": i, "version": m.version} for i, m in self.changed.items()]
        rows += [{"memory_id": i, "version": None} for i in [*self.deleted, *self.recontext] if i not in self.changed]
        if not rows:
            return
        self.connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CHANGE_LOCK})
        self.connection.execute(changes.insert(), rows)
