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
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, and_, bindparam, func, or_, select, update
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.engine import Connection
from sqlalchemy.exc import IntegrityError

from ..domain import (
    ConflictError,
    Memory,
    MemoryStatus,
    MemoryType,
    ReadFilters,
    context_line,
    format_time,
    utc_now,
)
from .change_feed import ChangeFeed
from .data_dir import FreeSpace
from .database import open_engine
from .listing import Listing, json_field
from .migrations import migrate
from .rows import chunks, find_active_by_key, memory_of_row, read_memory, read_versions, unique_violation
from .schema import audit_log, insertion_order, memories, meta, read_questions
from .unit_of_work import FORGETS_KEY, UnitOfWork

#: The meta keys that name what a store was embedded with; always written together.
MODEL_KEYS = ("embedding_model", "embedding_dimension", "sparse_model")
# Built once: SQLAlchemy then reuses its compiled form, where building `id IN (...)` for each read
# cost as much again as running it.
_BY_IDS = select(memories).where(memories.c.id.in_(bindparam("ids", expanding=True)))

__all__ = ["MODEL_KEYS", "MemoryStore"]


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
    return and_(
        _visibility(filters),
        c.type == MemoryType.EPISODIC.value,
        c.derived_from == "[]",
        c.occurred_at >= since,
        c.occurred_at < until,
    )


