"""PostgreSQL for tests: a fresh database per use on the local server, dropped afterwards.

The server is the one `.ci/services` starts (127.0.0.1:5432, trust auth). Without it a test that
needs it fails under CI (`CI` set) and is skipped with the reason elsewhere, as tests/test_paths.py does.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from sqlalchemy import create_engine, text

SERVER = "postgresql://postgres@127.0.0.1:5432"
ADMIN_URL = f"{SERVER}/test"


def _admin():  # type: ignore[no-untyped-def]
    return create_engine(ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")


def require_postgres() -> None:
    """Skip (fail under CI) when the server is not reachable."""
    try:
        engine = _admin()
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        engine.dispose()
    except Exception as error:  # no driver or no server: skipped here, CI starts both (.ci/run)
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL}: {error}")


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database; yields its `postgresql://` URL, as a user writes it, and drops it after."""
    require_postgres()
    name = f"xmemo_{uuid.uuid4().hex[:12]}"
    engine = _admin()
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield f"{SERVER}/{name}"
    finally:
        with engine.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        engine.dispose()
