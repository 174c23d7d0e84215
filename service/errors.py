"""Domain errors to the contract's HTTP status codes (section 1), shared by REST and MCP."""

from __future__ import annotations

from retrieval import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    StoreError,
    ValidationError,
    XMemoError,
)

__all__ = ["status_of"]

_STATUS: tuple[tuple[type[XMemoError], int], ...] = (
    (ValidationError, 422),
    (NotFoundError, 404),
    (PermissionDeniedError, 403),
    (AuthenticationError, 401),
    (ConflictError, 409),
    (StoreError, 503),
)


def status_of(error: XMemoError) -> int:
    for kind, status in _STATUS:
        if isinstance(error, kind):
            return status
    return 500
