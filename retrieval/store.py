"""The system of record: memories in SQL through SQLAlchemy Core (SQLite by default, PostgreSQL by URL).

Every change goes through a `UnitOfWork` (`MemoryStore.unit_of_work`): one transaction that checks
versions, stores each record's embedding-cache key, appends the change sequence on PostgreSQL, and
says what the index must take once it commits (`MemoryEngine.writing` brings the index along).
Reads that must agree with each other take one `reading()` snapshot.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
from sqlalchemy import Engine, and_, bindparam, delete, func, or_, select, text, update
from sqlalchemy import String as SqlString
from sqlalchemy.engine import Connection, Row
from sqlalchemy.exc import IntegrityError
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from .columns import memory_from_row, memory_to_row
from .embedding import memory_digest
from .errors import ConflictError
from .freespace import FreeSpace
from .records import Memory, MemoryStatus, MemoryType, ReadFilters, format_time, utc_now
from .schema import audit_log, changes, insertion_order, memories, meta, migrate, open_engine

__all__ = ["CHANGE_LOCK", "Listing", "MemoryStore", "UnitOfWork", "embed_digest", "embedding_text"]

# The advisory lock a PostgreSQL transaction holds from appending its change rows until it commits:
# change numbers are then handed out in commit order, so a replica that has read up to N has seen
# every change numbered below N (see engine.ChangeFollower).
CHANGE_LOCK = 0x786D656D6F01


def embedding_text(memory: Memory) -> str:
    """The text whose dense embedding represents a memory: its content alone."""
    return memory.content


def embed_digest(memory: Memory) -> str:
    """The memory's embedding-cache key, its tenant's own (embedding.memory_digest); stored as embed_sha256."""
    return memory_digest(memory, embedding_text(memory))


class _JsonText(FunctionElement[str]):
    """The text of one top-level key of a JSON column, compiled per dialect below."""

    type = SqlString()
    name = "json_text"
    inherit_cache = True


@compiles(_JsonText, "sqlite")
def _json_text_sqlite(element: _JsonText, compiler: Any, **kw: Any) -> str:
    column, key = list(element.clauses)
    return f"CAST(json_extract({compiler.process(column, **kw)}, '$.' || {compiler.process(key, **kw)}) AS VARCHAR)"


@compiles(_JsonText, "postgresql")
def _json_text_postgresql(element: _JsonText, compiler: Any, **kw: Any) -> str:
    column, key = list(element.clauses)
    return f"(CAST({compiler.process(column, **kw)} AS JSONB) ->> CAST({compiler.process(key, **kw)} AS TEXT))"


def _json_key(name: str) -> str:
    """A key as the SQLite path names it (quoted); PostgreSQL's ->> takes it bare (see _json_field)."""
    return json.dumps(name)


def _json_field(column: Any, key: str, dialect: str) -> Any:
    return _JsonText(column, _json_key(key) if dialect == "sqlite" else key)


@dataclass(frozen=True, slots=True)
class Listing:
    """The management list's narrowing beyond visibility (retrieval.manage builds it validated).

    `after` is the (created_at, id) of the last memory of the previous page: newest first, id breaks ties.
    """

    path_prefix: str | None = None
    metadata: tuple[str, str] | None = None
    text: str | None = None
    time_field: str = "created_at"
    since: str | None = None
    until: str | None = None
    after: tuple[str, str] | None = None

    def clauses(self, dialect: str) -> list[Any]:
        c = memories.c
        found: list[Any] = []
        if self.path_prefix:
            found.append(c.path.startswith(self.path_prefix, autoescape=True))
        if self.metadata is not None:
            key, value = self.metadata
            found.append(_json_field(c.metadata, key, dialect) == value)
        if self.text:
            found.append(c.content.contains(self.text, autoescape=True))
        moment = c[self.time_field]
        if self.since:
            found.append(moment >= self.since)
        if self.until:
            found.append(moment < self.until)
        if self.after is not None:
            created, last_id = self.after
            found.append(or_(c.created_at < created, and_(c.created_at == created, c.id < last_id)))
        return found


def _to_row(memory: Memory) -> dict[str, Any]:
    return {**memory_to_row(memory), "embed_sha256": embed_digest(memory), "indexed_version": None}


def _updated_row(memory: Memory) -> dict[str, Any]:
    """The columns an update of `memory` writes: all but its id and what only the index writes track."""
    row = _to_row(memory)
    del row["id"], row["indexed_version"]
    return row


