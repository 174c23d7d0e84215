"""Opening the system of record: a SQLite file in WAL mode, or a database URL (PostgreSQL), with every
statement's faults raised as StoreError (storage/faults.py)."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import Engine, create_engine, event

from .faults import install_sql_mapping

__all__ = ["engine_url", "open_engine"]


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
        f"sqlite:///{path}",
        connect_args={"check_same_thread": False, "timeout": busy_timeout_ms / 1000},
        pool_size=8,
        max_overflow=-1,
    )
    install_sql_mapping(engine, f"the database {path.name} failed")

    @event.listens_for(engine, "connect")
    def _pragmas(dbapi_connection, _record):  # type: ignore[no-untyped-def]
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={int(busy_timeout_ms)}")
        cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute("PRAGMA foreign_keys=ON")
        # A deleted row's bytes are overwritten, not left in free pages: what a forget removes is gone
        # from the file (and, after the checkpoint forget runs, from the write-ahead log).
        cursor.execute("PRAGMA secure_delete=ON")
        cursor.close()

    return engine


def _open_url(url: str, busy_timeout_ms: int) -> Engine:
    """PostgreSQL: a pool sized for the service's worker threads, connections checked before use (a
    restarted database is met as a fresh connection, not an error), lock waits bounded like SQLite's."""
    options = {"options": f"-c lock_timeout={int(busy_timeout_ms)}"} if url.startswith("postgresql") else {}
    engine = create_engine(url, pool_size=8, max_overflow=24, pool_pre_ping=True, connect_args=options)
    install_sql_mapping(engine, f"the database at {engine.url.render_as_string(hide_password=True)} failed")
    return engine