class MemoryStore:
    """Reads and writes memory records; the one module that knows the SQL layout."""

    def __init__(self, sql_engine: Engine, space: FreeSpace | None = None) -> None:
        self.sql_engine = sql_engine
        self.space = space
        self.is_postgresql = sql_engine.dialect.name == "postgresql"
        self.changes = ChangeFeed(sql_engine)  # the change sequence replicas follow (PostgreSQL)

    @classmethod
    def open(cls, target: Path | str, space: FreeSpace | None = None, busy_timeout_ms: int = 30_000) -> MemoryStore:
        """Open and migrate a SQLite file or a database URL; SQL faults raise StoreError
        (storage/faults.py). Record writes check `space` first; bookkeeping writes do not."""
        sql_engine = open_engine(target, busy_timeout_ms)
        migrate(sql_engine, format_time(utc_now()))
        return cls(sql_engine, space)

    def close(self) -> None:
        self.sql_engine.dispose()

    @contextmanager
    def unit_of_work(self) -> Iterator[UnitOfWork]:
        """One write transaction; committed when the block ends, rolled back when it raises. A row that
        breaks a unique rule (two active memories of one key, an id twice) is a ConflictError."""
        try:
            with self.sql_engine.begin() as connection:
                work = UnitOfWork(connection, self.space)
                yield work
                work._log_changes()
        except IntegrityError as error:
            if not unique_violation(error):
                raise
            raise ConflictError(f"a concurrent write took the same key or id; try again ({error.orig})") from error

    @contextmanager
    def reading(self) -> Iterator[Connection]:
        """One read transaction, a consistent snapshot (SQLite WAL read; REPEATABLE READ on PostgreSQL)."""
        with self.sql_engine.connect() as connection:
            if self.is_postgresql:
                connection = connection.execution_options(isolation_level="REPEATABLE READ")
            with connection.begin():
                yield connection

    # -- meta ---------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self.sql_engine.connect() as connection:
            return connection.execute(select(meta.c.value).where(meta.c.key == key)).scalar()

    def forget_count(self) -> int:
        """How many hard forgets the record has taken (UnitOfWork.count_forget)."""
        return int(self.get_meta(FORGETS_KEY) or 0)

    def get_metas(self, keys: Iterable[str]) -> dict[str, str]:
        """The stored values of `keys` (absent keys left out), read in one statement."""
        with self.sql_engine.connect() as connection:
            rows = connection.execute(select(meta.c.key, meta.c.value).where(meta.c.key.in_(list(keys))))
            return {key: value for key, value in rows}

    def set_meta(self, key: str, value: str) -> None:
        self.set_metas({key: value})

    def set_metas(self, values: dict[str, str]) -> None:
        """Store every pair in one transaction, so a reader sees the old group or the new, never a mix."""
        with self.sql_engine.begin() as connection:
            connection.execute(meta.delete().where(meta.c.key.in_(list(values))))
            connection.execute(meta.insert(), [{"key": key, "value": value} for key, value in values.items()])

    def ensure_meta(self, key: str, value: str) -> str:
        """The stored value of `key`, storing `value` first when there is none (the first writer wins)."""
        return self.ensure_metas({key: value})[key]

    def ensure_metas(self, values: dict[str, str]) -> dict[str, str]:
        """The stored group of `values`' keys, storing the whole group in one transaction when none is stored.

        The first writer wins: replicas that start together on a new database each try, one commits, the
        others read what it wrote. Written as one group, a reader never sees a model name without its
        dimension or sparse encoder. A group already partly stored is returned as it is."""
        try:
            with self.sql_engine.begin() as connection:
                stored = connection.execute(select(meta.c.key).where(meta.c.key.in_(list(values)))).first()
                if stored is None:
                    connection.execute(meta.insert(), [{"key": key, "value": value} for key, value in values.items()])
        except IntegrityError:  # another replica stored it first
            pass
        return self.get_metas(values)

    # -- bookkeeping (no version, no audit) -----------------------------------------------------

    def mark_indexed(self, pairs: Iterable[tuple[str, int]]) -> None:
        """Record that the index now holds these (id, version) pairs."""
        values = [{"b_id": memory_id, "b_version": version} for memory_id, version in pairs]
        if not values:
            return

        statement = (
            update(memories).where(memories.c.id == bindparam("b_id")).values(indexed_version=bindparam("b_version"))
        )
        with self.sql_engine.begin() as connection:
            connection.execute(statement, values)

    def clear_indexed(self) -> None:
        """Forget what the index holds (before a full rebuild)."""
        with self.sql_engine.begin() as connection:
            connection.execute(update(memories).values(indexed_version=None))

    def record_access(self, counts: dict[str, int], when: str, questions: Iterable[tuple[str, str]] = ()) -> None:
        """Add read counts, move `last_accessed_at` and note (memory id, question digest) pairs not
        noted before; a bookkeeping write that bumps no version."""
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
        pairs = sorted(set(questions))
        with self.sql_engine.begin() as connection:
            connection.execute(statement, [{"b_id": k, "b_count": v} for k, v in sorted(counts.items())])
            if pairs:
                connection.execute(self._note_questions(), [{"memory_id": m, "question": q} for m, q in pairs])

    def _note_questions(self) -> Any:
        """An insert of read_questions rows that skips the pairs already there (and memories forgotten)."""
        known = select(memories.c.id).where(memories.c.id == bindparam("memory_id"))
        pair: Any = select(bindparam("memory_id"), bindparam("question")).where(known.exists())
        names = ["memory_id", "question"]
        if self.sql_engine.dialect.name == "postgresql":
            return postgresql_insert(read_questions).from_select(names, pair).on_conflict_do_nothing()
        return read_questions.insert().from_select(names, pair).prefix_with("OR IGNORE")

    def checkpoint(self) -> None:
        """SQLite: copy the write-ahead log into the database file and empty it, so that what a forget
        removed does not linger in the log until the next automatic checkpoint. PostgreSQL: nothing."""
        if self.sql_engine.dialect.name != "sqlite":
            return
        with self.sql_engine.connect() as connection:
            connection.exec_driver_sql("PRAGMA wal_checkpoint(TRUNCATE)")

    def questions_read(self, ids: Sequence[str]) -> dict[str, int]:
        """How many distinct questions each of these memories was read for (absent: none)."""
        counted: dict[str, int] = {}
        q = read_questions.c
        with self.sql_engine.connect() as connection:
            for chunk in chunks(list(ids)):
                rows = connection.execute(
                    select(q.memory_id, func.count()).where(q.memory_id.in_(chunk)).group_by(q.memory_id)
                )
                counted.update({row[0]: int(row[1]) for row in rows})
        return counted

    # -- reads --------------------------------------------------------------------------------

    def get(self, memory_id: str, connection: Connection | None = None) -> Memory | None:
        if connection is not None:
            return read_memory(connection, memory_id)
        with self.sql_engine.connect() as own:
            return read_memory(own, memory_id)

    def get_many(self, ids: Sequence[str]) -> dict[str, Memory]:
        found: dict[str, Memory] = {}
        with self.sql_engine.connect() as connection:
            for chunk in chunks(ids):
                for row in connection.execute(_BY_IDS, {"ids": chunk}):
                    memory = memory_of_row(row)
                    found[memory.id] = memory
        return found

    def versions(self, ids: Sequence[str], connection: Connection) -> dict[str, int]:
        """The stored version of each of these ids that exists."""
        return read_versions(connection, ids)

    def embed_shas(self, ids: Sequence[str]) -> dict[str, str]:
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(memories.c.id, memories.c.embed_sha256).where(memories.c.id.in_(list(ids)))
            )
            return {row[0]: row[1] for row in rows}

    def semantic_keys(self, ids: Sequence[str]) -> dict[str, str]:
        """The `semantic_key` of each of these ids that has one."""
        c = memories.c
        found: dict[str, str] = {}
        with self.sql_engine.connect() as connection:
            for chunk in chunks(ids):
                keyed = select(c.id, c.semantic_key).where(c.id.in_(chunk), c.semantic_key.is_not(None))
                rows = connection.execute(keyed)
                found.update({row[0]: row[1] for row in rows})
        return found

    def find_active_by_key(
        self,
        column: str,
        key: str,
        owner_id: str,
        bucket: str,
        scope: str,
        team_id: str | None,
        connection: Connection,
    ) -> Memory | None:
        """The active memory holding `key` in `column` (semantic_key or state_key) within one space."""
        return find_active_by_key(connection, column, key, owner_id, bucket, scope, team_id)

    def session_tail(self, owner_id: str, session_id: str, turns: int) -> list[str]:
        """The context lines (domain/texts.py context_line) of the last `turns` memories written to this
        owner's session, oldest first."""
        c = memories.c
        statement = (
            select(c.content, c.speaker)
            .where(c.owner_id == owner_id, c.session_id == session_id)
            .order_by(insertion_order("memories", self.sql_engine.dialect.name).desc())
            .limit(turns)
        )
        with self.sql_engine.connect() as connection:
            rows = list(connection.execute(statement))
        return [context_line(row[0], row[1]) for row in reversed(rows)]

    def ids_matching(self, filters: ReadFilters) -> list[str]:
        with self.sql_engine.connect() as connection:
            return [row[0] for row in connection.execute(select(memories.c.id).where(_visibility(filters)))]

    def occurred_in(self, filters: ReadFilters, since: str, until: str, limit: int) -> list[str]:
        """Ids of the memories the filters admit that occurred in [since, until), newest first (at most
        `limit`): a time-led question's candidates (ranking/time_led.py)."""
        c = memories.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(c.id)
                .where(_visibility(filters), c.occurred_at >= since, c.occurred_at < until)
                .order_by(c.occurred_at.desc(), c.id)
                .limit(limit)
            )
            return [row[0] for row in rows]

    def recent(self, filters: ReadFilters, limit: int) -> list[Memory]:
        """Newest first by occurrence, then creation, then id."""
        c = memories.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(memories)
                .where(_visibility(filters))
                .order_by(c.occurred_at.desc(), c.created_at.desc(), c.id)
                .limit(limit)
            )
            return [memory_of_row(row) for row in rows]

    def unindexed(self, limit: int) -> list[tuple[Memory, str]]:
        """Records whose current version the index does not hold yet, with their embed digests."""
        c = memories.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(memories).where(or_(c.indexed_version.is_(None), c.indexed_version != c.version)).limit(limit)
            )
            return [(memory_of_row(row), row._mapping["embed_sha256"]) for row in rows]

    # -- the compactor's selections (one read transaction: pass the same connection) ----------

    def window_episodes(
        self, filters: ReadFilters, since: str, until: str, limit: int, connection: Connection
    ) -> list[tuple[Memory, str]]:
        """Episodic memories the filters admit (their statuses included) that a caller wrote, not
        reflect, occurred in [since, until), newest first, with their embed digests."""
        rows = connection.execute(
            select(memories)
            .where(_episodes_in(filters, since, until))
            .order_by(memories.c.occurred_at.desc(), memories.c.id)
            .limit(limit)
        )
        return [(memory_of_row(row), row._mapping["embed_sha256"]) for row in rows]

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
        return [memory_of_row(row) for row in rows]

    def stalest(self, filters: ReadFilters, limit: int, connection: Connection) -> list[Memory]:
        """Memories the filters admit, longest unused first (last access, else creation)."""
        c = memories.c
        idle_since = func.coalesce(c.last_accessed_at, c.created_at)
        rows = connection.execute(select(memories).where(_visibility(filters)).order_by(idle_since, c.id).limit(limit))
        return [memory_of_row(row) for row in rows]

    def owners(self) -> list[str]:
        """Owners that have active personal memories."""
        c = memories.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(c.owner_id)
                .where(c.status == MemoryStatus.ACTIVE.value, c.team_id.is_(None))
                .group_by(c.owner_id)
                .order_by(c.owner_id)
            )
            return [row[0] for row in rows]

    def iterate(self, owner_id: str | None = None, batch: int = 1000) -> Iterator[Memory]:
        """Every record (all statuses), in id order, one batch in memory at a time."""
        last = ""
        while True:
            statement = select(memories).where(memories.c.id > last).order_by(memories.c.id).limit(batch)
            if owner_id is not None:
                statement = statement.where(memories.c.owner_id == owner_id)
            with self.sql_engine.connect() as connection:
                rows = [memory_of_row(row) for row in connection.execute(statement)]
            if not rows:
                return
            yield from rows
            last = rows[-1].id

    def count(self, statuses: Sequence[MemoryStatus] | None = None) -> int:
        statement = select(func.count()).select_from(memories)
        if statuses is not None:
            statement = statement.where(memories.c.status.in_([s.value for s in statuses]))
        with self.sql_engine.connect() as connection:
            return int(connection.execute(statement).scalar_one())

    def count_indexed(self) -> int:
        c = memories.c
        with self.sql_engine.connect() as connection:
            return int(
                connection.execute(
                    select(func.count()).select_from(memories).where(c.indexed_version == c.version)
                ).scalar_one()
            )

    # -- management (usecases/manage.py) --------------------------------------------------------

    def listing(self, filters: ReadFilters, listing: Listing, limit: int) -> list[Memory]:
        """Memories the filters admit, narrowed by `listing`, newest first by `listing.order` (then id)."""
        c = memories.c
        statement = (
            select(memories)
            .where(_visibility(filters), *listing.clauses(self.sql_engine.dialect.name))
            .order_by(c[listing.order].desc(), c.id.desc())
            .limit(limit)
        )
        with self.sql_engine.connect() as connection:
            return [memory_of_row(row) for row in connection.execute(statement)]

    def derived_into(self, memory_id: str) -> list[Memory]:
        """Memories whose `derived_from` names this one (reflect's summaries and promotions)."""
        c = memories.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(memories).where(c.derived_from.contains(json.dumps(memory_id))).order_by(c.created_at, c.id)
            )
            return [memory_of_row(row) for row in rows]

    def superseding(self, memory_id: str) -> list[Memory]:
        """Memories whose metadata says they supersede this one (a semantic_key's next version)."""
        c = memories.c
        supersedes = json_field(c.metadata, "supersedes", self.sql_engine.dialect.name)
        with self.sql_engine.connect() as connection:
            rows = connection.execute(select(memories).where(supersedes == memory_id))
            return [memory_of_row(row) for row in rows]

    def audit_batches(self, batch: int = 1000) -> Iterator[list[dict[str, Any]]]:
        """Every audit record as stored, in the order written, a batch at a time (migrate-store)."""
        order = insertion_order("audit_log", self.sql_engine.dialect.name)
        columns = list(audit_log.c)
        offset = 0
        while True:
            with self.sql_engine.connect() as connection:
                rows = [
                    dict(r._mapping)
                    for r in connection.execute(select(*columns).order_by(order).offset(offset).limit(batch))
                ]
            if not rows:
                return
            yield rows
            offset += len(rows)

    def audit_ids(self, ids: Sequence[str]) -> set[str]:
        """Which of these audit record ids are stored."""
        found: set[str] = set()
        with self.sql_engine.connect() as connection:
            for chunk in chunks(ids):
                found.update(r[0] for r in connection.execute(select(audit_log.c.id).where(audit_log.c.id.in_(chunk))))
        return found

    def count_audit(self) -> int:
        with self.sql_engine.connect() as connection:
            return int(connection.execute(select(func.count()).select_from(audit_log)).scalar_one())

    def owner_ids(self, owner_id: str) -> list[str]:
        """Every record id an owner wrote, personal and team, any status."""
        with self.sql_engine.connect() as connection:
            return [row[0] for row in connection.execute(select(memories.c.id).where(memories.c.owner_id == owner_id))]

    def tally(self, filters: ReadFilters) -> dict[tuple[str, str], int]:
        """How many memories the filters admit, by (type, status)."""
        c = memories.c
        statement = select(c.type, c.status, func.count()).where(_visibility(filters)).group_by(c.type, c.status)
        with self.sql_engine.connect() as connection:
            return {(row[0], row[1]): int(row[2]) for row in connection.execute(statement)}
