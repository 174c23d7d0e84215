"""The system of record: memories in SQLite through SQLAlchemy Core; every write commits here first."""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, and_, bindparam, cast, delete, func, or_, select, text, update
from sqlalchemy import String as SqlString
from sqlalchemy.engine import Connection, Row

from .errors import ConflictError
from .freespace import FreeSpace
from .records import Memory, MemoryStatus, MemoryType, ReadFilters, format_time, utc_now
from .schema import memories, meta, migrate, open_engine

__all__ = ["Listing", "MemoryStore"]


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

    def clauses(self) -> list[Any]:
        c = memories.c
        found: list[Any] = []
        if self.path_prefix:
            found.append(c.path.startswith(self.path_prefix, autoescape=True))
        if self.metadata is not None:
            key, value = self.metadata
            path = "$." + json.dumps(key)
            found.append(cast(func.json_extract(c.metadata, path), SqlString) == value)
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


def _to_row(memory: Memory, embed_sha256: str) -> dict[str, Any]:
    return {
        "id": memory.id,
        "owner_id": memory.owner_id,
        "team_id": memory.team_id,
        "bucket": memory.bucket,
        "scope": memory.scope,
        "path": memory.path,
        "type": memory.type.value,
        "content": memory.content,
        "content_sha256": memory.content_sha256,
        "embed_sha256": embed_sha256,
        "semantic_key": memory.semantic_key,
        "state_key": memory.state_key,
        "event_type": memory.event_type,
        "importance": memory.importance,
        "confidence": memory.confidence,
        "source": memory.source,
        "session_id": memory.session_id,
        "metadata": json.dumps(memory.metadata, ensure_ascii=False, sort_keys=True),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "occurred_at": memory.occurred_at,
        "last_accessed_at": memory.last_accessed_at,
        "access_count": memory.access_count,
        "expires_at": memory.expires_at,
        "status": memory.status.value,
        "version": memory.version,
        "derived_from": json.dumps(list(memory.derived_from)),
        "context": memory.context,
        "indexed_version": None,
    }


_NOT_UPDATED = ("id", "embed_sha256", "indexed_version")  # identity, and what only the index writes track


def _updated_row(memory: Memory) -> dict[str, Any]:
    """The columns an update of `memory` writes."""
    return {k: v for k, v in _to_row(memory, "").items() if k not in _NOT_UPDATED}


def _chunks(ids: Sequence[str], size: int = 500) -> Iterator[list[str]]:
    """Ids in slices that stay under SQLite's bound-parameter limit."""
    for start in range(0, len(ids), size):
        yield list(ids[start : start + size])


def _from_row(row: Row[Any]) -> Memory:
    m = row._mapping
    return Memory(
        id=m["id"],
        owner_id=m["owner_id"],
        team_id=m["team_id"],
        bucket=m["bucket"],
        scope=m["scope"],
        path=m["path"],
        type=MemoryType(m["type"]),
        content=m["content"],
        content_sha256=m["content_sha256"],
        semantic_key=m["semantic_key"],
        state_key=m["state_key"],
        event_type=m["event_type"],
        importance=m["importance"],
        confidence=m["confidence"],
        source=m["source"],
        session_id=m["session_id"],
        metadata=json.loads(m["metadata"]),
        created_at=m["created_at"],
        updated_at=m["updated_at"],
        occurred_at=m["occurred_at"],
        last_accessed_at=m["last_accessed_at"],
        access_count=m["access_count"],
        expires_at=m["expires_at"],
        status=MemoryStatus(m["status"]),
        version=m["version"],
        derived_from=tuple(json.loads(m["derived_from"])),
        context=m["context"],
    )


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


