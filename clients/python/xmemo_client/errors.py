"""The errors a client raises: one per status class of the contract, each with the server's `code` and
`message` (`{"error": {"code", "message"}}`), so a caller can catch what it can act on."""

from __future__ import annotations

from typing import Any

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "ForbiddenError",
    "NotFoundError",
    "RateLimitedError",
    "ServerError",
    "UnavailableError",
    "ValidationError",
    "XmemoClientError",
    "error_for",
]


class XmemoClientError(Exception):
    """A request the server refused or could not answer. `status` is the HTTP status (0: no answer)."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(f"{status} {code}: {message}" if status else message)
        self.status = status
        self.code = code
        self.message = message


class ValidationError(XmemoClientError):
    """422 (or 400/413): the request was malformed; nothing was written."""


class AuthenticationError(XmemoClientError):
    """401: the key is missing, unknown or revoked."""


class ForbiddenError(XmemoClientError):
    """403: the key lacks the scope, team or owner the request needs."""


class NotFoundError(XmemoClientError):
    """404: no memory with that id is visible to this key."""


class ConflictError(XmemoClientError):
    """409: the memory or the reviewed plan changed since it was read; read again and retry."""


class RateLimitedError(XmemoClientError):
    """429: too many requests for this key; `retry_after` seconds until the next is taken."""

    def __init__(self, status: int, code: str, message: str, retry_after: float | None = None) -> None:
        super().__init__(status, code, message)
        self.retry_after = retry_after


class UnavailableError(XmemoClientError):
    """503, or no answer at all: a store is unavailable or full, or the server cannot be reached."""


class ServerError(XmemoClientError):
    """Another 5xx: a fault of the server."""


_BY_STATUS: dict[int, type[XmemoClientError]] = {
    400: ValidationError,
    401: AuthenticationError,
    403: ForbiddenError,
    404: NotFoundError,
    409: ConflictError,
    413: ValidationError,
    422: ValidationError,
    503: UnavailableError,
}


def error_for(status: int, body: Any, retry_after: str | None = None) -> XmemoClientError:
    """The exception for an error response: its status, and the contract's error body when it has one."""
    error = body.get("error") if isinstance(body, dict) else None
    code = str(error.get("code", "error")) if isinstance(error, dict) else "error"
    message = str(error.get("message", "")) if isinstance(error, dict) else ""
    message = message or f"the server answered {status}"
    if status == 429:
        try:
            wait = float(retry_after) if retry_after is not None else None
        except ValueError:
            wait = None
        return RateLimitedError(status, code, message, wait)
    kind = _BY_STATUS.get(status, ServerError if status >= 500 else XmemoClientError)
    return kind(status, code, message)
