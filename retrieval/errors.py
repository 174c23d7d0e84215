"""The exception tree of xmemo-server; every domain error the service can raise lives here.

    XMemoError                      base; never raised itself
    ├── ValidationError             input breaks the contract (HTTP 422, CLI exit 1)
    ├── NotFoundError               unknown memory id, or one the caller may not see (404)
    ├── PermissionDeniedError       missing scope, or a team/owner not granted (403)
    ├── AuthenticationError         missing, unknown or revoked API key (401, CLI exit 2)
    ├── ConflictError               a memory changed under a write that planned on it (409)
    └── StoreError                  a store cannot serve (503, CLI exit 3)
        ├── ModelMismatchError      the store was embedded with another model; run `xmemo reindex`
        ├── IndexUnavailableError   the vector index cannot be opened or queried
        └── StorageFullError        the data dir's filesystem is short of space; writes refused

Library faults (SQLAlchemy, sqlite3, Qdrant Edge, qdrant-client) become these in one place,
`retrieval/faults.py`.
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

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class ValidationError(XMemoError):
    """Raised when a request or command argument breaks the contract (range, format, unknown field)."""

    code = "validation_error"


class NotFoundError(XMemoError):
    """Raised when a memory id is unknown or not visible to the caller (never revealing which)."""

    code = "not_found"


class PermissionDeniedError(XMemoError):
    """Raised when the principal lacks a scope, or asks for a team or owner it was not granted."""

    code = "forbidden"


class AuthenticationError(XMemoError):
    """Raised when an API key is missing, unknown or revoked."""

    code = "unauthorized"


class ConflictError(XMemoError):
    """Raised when a memory changed between reading it and writing on the strength of that read."""

    code = "conflict"


class StoreError(XMemoError):
    """Raised when the system of record or the index cannot serve the request."""

    code = "store_unavailable"


class ModelMismatchError(StoreError):
    """Raised when a store embedded with one model is opened with another; `xmemo reindex` fixes it."""

    code = "model_mismatch"


class IndexUnavailableError(StoreError):
    """Raised when the vector index cannot be opened, written or queried."""

    code = "index_unavailable"


class StorageFullError(StoreError):
    """Raised when a write would eat into the free-space reserve, or a store reports a full disk."""

    code = "storage_full"
