"""Tables of the system of record and the named migrations that create them, recorded when applied."""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import Any
from pathlib import Path

from sqlalchemy import (
    BigInteger,
    Column,
    Engine,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    literal_column,
    text,
)
from sqlalchemy.engine import Connection

from .columns import memory_columns
from .faults import install_sql_mapping

__all__ = [
    "MIGRATIONS", "audit_log", "changes", "embeddings", "engine_url", "insertion_order", "memories", "meta", "metadata", "migrate",
    "open_engine",
]

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    *memory_columns(),  # one per field of the record (retrieval.columns), then the store's own two
    Index("ix_memories_owner_status", "owner_id", "status"),
    Index("ix_memories_semantic_key", "owner_id", "semantic_key"),
    Index("ix_memories_state_key", "owner_id", "state_key"),
    Index("ix_memories_team", "team_id"),
    Index("ix_memories_unindexed", "indexed_version", "version"),
    Index("ix_memories_occurred", "owner_id", "occurred_at"),
)

meta = Table(
    "meta",
    metadata,
    Column("key", String, primary_key=True),
    Column("value", Text, nullable=False),
)

audit_log = Table(
    "audit_log",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("created_at", String, nullable=False),
    Column("actor", String, nullable=False),
    Column("action", String, nullable=False),
    Column("plan_id", String, nullable=True),
    Column("memory_ids", Text, nullable=False),
    Column("before", Text, nullable=False),
    Column("after", Text, nullable=False),
    Column("reason", Text, nullable=False),
    Column("owner_id", String, nullable=False),  # m002
    Column("team_id", String, nullable=True),  # m002
)

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("name", String, primary_key=True),
    Column("applied_at", String, nullable=False),
)

# PostgreSQL only (m004): the change sequence replicas follow, and the embedding cache in the record.
# A change row names a memory whose current row (or absence: forgotten) an index must take; rows are
# numbered in commit order (unit_of_work.UnitOfWork takes CHANGE_LOCK before appending them).
changes = Table(
    "changes",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=True),
    Column("memory_id", String(36), nullable=False),
    Column("version", Integer, nullable=True),  # None: the memory was forgotten
)

