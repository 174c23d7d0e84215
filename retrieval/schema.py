"""Tables of the system of record and the named migrations that create them, recorded when applied."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from sqlalchemy import (
    Column,
    Engine,
    Float,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    create_engine,
    event,
    text,
)
from sqlalchemy.engine import Connection

from .faults import install_sql_mapping

__all__ = ["MIGRATIONS", "audit_log", "memories", "meta", "metadata", "migrate", "open_engine"]

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    Column("id", String(36), primary_key=True),
    Column("owner_id", String, nullable=False),
    Column("team_id", String, nullable=True),
    Column("bucket", String, nullable=False),
    Column("scope", String, nullable=False),
    Column("path", String, nullable=False),
    Column("type", String, nullable=False),
    Column("content", Text, nullable=False),
    Column("content_sha256", String(64), nullable=False),
    Column("embed_sha256", String(64), nullable=False),
    Column("semantic_key", String, nullable=True),
    Column("state_key", String, nullable=True),
    Column("event_type", String, nullable=True),
    Column("importance", Float, nullable=False),
    Column("confidence", Float, nullable=False),
    Column("source", String, nullable=False),
    Column("session_id", String, nullable=True),
    Column("metadata", Text, nullable=False),
    Column("created_at", String, nullable=False),
    Column("updated_at", String, nullable=False),
    Column("occurred_at", String, nullable=False),
    Column("last_accessed_at", String, nullable=True),
    Column("access_count", Integer, nullable=False),
    Column("expires_at", String, nullable=True),
    Column("status", String, nullable=False),
    Column("version", Integer, nullable=False),
    Column("derived_from", Text, nullable=False),
    # The preceding turns of the same session when the memory was written; indexed for BM25 only.
    Column("context", Text, nullable=True),
    # The record version the vector index holds; differs from `version` until the index caught up.
    Column("indexed_version", Integer, nullable=True),
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


MIGRATIONS: list[tuple[str, Callable[[Connection], None]]] = [
    ("m001_initial", _m001_initial),
    ("m002_audit_tenancy", _m002_audit_tenancy),
]  # append new steps; never edit or reorder an applied one


def open_engine(path: Path, busy_timeout_ms: int = 30_000) -> Engine:
    """A SQLite engine in WAL mode with a busy timeout, foreign keys on and synchronous=NORMAL, whose
    faults (locked, disk full, I/O) raise StoreError (retrieval/faults.py)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        f"sqlite:///{path}", connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000}
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


def migrate(engine: Engine, now: str) -> list[str]:
    """Apply the migrations not yet recorded, each in its own transaction; return their names."""
    applied: list[str] = []
    with engine.begin() as connection:
        schema_migrations.create(connection, checkfirst=True)
        done = {row[0] for row in connection.execute(text("SELECT name FROM schema_migrations"))}
    for name, step in MIGRATIONS:
        if name in done:
            continue
        with engine.begin() as connection:
            step(connection)
            connection.execute(schema_migrations.insert().values(name=name, applied_at=now))
        applied.append(name)
    return applied