class MemoryStore:
    """Reads and writes memory records; the one module that knows the SQL layout."""

    def __init__(self, engine: Engine, space: FreeSpace | None = None) -> None:
        self.engine = engine
        self.space = space

    @classmethod
    def open(cls, path: Path, space: FreeSpace | None = None, busy_timeout_ms: int = 30_000) -> MemoryStore:
        """Open and migrate; SQL faults raise StoreError (retrieval/faults.py). Record writes check
        `space` first; bookkeeping writes (access, index versions) do not."""
        engine = open_engine(path, busy_timeout_ms)
        migrate(engine, format_time(utc_now()))
        return cls(engine, space)

    def _check_space(self) -> None:
        if self.space is not None:
            self.space.check()

    def close(self) -> None:
        self.engine.dispose()

    # -- meta ---------------------------------------------------------------------------------

    def get_meta(self, key: str) -> str | None:
        with self.engine.connect() as connection:
            return connection.execute(select(meta.c.value).where(meta.c.key == key)).scalar()

    def set_meta(self, key: str, value: str) -> None:
        with self.engine.begin() as connection:
            connection.execute(meta.delete().where(meta.c.key == key))
            connection.execute(meta.insert().values(key=key, value=value))

    # -- writes -------------------------------------------------------------------------------

    def insert(self, rows: Sequence[tuple[Memory, str]], connection: Connection | None = None) -> None:
        """Insert (memory, sha256 of the embedded text) pairs in one transaction."""
        if not rows:
            return
        self._check_space()
        values = [_to_row(memory, embed_sha) for memory, embed_sha in rows]
        if connection is not None:
            connection.execute(memories.insert(), values)
            return
        with self.engine.begin() as own:
            own.execute(memories.insert(), values)

    def replace(self, memory: Memory, expected_version: int, connection: Connection) -> None:
        """Write `memory` over its stored row if that row is still at `expected_version`, else conflict."""
        self._check_space()
        result = connection.execute(
            update(memories)
            .where(memories.c.id == memory.id, memories.c.version == expected_version)
            .values(**_updated_row(memory))
        )
        if result.rowcount != 1:
            raise ConflictError(f"memory {memory.id} changed since it was read (expected version {expected_version})")

    def replace_many(self, changes: Sequence[tuple[Memory, int]], connection: Connection) -> None:
        """`replace` for many (memory, expected_version) pairs in order, as one executemany.

        A memory may appear more than once (each expecting the version the previous pair wrote).
        Any row not at its expected version makes the whole call a ConflictError naming the first ones.
        """
        if not changes:
            return
        self._check_space()
        first_expected: dict[str, int] = {}
        for memory, expected in changes:
            first_expected.setdefault(memory.id, expected)
        stored = self.versions(list(first_expected), connection)
        moved = [i for i, expected in first_expected.items() if stored.get(i) != expected]
        if moved:
            shown = ", ".join(moved[:5]) + (f" and {len(moved) - 5} more" if len(moved) > 5 else "")
            raise ConflictError(f"memories changed since they were read: {shown}")
        columns = list(_updated_row(changes[0][0]))
        statement = (
            update(memories)
            .where(memories.c.id == bindparam("b_id"), memories.c.version == bindparam("b_expected"))
            .values({name: bindparam(f"b_{name}") for name in columns})
        )
        values = [
            {"b_id": memory.id, "b_expected": expected, **{f"b_{k}": v for k, v in _updated_row(memory).items()}}
            for memory, expected in changes
        ]
        result = connection.execute(statement, values)
        if result.rowcount != len(values):
            raise ConflictError("memories changed while the changes were being written")

    def set_status(self, memory: Memory, status: MemoryStatus, now: str, connection: Connection) -> Memory:
        """Move one memory to `status`, bumping its version; conflict if it changed meanwhile."""
        changed = replace(memory, status=status, updated_at=now, version=memory.version + 1)
        self.replace(changed, memory.version, connection)
        return changed

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
            connection.execute(statement, [{"b_id": k, "b_count": v} for k, v in counts.items()])

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
            .order_by(text("rowid DESC"))
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
            select(memories).where(_visibility(filters), *listing.clauses())
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
        path = "$." + json.dumps("supersedes")
        with self.engine.connect() as connection:
            rows = connection.execute(select(memories).where(func.json_extract(c.metadata, path) == memory_id))
            return [_from_row(row) for row in rows]

    def set_embed_sha(self, memory_id: str, embed_sha256: str, connection: Connection) -> None:
        """Record the embedding-cache key of a memory whose content was edited."""
        connection.execute(update(memories).where(memories.c.id == memory_id).values(embed_sha256=embed_sha256))

    def delete(self, ids: Sequence[str], connection: Connection) -> None:
        """Remove these records for good (forget); only retrieval.manage calls this."""
        for chunk in _chunks(ids):
            connection.execute(delete(memories).where(memories.c.id.in_(chunk)))

    def embed_shas_in_use(self, digests: Sequence[str], connection: Connection) -> set[str]:
        """Which of these embedding-cache keys some stored record still uses."""
        found: set[str] = set()
        for chunk in _chunks(digests):
            rows = connection.execute(select(memories.c.embed_sha256).where(memories.c.embed_sha256.in_(chunk)))
            found.update(row[0] for row in rows)
        return found

    def with_context_containing(self, owner_id: str, session_id: str, snippet: str,
                                connection: Connection) -> list[Memory]:
        """Memories of this owner's session whose BM25 context holds `snippet` (a forgotten turn)."""
        c = memories.c
        rows = connection.execute(
            select(memories).where(c.owner_id == owner_id, c.session_id == session_id,
                                   c.context.contains(snippet, autoescape=True))
        )
        return [_from_row(row) for row in rows]

    def set_context(self, memory_id: str, context: str | None, connection: Connection) -> None:
        """Rewrite a memory's derived BM25 context (no new version); the index must take it again."""
        connection.execute(
            update(memories).where(memories.c.id == memory_id).values(context=context, indexed_version=None)
        )

    def owner_ids(self, owner_id: str, connection: Connection) -> list[str]:
        """Every record id an owner wrote, personal and team, any status."""
        rows = connection.execute(select(memories.c.id).where(memories.c.owner_id == owner_id))
        return [row[0] for row in rows]

    def tally(self, filters: ReadFilters) -> dict[tuple[str, str], int]:
        """How many memories the filters admit, by (type, status)."""
        c = memories.c
        statement = select(c.type, c.status, func.count()).where(_visibility(filters)).group_by(c.type, c.status)
        with self.engine.connect() as connection:
            return {(row[0], row[1]): int(row[2]) for row in connection.execute(statement)}
