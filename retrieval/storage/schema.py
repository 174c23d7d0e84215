"""The tables of the system of record as the code reads and writes them (SQLAlchemy Core metadata).

`memories` is derived from the record (storage/columns.py), so that a read decodes its columns in the
record's field order. The database is built by the frozen steps of storage/migrations.py, never from
this metadata; tests/retrieval/storage/test_migrations.py checks that the two agree.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    Column,
    Float,
    Index,
    Integer,
    LargeBinary,
    MetaData,
    String,
    Table,
    Text,
    literal_column,
)

from .columns import memory_columns

__all__ = [
    "audit_log",
    "changes",
    "embeddings",
    "insertion_order",
    "memories",
    "meta",
    "metadata",
    "read_questions",
    "replica_marks",
    "schema_migrations",
]

metadata = MetaData()

memories = Table(
    "memories",
    metadata,
    *memory_columns(),  # one per field of the record (storage/columns.py), then the store's own two
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
    Index("ix_audit_created", "created_at"),
    Index("ix_audit_owner_created", "owner_id", "created_at"),
)

# m006: the distinct questions each memory was read for (a digest each, never the text), which
# promotion for use counts (compactor/plan.py). One row per memory and question; forget removes them.
read_questions = Table(
    "read_questions",
    metadata,
    Column("memory_id", String(36), primary_key=True),
    Column("question", String(32), primary_key=True),
)

schema_migrations = Table(
    "schema_migrations",
    metadata,
    Column("name", String, primary_key=True),
    Column("applied_at", String, nullable=False),
)

# PostgreSQL only (m004): the change sequence replicas follow, and the embedding cache in the record.
# A change row names a memory whose current row (or absence: forgotten) an index must take; rows are
# numbered in commit order (storage/unit_of_work.py takes CHANGE_LOCK before appending them).
changes = Table(
    "changes",
    metadata,
    Column("seq", BigInteger, primary_key=True, autoincrement=True),
    Column("memory_id", String(36), nullable=False),
    Column("version", Integer, nullable=True),  # None: the memory was forgotten
)

# PostgreSQL only (m007): how far each replica's index has followed the change sequence, and when it
# last said so (epoch seconds of the database's clock); changes every live replica has passed are pruned.
replica_marks = Table(
    "replica_marks",
    metadata,
    Column("replica_id", String(32), primary_key=True),
    Column("seq", BigInteger, nullable=False),
    Column("seen_at", Float, nullable=False),
)

embeddings = Table(
    "embeddings",
    metadata,
    Column("model", String, primary_key=True),
    Column("sha256", String(64), primary_key=True),
    Column("vector", LargeBinary, nullable=False),
)


def insertion_order(table: str, dialect: str) -> Any:
    """The column that numbers a table's rows in the order they were written: SQLite's rowid, the
    `seq` that m004 adds on PostgreSQL (times can tie: an import batch, a plan's audit records)."""
    return literal_column(f"{table}.rowid" if dialect == "sqlite" else f"{table}.seq")