def _chunks(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """Ids in slices that stay under SQLite's bound-parameter limit."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _unique_violation(error: IntegrityError) -> bool:
    """A unique index refused the row (SQLSTATE 23505 on PostgreSQL; SQLite says so in its message)."""
    return getattr(error.orig, "sqlstate", None) == "23505" or "UNIQUE constraint failed" in str(error.orig)


def _from_row(row: Row[Any]) -> Memory:
    return memory_from_row(row._mapping)


def _visibility(filters: ReadFilters):  # type: ignore[no-untyped-def]
    """The SQL twin of ReadFilters.admits."""
    c = memories.c
    if filters.team_id is not None:
        clauses = [c.team_id == filters.team_id]
    else:
        personal = and_(c.team_id.is_(None), c.owner_id == filters.owner_id)
        clauses = [or_(personal, c.team_id.in_(filters.team_ids)) if filters.team_ids else personal]
    clauses.append(c.status.in_([s.value for s in filters.statuses]))
    if filters.bucket is not None:
        clauses.append(c.bucket == filters.bucket)
    if filters.scope is not None:
        clauses.append(c.scope == filters.scope)
    if filters.memory_type is not None:
        clauses.append(c.type == filters.memory_type.value)
    if filters.path_pattern is not None:
        clauses.append(filters.path_pattern.clause(c.path))
    return and_(*clauses)


def _episodes_in(filters: ReadFilters, since: str, until: str):  # type: ignore[no-untyped-def]
    """Episodes a caller wrote (not reflect) that the filters admit, occurred in [since, until)."""
    c = memories.c
    return and_(_visibility(filters), c.type == MemoryType.EPISODIC.value, c.derived_from == "[]",
                c.occurred_at >= since, c.occurred_at < until)


class UnitOfWork:
    """One transaction on the system of record. Writes check versions and store embedding-cache keys;
    `changed` and `deleted` are what the index must take after the commit (MemoryEngine.writing)."""

    def __init__(self, store: MemoryStore, connection: Connection) -> None:
        self.store = store
        self.connection = connection
        self.changed: dict[str, Memory] = {}
        self.vectors: dict[str, np.ndarray] = {}  # vectors a caller already holds, by memory id
        self.deleted: list[str] = []
        self.recontext: set[str] = set()  # ids whose derived BM25 context changed (read back after commit)

    # -- reads in the transaction ---------------------------------------------------------------

    def get(self, memory_id: str) -> Memory | None:
        return self.store.get(memory_id, self.connection)

    def versions(self, ids: Sequence[str]) -> dict[str, int]:
        return self.store.versions(ids, self.connection)

    def find_active_by_key(self, column: str, memory: Memory, key: str) -> Memory | None:
        """The active memory holding `key` in `column` (semantic_key or state_key) in `memory`'s space."""
        return self.store.find_active_by_key(column, key, memory.owner_id, memory.bucket, memory.scope,
                                             memory.team_id, self.connection)

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
        self.store.check_space()
        self.connection.execute(memories.insert(), [_to_row(memory) for memory in new])
        for i, memory in enumerate(new):
            self._changed(memory, vectors[i] if vectors is not None else None)

    def replace(self, memory: Memory, expected_version: int, vector: np.ndarray | None = None) -> None:
        """Write `memory` over its stored row if that row is still at `expected_version`, else conflict."""
        self.store.check_space()
        result = self.connection.execute(
            update(memories)
            .where(memories.c.id == memory.id, memories.c.version == expected_version)
            .values(**_updated_row(memory))
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
        self.store.check_space()
        first_expected: dict[str, int] = {}
        for memory, expected in pairs:
            first_expected.setdefault(memory.id, expected)
        stored = self.versions(list(first_expected))
        moved = [i for i, expected in first_expected.items() if stored.get(i) != expected]
        if moved:
            shown = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
            raise ConflictError(f"memories changed since they were read: {shown}")
        columns = list(_updated_row(pairs[0][0]))
        statement = (
            update(memories)
            .where(memories.c.id == bindparam("b_id"), memories.c.version == bindparam("b_expected"))
            .values({name: bindparam(f"b_{name}") for name in columns})
        )
        values = [
            {"b_id": memory.id, "b_expected": expected, **{f"b_{k}": v for k, v in _updated_row(memory).items()}}
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
        """Remove these records for good (forget); only retrieval.manage calls this."""
        for chunk in _chunks(ids):
            self.connection.execute(delete(memories).where(memories.c.id.in_(chunk)))
        self.deleted.extend(ids)
        for memory_id in ids:
            self.changed.pop(memory_id, None)
            self.vectors.pop(memory_id, None)

    def audit(self, rows: Sequence[dict[str, Any]]) -> list[str]:
        """Insert audit records (their layout: retrieval.audit_log); returns their ids in order."""
        if rows:
            self.connection.execute(audit_log.insert(), list(rows))
        return [str(row["id"]) for row in rows]

    def audit_mentioning(self, memory_id: str) -> list[Row[Any]]:
        """Audit records whose memory_ids name this memory (id, before, after)."""
        c = audit_log.c
        return list(self.connection.execute(
            select(c.id, c.before, c.after).where(c.memory_ids.contains(json.dumps(memory_id), autoescape=True))
        ))

    def rewrite_audit(self, record_id: str, before: str, after: str) -> None:
        self.connection.execute(update(audit_log).where(audit_log.c.id == record_id).values(before=before, after=after))

    def embed_shas_in_use(self, digests: Sequence[str]) -> set[str]:
        """Which of these embedding-cache keys some stored record still uses."""
        found: set[str] = set()
        for chunk in _chunks(digests):
            rows = self.connection.execute(select(memories.c.embed_sha256).where(memories.c.embed_sha256.in_(chunk)))
            found.update(row[0] for row in rows)
        return found

    def with_context_containing(self, owner_id: str, session_id: str, snippet: str) -> list[Memory]:
        """Memories of this owner's session whose BM25 context holds `snippet` (a forgotten turn)."""
        c = memories.c
        rows = self.connection.execute(
            select(memories).where(c.owner_id == owner_id, c.session_id == session_id,
                                   c.context.contains(snippet, autoescape=True))
        )
        return [_from_row(row) for row in rows]

    def lock(self, name: str) -> None:
        """Wait for the lock on `name`, held until this transaction ends, across every process of the
        database (PostgreSQL advisory lock). SQLite: one process, whose write lock already serialises."""
        if self.store.is_postgresql:
            self.connection.execute(text("SELECT pg_advisory_xact_lock(hashtext(:name))"), {"name": name})

    def try_lock(self, name: str) -> bool:
        """A lock on `name` held until this transaction ends, across every process of the database
        (PostgreSQL advisory lock); False when another holds it. SQLite: one process, always True."""
        if not self.store.is_postgresql:
            return True
        return bool(self.connection.execute(text("SELECT pg_try_advisory_xact_lock(hashtext(:name))"),
                                            {"name": name}).scalar())

    def _log_changes(self) -> None:
        """PostgreSQL: append the change sequence last, under CHANGE_LOCK (numbers in commit order)."""
        if not self.store.is_postgresql:
            return
        rows = [{"memory_id": i, "version": m.version} for i, m in self.changed.items()]
        rows += [{"memory_id": i, "version": None} for i in [*self.deleted, *self.recontext] if i not in self.changed]
        if not rows:
            return
        self.connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": CHANGE_LOCK})
        self.connection.execute(changes.insert(), rows)


class MemoryStore:
    """Reads and writes memory records; the one module that knows the SQL layout."""

    def __init__(self, engine: Engine, space: FreeSpace | None = None) -> None:
        self.engine = engine
        self.space = space
        self.is_postgresql = engine.dialect.name == "postgresql"

    @classmethod
    def open(cls, target: Path | str, space: FreeSpace | None = None, busy_timeout_ms: int = 30_000) -> MemoryStore:
        """Open and migrate a SQLite file or a database URL; SQL faults raise StoreError
        (retrieval/faults.py). Record writes check `space` first; bookkeeping writes do not."""
        engine = open_engine(target, busy_timeout_ms)
        migrate(engine, format_time(utc_now()))
        return cls(engine, space)

    def check_space(self) -> None:
        if self.space is not None:
            self.space.check()

    def close(self) -> None:
        self.engine.dispose()

    @contextmanager
    def unit_of_work(self) -> Iterator[UnitOfWork]:
        """One write transaction; committed when the block ends, rolled back when it raises. A row that
        breaks a unique rule (two active memories of one key, an id twice) is a ConflictError."""
        try:
            with self.engine.begin() as connection:
                work = UnitOfWork(self, connection)
                yield work
                work._log_changes()
        except IntegrityError as error:
            if not _unique_violation(error):
                raise
            raise ConflictError(f"a concurrent write took the same key or id; try again ({error.orig})") from error

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """One read transaction, a consistent snapshot (SQLite WAL read; REPEATABLE READ on PostgreSQL)."""
        with self.engine.connect() as connection:
            if self.is_postgresql:
                connection = connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                yield connection

    # -- meta ---------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self.engine.connect() as connection:
            return connection.execute(select(meta.c.value).where(meta.c.key == key)).scalar()

    def set_meta(self, key: str, value: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(meta.delete().where(meta.c.key == key))
            connection.execute(meta.insert().values(key=key, value=value))

    def ensure_meta(self, key: str, value: str) -> str:
        """The stored value of `key`, storing `value` first when there is none (the first writer wins)."""
        try:
            with self.engine.begin() as connection:
                if connection.execute(select(meta.c.value).where(meta.c.key == key)).scalar() is None:
                    connection.execute(meta.insert().values(key=key, value=value))
        except IntegrityError:  # another replica stored it first
            pass
        stored = self.get_meta(key)
        assert stored is not None
        return stored

    # -- bookkeeping (no version, no audit) -----------------------------------------------------

    def mark_indexed(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Record that the index now holds these (id, version) pairs."""
        values = [{"b_id": memory_id, "b_version": version} for memory_id, version in pairs]
        if not values:
            return

        statement = (
            update(memories)
            .where(memories.c.id == bindparam("b_id"))
            .values(indexed_version=bindparam("b_version"))
        )
        with self.engine.begin() as connection:
            connection.execute(statement, values)

    def clear_indexed(self) -> None:
        """Forget what the index holds (before a full rebuild)."""
        with self.engine.begin() as connection:
            connection.execute(update(memories).values(indexed_version=None))

    def record_access(self, counts: dict[str, int], when: str) -> None:
        """Add read counts and move `last_accessed_at`; a bookkeeping write that bumps no version."""
        if not counts:
            return

        statement = (
            update(memories)
            .where(memories.c.id == bindparam("b_id"))
            .values(
                access_count=memories.c.access_count + bindparam("b_count"),
                last_accessed_at=when,
            )
        )
        with self.engine.begin() as connection:
            connection.execute(statement, [{"b_id": k, "b_count": v} for k, v in sorted(counts.items())])

    # -- the change sequence (PostgreSQL) -------------------------------------------------------

    def changes_after(self, seq: int, limit: int) -> list[tuple[int, str, int | None]]:
        """(seq, memory id, version) of the changes numbered after `seq`, in order; version None is a
        forget or a context rewrite (the index must take the row, or its absence, whatever it holds)."""
        c = changes.c
        with self.engine.connect() as connection:
            rows = connection.execute(select(c.seq, c.memory_id, c.version).where(c.seq > seq).order_by(c.seq).limit(limit))
            return [(int(row[0]), row[1], row[2]) for row in rows]

    def first_change(self) -> int:
        """The number of the oldest change kept (0 when there is none)."""
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.coalesce(func.min(changes.c.seq), 0))).scalar_one())

    def last_change(self) -> int:
        """The number of the newest change (0 when there is none)."""
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.coalesce(func.max(changes.c.seq), 0))).scalar_one())

    # -- reads --------------------------------------------------------------------------------

    def get(self, memory_id: str, connection: Connection | None = None) -> Memory | None:
        statement = select(memories).where(memories.c.id == memory_id)
        if connection is not None:
            row = connection.execute(statement).first()
        else:
            with self.engine.connect() as own:
                row = own.execute(statement).first()
        return _from_row(row) if row is not None else None

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        with self.engine.connect() as connection:
            for chunk in _chunks(ids):
                for row in connection.execute(select(memories).where(memories.c.id.in_(chunk))):
                    memory = _from_row(row)
                    found[memory.id] = memory
        return found

    def versions(self, ids: Sequence[str], connection: Connection) -> dict[str, int]:
        """The stored version of each of these ids that exists."""
        found: dict[str, int] = {}
        for chunk in _chunks(ids):
            rows = connection.execute(select(memories.c.id, memories.c.version).where(memories.c.id.in_(chunk)))
            found.update({row[0]: row[1] for row in rows})
        return found

    def embed_shas(self, ids: Sequence[str]) -> dict[str, str]:
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(memories.c.id, memories.c.embed_sha256).where(memories.c.id.in_(list(ids)))
            )
            return {row[0]: row[1] for row in rows}

    def find_active_by_key(
        self, column: str, key: str, owner_id: str, bucket: str, scope: str, team_id: str | None,
        connection: Connection,
    ) -> Memory | None:
        """The active memory holding `key` in `column` (semantic_key or state_key) within one space."""
        c = memories.c
        team_clause = c.team_id.is_(None) if team_id is None else c.team_id == team_id
        row = connection.execute(
            select(memories)
            .where(
                c[column] == key, c.owner_id == owner_id, c.bucket == bucket, c.scope == scope,
                team_clause, c.status == MemoryStatus.ACTIVE.value,
            )
            .order_by(c.version.desc())
            .limit(1)
        ).first()
        return _from_row(row) if row is not None else None

    def session_tail(self, owner_id: str, session_id: str, turns: int) -> list[str]:
        """The contents of the last `turns` memories written to this owner's session, oldest first."""
        c = memories.c
        statement = (
            select(c.content)
            .where(c.owner_id == owner_id, c.session_id == session_id)
            .order_by(insertion_order("memories", self.engine.dialect.name).desc())
            .limit(turns)
        )
        with self.engine.connect() as connection:
            rows = list(connection.execute(statement))
        return [row[0] for row in reversed(rows)]

    def ids_matching(self, filters: ReadFilters) -> list[str]:
        with self.engine.connect() as connection:
            return [row[0] for row in connection.execute(select(memories.c.id).where(_visibility(filters)))]

    def recent(self, filters: ReadFilters, limit: int) -> list[Memory]:
        """Newest first by occurrence, then creation, then id."""
        c = memories.c
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(memories)
                .where(_visibility(filters))
                .order_by(c.occurred_at.desc(), c.created_at.desc(), c.id)
                .limit(limit)
            )
            return [_from_row(row) for row in rows]

    def unindexed(self, limit: int) -> list[tuple[Memory, str]]:
        """Records whose current version the index does not hold yet, with their embed digests."""
        c = memories.c
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(memories)
                .where(or_(c.indexed_version.is_(None), c.indexed_version != c.version))
                .limit(limit)
            )
            return [(_from_row(row), row._mapping["embed_sha256"]) for row in rows]

    # -- the compactor's selections (one read transaction: pass the same connection) ----------

    def window_episodes(
        self, filters: ReadFilters, since: str, until: str, limit: int, connection: Connection
    ) -> list[tuple[Memory, str]]:
        """Episodic memories the filters admit (their statuses included) that a caller wrote, not
        reflect, occurred in [since, until), newest first, with their embed digests."""
        rows = connection.execute(
            select(memories).where(_episodes_in(filters, since, until)).order_by(memories.c.occurred_at.desc(),
                                                                               memories.c.id).limit(limit)
        )
        return [(_from_row(row), row._mapping["embed_sha256"]) for row in rows]

    def count_window(self, filters: ReadFilters, since: str, until: str, connection: Connection) -> int:
        """How many episodes `window_episodes` would return without its limit."""
        statement = select(func.count()).select_from(memories).where(_episodes_in(filters, since, until))
        return int(connection.execute(statement).scalar_one())

    def overdue(self, filters: ReadFilters, now: str, limit: int, connection: Connection) -> list[Memory]:
        """Memories the filters admit whose `expires_at` has passed, soonest expired first."""
        c = memories.c
        rows = connection.execute(
            select(memories)
            .where(_visibility(filters), c.expires_at.is_not(None), c.expires_at <= now)
            .order_by(c.expires_at, c.id)
            .limit(limit)
        )
        return [_from_row(row) for row in rows]

    def stalest(self, filters: ReadFilters, limit: int, connection: Connection) -> list[Memory]:
        """Memories the filters admit, longest unused first (last access, else creation)."""
        c = memories.c
        idle_since = func.coalesce(c.last_accessed_at, c.created_at)
        rows = connection.execute(
            select(memories).where(_visibility(filters)).order_by(idle_since, c.id).limit(limit)
        )
        return [_from_row(row) for row in rows]

    def owners(self) -> list[str]:
        """Owners that have active personal memories."""
        c = memories.c
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(c.owner_id).where(c.status == MemoryStatus.ACTIVE.value, c.team_id.is_(None))
                .group_by(c.owner_id).order_by(c.owner_id)
            )
            return [row[0] for row in rows]

    def iterate(self, owner_id: str | None = None, batch: int = 1000) -> Iterator[Memory]:
        """Every record (all statuses), in id order, one batch in memory at a time."""
        last = ""
        while True:
            statement = select(memories).where(memories.c.id > last).order_by(memories.c.id).limit(batch)
            if owner_id is not None:
                statement = statement.where(memories.c.owner_id == owner_id)
            with self.engine.connect() as connection:
                rows = [_from_row(row) for row in connection.execute(statement)]
            if not rows:
                return
            yield from rows
            last = rows[-1].id

    def count(self, statuses: Sequence[MemoryStatus] | None = None) -> int:
        statement = select(func.count()).select_from(memories)
        if statuses is not None:
            statement = statement.where(memories.c.status.in_([s.value for s in statuses]))
        with self.engine.connect() as connection:
            return int(connection.execute(statement).scalar_one())

    def count_indexed(self) -> int:
        c = memories.c
        with self.engine.connect() as connection:
            return int(
                connection.execute(
                    select(func.count()).select_from(memories).where(c.indexed_version == c.version)
                ).scalar_one()
            )

    # -- management (retrieval.manage) --------------------------------------------------------

    def listing(self, filters: ReadFilters, listing: Listing, limit: int) -> list[Memory]:
        """Memories the filters admit, narrowed by `listing`, newest created first (then id)."""
        c = memories.c
        statement = (
            select(memories).where(_visibility(filters), *listing.clauses(self.engine.dialect.name))
            .order_by(c.created_at.desc(), c.id.desc()).limit(limit)
        )
        with self.engine.connect() as connection:
            return [_from_row(row) for row in connection.execute(statement)]

    def derived_into(self, memory_id: str) -> list[Memory]:
        """Memories whose `derived_from` names this one (reflect's summaries and promotions)."""
        c = memories.c
        with self.engine.connect() as connection:
            rows = connection.execute(
                select(memories).where(c.derived_from.contains(json.dumps(memory_id))).order_by(c.created_at, c.id)
            )
            return [_from_row(row) for row in rows]

    def superseding(self, memory_id: str) -> list[Memory]:
        """Memories whose metadata says they supersede this one (a semantic_key's next version)."""
        c = memories.c
        supersedes = _json_field(c.metadata, "supersedes", self.engine.dialect.name)
        with self.engine.connect() as connection:
            rows = connection.execute(select(memories).where(supersedes == memory_id))
            return [_from_row(row) for row in rows]

    def audit_batches(self, batch: int = 1000) -> Iterator[list[dict[str, Any]]]:
        """Every audit record as stored, in the order written, a batch at a time (migrate-store)."""
        order = insertion_order("audit_log", self.engine.dialect.name)
        columns = [audit_log.c[name] for name in audit_log.c.keys()]
        offset = 0
        while True:
            with self.engine.connect() as connection:
                rows = [dict(r._mapping) for r in connection.execute(
                    select(*columns).order_by(order).offset(offset).limit(batch))]
            if not rows:
                return
            yield rows
            offset += len(rows)

    def audit_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these audit record ids are stored."""
        found: set[str] = set()
        with self.engine.connect() as connection:
            for chunk in _chunks(ids):
                found.update(r[0] for r in connection.execute(select(audit_log.c.id).where(audit_log.c.id.in_(chunk))))
        return found

    def count_audit(self) -> int:
        with self.engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(audit_log)).scalar_one())

    def owner_ids(self, owner_id: str) -> list[str]:
        """Every record id an owner wrote, personal and team, any status."""
        with self.engine.connect() as connection:
            return [row[0] for row in connection.execute(select(memories.c.id).where(memories.c.owner_id == owner_id))]

    def tally(self, filters: ReadFilters) -> dict[tuple[str, str], int]:
        """How many memories the filters admit, by (type, status)."""
        c = memories.c
        statement = select(c.type, c.status, func.count()).where(_visibility(filters)).group_by(c.type, c.status)
        with self.engine.connect() as connection:
            return {(row[0], row[1]): int(row[2]) for row in connection.execute(statement)}