embeddings = Table(
    "embeddings",
    metadata,
    Column("model", String, primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("vector", LargeBinary, nullable=False),
)


def _m001_initial(connection: Connection) -> None:
    metadata.create_all(connection, tables=[memories, meta], checkfirst=True)
    connection.execute(text(
        "CREATE TABLE IF NOT EXISTS audit_log (id VARCHAR(36) PRIMARY KEY, created_at VARCHAR NOT NULL, "
        "actor VARCHAR NOT NULL, action VARCHAR NOT NULL, plan_id VARCHAR, memory_ids TEXT NOT NULL, "
        "before TEXT NOT NULL, after TEXT NOT NULL, reason TEXT NOT NULL)"
    ))
    connection.execute(text("CREATE INDEX IF NOT EXISTS ix_audit_created ON audit_log (created_at)"))


def _m002_audit_tenancy(connection: Connection) -> None:
    """Audit records carry the space they changed, so that a tenant lists only its own."""
    connection.execute(text("ALTER TABLE audit_log ADD COLUMN owner_id VARCHAR NOT NULL DEFAULT ''"))
    connection.execute(text("ALTER TABLE audit_log ADD COLUMN team_id VARCHAR"))
    connection.execute(text("CREATE INDEX IF NOT EXISTS ix_audit_owner_created ON audit_log (owner_id, created_at)"))


def _m003_one_active_key(connection: Connection) -> None:
    """One active memory per key and space, enforced by the database: two writers (two replicas) of
    the same `semantic_key` or `state_key` cannot both insert; the second fails and retries as a
    supersede. The space is the one `MemoryStore.find_active_by_key` reads (owner, team, bucket, scope)."""
    for column in ("semantic_key", "state_key"):
        connection.execute(text(
            f"CREATE UNIQUE INDEX IF NOT EXISTS ux_memories_active_{column} ON memories "
            f"(owner_id, COALESCE(team_id, ''), bucket, scope, {column}) "
            f"WHERE status = 'active' AND {column} IS NOT NULL"
        ))


def _m004_replicas(connection: Connection) -> None:
    """PostgreSQL: the change sequence, the embedding cache and an insertion order for the audit log
    (SQLite has its rowid; its cache keeps its own file and one process owns it, so it needs none)."""
    if connection.dialect.name != "postgresql":
        return
    metadata.create_all(connection, tables=[changes, embeddings], checkfirst=True)
    for table in ("memories", "audit_log"):
        connection.execute(text(f"ALTER TABLE {table} ADD COLUMN IF NOT EXISTS seq BIGSERIAL"))
        connection.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{table}_seq ON {table} (seq)"))


def insertion_order(table: str, dialect: str) -> Any:
    """The column that numbers a table's rows in the order they were written: SQLite's rowid, the
    `seq` that m004 adds on PostgreSQL (times can tie: an import batch, a plan's audit records)."""
    return literal_column(f"{table}.rowid" if dialect == "sqlite" else f"{table}.seq")


MIGRATIONS: list[tuple[str, Callable[[Connection], None]]] = [
    ("m001_initial", _m001_initial),
    ("m002_audit_tenancy", _m002_audit_tenancy),
    ("m003_one_active_key", _m003_one_active_key),
    ("m004_replicas", _m004_replicas),
]  # append new steps; never edit or reorder an applied one


def engine_url(database_url: str) -> str:
    """The SQLAlchemy URL of a `postgresql://user:pass@host:port/db` as people write it: the service
    chooses its driver (psycopg 3). A URL naming a driver, or a sqlite URL, is kept as given."""
    for plain in ("postgresql://", "postgres://"):
        if database_url.startswith(plain):
            return "postgresql+psycopg://" + database_url.removeprefix(plain)
    return database_url


def open_engine(target: Path | str, busy_timeout_ms: int = 30_000) -> Engine:
    """A SQL engine whose faults (locked, disk full, I/O, connection lost) raise StoreError
    (retrieval/faults.py): a SQLite file in WAL mode with a busy timeout, foreign keys on and
    synchronous=NORMAL, or a database URL (PostgreSQL)."""
    if isinstance(target, str):
        return _open_url(engine_url(target), busy_timeout_ms)
    path = target
    path.parent.mkdir(parents=True, exist_ok=True)
    # No cap on connections beyond the 8 kept open: a checkout never waits for another thread to give
    # one back. The service reads on its event loop (MemoryEngine.reads_in_process), which must not
    # wait on worker threads; each thread holds at most one connection at a time.
    engine = create_engine(
        f"sqlite:///{path}", connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
        pool_size=8, max_overflow=-1,
    )
    install_sql_mapping(engine, f"the database {path.name} failed")

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    return engine


def _open_url(url: str, busy_timeout_ms: int) -> Engine:
    """PostgreSQL: a pool sized for the service's worker threads, connections checked before use (a
    restarted database is met as a fresh connection, not an error), lock waits bounded like SQLite's."""
    options = {"options": f"-c lock_timeout={int(busy_timeout_ms)}"} if url.startswith("postgresql") else {}
    engine = create_engine(url, pool_size=8, max_overflow=24, pool_pre_ping=True, connect_args=options)
    install_sql_mapping(engine, f"the database at {engine.url.render_as_string(hide_password=True)} failed")
    return engine


def migrate(engine: Engine, now: str,
            migrations: list[tuple[str, Callable[[Connection], None]]] | None = None) -> list[str]:
    """Apply the migrations not yet recorded, each in its own transaction; return their names.

    On PostgreSQL an advisory lock serialises replicas that start at once (each would otherwise run
    the same step, and one would fail on the other's table)."""
    steps = MIGRATIONS if migrations is None else migrations
    with contextlib.ExitStack() as held:
        if engine.dialect.name == "postgresql":
            guard = held.enter_context(engine.connect())
            guard.execute(text("SELECT pg_advisory_lock(:key)"), {"key": MIGRATION_LOCK})
            held.callback(lambda: guard.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": MIGRATION_LOCK}))
        return _apply(engine, now, steps)


MIGRATION_LOCK = 0x786D656D6F  # "xmemo": the advisory lock key of migrations


def _apply(engine: Engine, now: str, steps: list[tuple[str, Callable[[Connection], None]]]) -> list[str]:
    applied: list[str] = []
    with engine.begin() as connection:
        schema_migrations.create(connection, checkfirst=True)
        done = {row[0] for row in connection.execute(text("SELECT name FROM schema_migrations"))}
    for name, step in steps:
        if name in done:
            continue
        with engine.begin() as connection:
            step(connection)
            connection.execute(schema_migrations.insert().values(name=name, applied_at=now))
        applied.append(name)
    return applied
