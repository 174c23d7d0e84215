"""The named, frozen steps that build the system of record, recorded in `schema_migrations` when applied.

Each step is a literal schema: the tables as they were when the step shipped, written out here and
never derived from today's code, so that a field added to the record later cannot change what an
old step creates. A change to the schema is a new step appended to MIGRATIONS; an applied step is
never edited or reordered. `tests/retrieval/storage/test_migrations.py` checks that an empty database
migrated to the end equals the code's metadata (storage/schema.py), on SQLite and on PostgreSQL.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable

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
    text,
)
from sqlalchemy.engine import Connection

from .schema import schema_migrations

__all__ = ["MIGRATIONS", "MIGRATION_LOCK", "POSTGRESQL_ONLY_COLUMNS", "Migration", "migrate"]

Migration = tuple[str, Callable[[Connection], None]]

MIGRATION_LOCK = 0x786D656D6F  # "xmemo": the advisory lock key of migrations
# Columns m004 adds on PostgreSQL only: an insertion order (SQLite has its rowid).
POSTGRESQL_ONLY_COLUMNS = {"memories": ("seq",), "audit_log": ("seq",)}


def _m001_tables() -> tuple[Table, Table]:
    """`memories` and `meta` as the first release created them."""
    frozen = MetaData()
    memories = Table(
        "memories",
        frozen,
        Column("id", String(36), primary_key=True),
        Column("owner_id", String, nullable=False),
        Column("content", Text, nullable=False),
        Column("path", String, nullable=False),
        Column("type", String, nullable=False),
        Column("bucket", String, nullable=False),
        Column("scope", String, nullable=False),
        Column("team_id", String, nullable=True),
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
        Column("content_sha256", String, nullable=False),
        Column("context", Text, nullable=True),
        Column("embed_sha256", String(64), nullable=False),
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
        frozen,
        Column("key", String, primary_key=True),
        Column("value", Text, nullable=False),
    )
    return memories, meta


def _m001_initial(connection: Connection) -> None:
    for table in _m001_tables():
        table.create(connection, checkfirst=True)
    connection.execute(
        text(
            "CREATE TABLE IF NOT EXISTS audit_log (id VARCHAR(36) PRIMARY KEY, created_at VARCHAR NOT NULL, "
            "actor VARCHAR NOT NULL, action VARCHAR NOT NULL, plan_id VARCHAR, memory_ids TEXT NOT NULL, "
            "before TEXT NOT NULL, after TEXT NOT NULL, reason TEXT NOT NULL)"
        )
    )
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
        connection.execute(
            text(
                f"CREATE UNIQUE INDEX IF NOT EXISTS ux_memories_active_{column} ON memories "
                f"(owner_id, COALESCE(team_id, ''), bucket, scope, {column}) "
                f"WHERE status = 'active' AND {column} IS NOT NULL"
            )
        )


def _m004_tables() -> tuple[Table, Table]:
    """The change sequence and the embedding cache table, as m004 created them on PostgreSQL."""
    frozen = MetaData()
    changes = Table(
        "changes",
        frozen,
        Column("seq", BigInteger, primary_key=True, autoincrement=True),
        Column("memory_id", String(36), nullable=False),
        Column("version", Integer, nullable=True),
    )
    embeddings = Table(
        "embeddings",
        frozen,
        Column("model", String, primary_key=True),
        Column("sha256", String(64), primary_key=True),
        Column("vector", LargeBinary, nullable=False),
    )
    return changes, embeddings


def _m004_replicas(connection: Connection) -> None:
    """PostgreSQL: the change sequence, the embedding cache and an insertion order for the audit log
    (SQLite has its rowid; its cache keeps its own file and one process owns it, so it needs none)."""
    if connection.dialect.name != "postgresql":
        return
    for table in _m004_tables():
        table.create(connection, checkfirst=True)
    for name in POSTGRESQL_ONLY_COLUMNS:
        connection.execute(text(f"ALTER TABLE {name} ADD COLUMN IF NOT EXISTS seq BIGSERIAL"))
        connection.execute(text(f"CREATE INDEX IF NOT EXISTS ix_{name}_seq ON {name} (seq)"))


def _m005_speaker(connection: Connection) -> None:
    """Who said a memory: a conversation's speaker or a chat's role, which recall matches and prefers."""
    connection.execute(text("ALTER TABLE memories ADD COLUMN speaker VARCHAR"))


def _m006_read_questions(connection: Connection) -> None:
    """Which distinct questions (a digest of each) a memory was read for: promotion for use needs several."""
    connection.execute(
        text(
            "CREATE TABLE IF NOT EXISTS read_questions (memory_id VARCHAR(36) NOT NULL, "
            "question VARCHAR(32) NOT NULL, PRIMARY KEY (memory_id, question))"
        )
    )


def _m007_replica_marks(connection: Connection) -> None:
    """PostgreSQL: each replica's mark in the change sequence, so that what all live ones passed is pruned."""
    if connection.dialect.name != "postgresql":
        return
    connection.execute(
        text(
            "CREATE TABLE IF NOT EXISTS replica_marks (replica_id VARCHAR(32) PRIMARY KEY, "
            "seq BIGINT NOT NULL, seen_at DOUBLE PRECISION NOT NULL)"
        )
    )


MIGRATIONS: list[Migration] = [
    ("m001_initial", _m001_initial),
    ("m002_audit_tenancy", _m002_audit_tenancy),
    ("m003_one_active_key", _m003_one_active_key),
    ("m004_replicas", _m004_replicas),
    ("m005_speaker", _m005_speaker),
    ("m006_read_questions", _m006_read_questions),
    ("m007_replica_marks", _m007_replica_marks),
]  # append new steps; never edit or reorder an applied one


def migrate(engine: Engine, now: str, migrations: list[Migration] | None = None) -> list[str]:
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


def _apply(engine: Engine, now: str, steps: list[Migration]) -> list[str]:
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
