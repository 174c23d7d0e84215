"""Lower-layer faults turned into domain errors in one place: SQL, the embedding cache, both indexes.

Copied from httpx's `map_httpcore_exceptions()`: each store's calls run inside a context manager
that looks the library exception up in a table and re-raises the domain error `from` it, so a fault
is a StoreError (HTTP 503, CLI exit 3) whichever backend, route or tool met it. SQLAlchemy calls
are mapped by an engine hook (`install_sql_mapping`), which covers every statement of every module
without wrapping each one; raw sqlite3 and the index clients use the context managers.
"""

from __future__ import annotations

import errno
import functools
import sqlite3
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager

from sqlalchemy import Engine, event
from sqlalchemy import exc as sa
from sqlalchemy.engine import ExceptionContext

from ..domain import IndexUnavailableError, StorageFullError, StoreError

__all__ = ["FaultTable", "install_sql_mapping", "map_edge_faults", "map_server_faults", "map_sql_faults"]

FaultTable = tuple[tuple[type[BaseException], type[StoreError]], ...]

SQL_FAULTS: FaultTable = (
    (sa.OperationalError, StoreError),  # locked, busy, disk I/O, cannot open, disk full
    (sa.TimeoutError, StoreError),  # connection pool exhausted
    (sqlite3.OperationalError, StoreError),  # raw sqlite3 (the embedding cache)
)
# The Qdrant Edge binding raises plain `Exception` for every storage fault ("vector 3 is not
# readable", "shard closed"), and pyo3's PanicException, a BaseException, when its Rust code panics
# (a truncated vector file: "index out of bounds"). The panic is matched by name in `_domain_error`:
# pyo3 creates its class at run time and no module exports it.
EDGE_FAULTS: FaultTable = ((Exception, IndexUnavailableError),)

_FULL_WORDS = ("disk is full", "no space left", "quota exceeded")


def _is_panic(error: BaseException) -> bool:
    kind = type(error)
    return kind.__module__ == "pyo3_runtime" and kind.__name__ == "PanicException"


def _is_full(error: BaseException) -> bool:
    if isinstance(error, OSError) and error.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return any(word in str(error).lower() for word in _FULL_WORDS)


def _domain_error(error: BaseException, table: FaultTable) -> type[StoreError] | None:
    """The domain class for `error` under `table`, StorageFullError for a full disk, or None."""
    for library, domain in table:
        if isinstance(error, library) or (domain is IndexUnavailableError and _is_panic(error)):
            return StorageFullError if _is_full(error) else domain
    return None


@contextmanager
def _mapped(table: FaultTable, what: str) -> Iterator[None]:
    try:
        yield
    except StoreError:
        raise
    except BaseException as error:  # re-raised below unless the table names it (never Ctrl-C, exit)
        domain = _domain_error(error, table)
        if domain is None:
            raise
        raise domain(f"{what}: {error}") from error


def map_sql_faults(what: str = "the system of record failed") -> AbstractContextManager[None]:
    """Run SQL (SQLAlchemy or raw sqlite3) with its faults raised as StoreError."""
    return _mapped(SQL_FAULTS, what)


def map_edge_faults(what: str = "the Qdrant Edge index failed") -> AbstractContextManager[None]:
    """Run Qdrant Edge calls with their faults (panics included) raised as IndexUnavailableError."""
    return _mapped(EDGE_FAULTS, what)


def map_server_faults(what: str = "the Qdrant request failed") -> AbstractContextManager[None]:
    """Run qdrant-client calls with their faults raised as IndexUnavailableError."""
    return _mapped(_server_faults(), what)


@functools.cache
def _server_faults() -> FaultTable:
    """Built on first use: importing qdrant-client takes 1-2 s, and only the server backend needs it."""
    from qdrant_client.http.exceptions import ResponseHandlingException, UnexpectedResponse

    return (
        (ResponseHandlingException, IndexUnavailableError),
        (UnexpectedResponse, IndexUnavailableError),
        (ConnectionError, IndexUnavailableError),
        (OSError, IndexUnavailableError),
        (RuntimeError, IndexUnavailableError),  # local mode: "QdrantLocal instance is closed"
    )


def install_sql_mapping(engine: Engine, what: str) -> None:
    """Make every statement on `engine` raise StoreError (or StorageFullError) for the SQL faults."""

    @event.listens_for(engine, "handle_error")
    def _raise_domain(context: ExceptionContext) -> None:
        raised = (context.original_exception, context.sqlalchemy_exception)
        domain = next((d for d in (_domain_error(e, SQL_FAULTS) for e in raised if e) if d), None)
        if domain is not None:
            raise domain(f"{what}: {context.original_exception}") from context.sqlalchemy_exception
