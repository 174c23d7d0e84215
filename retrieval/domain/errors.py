"""The exception tree of xmemo-server; every domain error the service can raise lives here.

    XMemoError                      base; never raised itself                         HTTP  exit
    ├── ValidationError             input breaks the contract                          422    1
    ├── NotFoundError               unknown memory id, or one the caller may not see   404    1
    ├── PermissionDeniedError       missing scope, or a team/owner not granted         403    2
    ├── AuthenticationError         missing, unknown or revoked API key                401    2
    ├── ConflictError               a memory changed under a write that planned on it  409    1
    └── StoreError                  a store cannot serve                               503    3
        ├── ModelMismatchError      the store was embedded with another model; run `xmemo reindex`
        ├── IndexUnavailableError   the vector index cannot be opened or queried
        └── StorageFullError        the data dir's filesystem is short of space; writes refused

Each class carries its HTTP status and CLI exit code (`status`, `exit_code`): the one table from an
error to what REST, MCP and the CLI answer. Library faults (SQLAlchemy, sqlite3, Qdrant Edge,
qdrant-client) become these in one place, `retrieval/storage/faults.py`.
"""

from __future__ import annotations

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "IndexUnavailableError",
    "ModelMismatchError",
    "NotFoundError",
    "PermissionDeniedError",
    "StorageFullError",
    "StoreError",
    "ValidationError",
    "XMemoError",
]


class XMemoError(Exception):
    """Base of every error the product raises on purpose."""

    code = "internal_error"
    status = 500
    exit_code = 1

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(XMemoError):
    """Raised when a request or command argument breaks the contract (range, format, unknown field)."""

    code = "validation_error"
    status = 422


class NotFoundError(XMemoError):
    """Raised when a memory id is unknown or not visible to the caller (never revealing which)."""

    code = "not_found"
    status = 404


class PermissionDeniedError(XMemoError):
    """Raised when the principal lacks a scope, or asks for a team or owner it was not granted."""

    code = "forbidden"
    status = 403
    exit_code = 2


class AuthenticationError(XMemoError):
    """Raised when an API key is missing, unknown or revoked."""

    code = "unauthorized"
    status = 401
    exit_code = 2


class ConflictError(XMemoError):
    """Raised when a memory changed between reading it and writing on the strength of that read."""

    code = "conflict"
    status = 409


class StoreError(XMemoError):
    """Raised when the system of record or the index cannot serve the request."""

    code = "store_unavailable"
    status = 503
    exit_code = 3


class ModelMismatchError(StoreError):
    """Raised when a store embedded with one model is opened with another; `xmemo reindex` fixes it."""

    code = "model_mismatch"


class IndexUnavailableError(StoreError):
    """Raised when the vector index cannot be opened, written or queried."""

    code = "index_unavailable"


class StorageFullError(StoreError):
    """Raised when a write would eat into the free-space reserve, or a store reports a full disk."""

    code = "storage_full"
