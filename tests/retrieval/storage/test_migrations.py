"""The frozen migrations build exactly the schema the code reads and writes: an empty database migrated
to the end equals the metadata (storage/schema.py, the record's table derived from `Memory`), on SQLite
and on PostgreSQL, and a store left at the first step upgrades to the same schema, its rows kept."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import Engine, inspect, text

from retrieval.storage import MIGRATIONS, POSTGRESQL_ONLY_COLUMNS, metadata, migrate, open_engine
from tests.support import fresh_database

NOW = "2026-12-01T00:00:00.000000Z"


def _target(tmp_path: Path, database_url: str | None) -> Engine:
    return open_engine(database_url) if database_url else open_engine(tmp_path / "memories.sqlite")


def _affinity(kind: Any) -> str:
    """A column type as both databases agree on it: its SQL family, without lengths."""
    name = type(kind).__name__.upper()
    same = {"DOUBLE": "FLOAT", "REAL": "FLOAT", "BYTEA": "BINARY", "BLOB": "BINARY", "CHAR": "TEXT", "STRING": "TEXT"}
    for family in ("BIGINT", "INT", "CHAR", "STRING", "TEXT", "FLOAT", "DOUBLE", "REAL", "BYTEA", "BLOB", "BINARY"):
        if family in name:
            return same.get(family, family)
    return name


def _index_names(engine: Engine, table: str) -> set[str]:
    """Index names as the database lists them (SQLAlchemy cannot reflect m003's expression indexes)."""
    if engine.dialect.name == "postgresql":
        query = "SELECT indexname FROM pg_indexes WHERE tablename = :t AND indexname NOT LIKE '%_pkey'"
    else:
        query = "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = :t AND sql IS NOT NULL"
    with engine.connect() as connection:
        return {row[0] for row in connection.execute(text(query), {"t": table})}


def _schema(engine: Engine) -> dict[str, Any]:
    """Tables, their columns (name, type family, nullable, primary key) and their index names. A primary
    key counts as not null: SQLite lets a text key of a table made by SQL text hold NULL (m001's
    `audit_log`), though nothing ever writes one."""
    found = inspect(engine)
    dialect = engine.dialect.name
    schema: dict[str, Any] = {}
    for table in sorted(set(found.get_table_names()) - {"api_keys", "console_sessions"}):
        keys = set(found.get_pk_constraint(table)["constrained_columns"])
        extra = POSTGRESQL_ONLY_COLUMNS.get(table, ()) if dialect == "postgresql" else ()
        columns = [
            (c["name"], _affinity(c["type"]), bool(c["nullable"]) and c["name"] not in keys, c["name"] in keys)
            for c in found.get_columns(table)
            if c["name"] not in extra
        ]
        indexes = _index_names(engine, table) - {f"ix_{table}_seq"}
        schema[table] = {"columns": sorted(columns), "indexes": indexes}
    return schema


def _expected() -> dict[str, Any]:
    """The metadata's tables as `_schema` reads a database, plus the partial unique indexes of m003,
    which are SQL text (expressions) rather than metadata; `changes`, `embeddings` and
    `replica_marks` on PostgreSQL only."""
    schema: dict[str, Any] = {}
    for table in metadata.sorted_tables:
        columns = [
            (c.name, _affinity(c.type), bool(c.nullable) and not c.primary_key, c.primary_key) for c in table.columns
        ]
        schema[table.name] = {"columns": sorted(columns), "indexes": {i.name for i in table.indexes}}
    schema["memories"]["indexes"] |= {"ux_memories_active_semantic_key", "ux_memories_active_state_key"}
    return schema


@pytest.fixture(params=["sqlite", "postgresql"])
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    if request.param == "sqlite":
        yield None
        return
    with fresh_database() as url:
        yield url


def test_a_migrated_empty_database_equals_the_metadata(tmp_path: Path, database: str | None) -> None:
    engine = _target(tmp_path, database)
    try:
        assert migrate(engine, NOW) == [name for name, _ in MIGRATIONS]
        expected = _expected()
        if engine.dialect.name != "postgresql":  # m004 and m007 make these on PostgreSQL only
            del expected["changes"], expected["embeddings"], expected["replica_marks"]
        assert _schema(engine) == expected
        assert migrate(engine, NOW) == []  # every step ran once and was recorded
    finally:
        engine.dispose()


def test_a_store_at_the_first_step_upgrades_to_the_same_schema_and_keeps_its_rows(
    tmp_path: Path, database: str | None
) -> None:
    first = _target(tmp_path / "first", database) if database is None else open_engine(database)
    try:
        migrate(first, NOW, MIGRATIONS[:1])
        with first.begin() as connection:
            connection.execute(text("INSERT INTO meta (key, value) VALUES ('kept', 'yes')"))
        assert migrate(first, NOW) == [name for name, _ in MIGRATIONS[1:]]
        upgraded = _schema(first)
        with first.connect() as connection:
            assert connection.execute(text("SELECT value FROM meta WHERE key = 'kept'")).scalar() == "yes"
    finally:
        first.dispose()
    if database is None:
        fresh = _target(tmp_path / "fresh", None)
        try:
            migrate(fresh, NOW)
            assert _schema(fresh) == upgraded
        finally:
            fresh.dispose()
    else:
        with fresh_database() as url:
            fresh = open_engine(url)
            try:
                migrate(fresh, NOW)
                assert _schema(fresh) == upgraded
            finally:
                fresh.dispose()
