"""The CLI beside a running server: while `xmemo serve` holds the data dir, the data commands reach it
over its HTTP API, as the operator acting for `--owner`, with the local path's output and exit codes.

`xmemo serve` writes `<data dir>/server.json` (0600, in the 0700 data dir): its URL and a secret made at
start (service/middleware.py takes it as the operator, acting as the owner in `X-XMemo-Owner`). The file
is only believed while the data dir's lock is held; a stale one (a killed server) is ignored.
"""

from __future__ import annotations

import fcntl
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from retrieval import (
    AuthenticationError,
    ConflictError,
    NotFoundError,
    PermissionDeniedError,
    RetrievalSettings,
    StoreError,
    ValidationError,
    XMemoError,
)
from retrieval.storage import replace_private

from ..client import XmemoClient, XmemoClientError
from ..client.errors import error_for

__all__ = ["SERVER_FILE", "Remote", "announce", "remote_of"]

SERVER_FILE = "server.json"
OWNER_HEADER = "X-XMemo-Owner"


@dataclass(frozen=True, slots=True)
class Remote:
    """A server holding the data dir: where it listens and the secret it takes."""

    url: str
    token: str

    @contextmanager
    def client(self, owner: str) -> Iterator[XmemoClient]:
        """A client acting as `owner`; a refusal becomes the domain error the local path raises."""
        with XmemoClient(self.url, self.token, headers={OWNER_HEADER: owner}, timeout=300) as client:
            try:
                yield client
            except XmemoClientError as error:
                raise _domain(error) from None

    def mcp_text(self, owner: str, tool: str, arguments: dict[str, Any]) -> str:
        """One MCP tool's text (what the local path prints for recall-context)."""
        headers = {
            "Authorization": f"Bearer {self.token}",
            OWNER_HEADER: owner,
            "Accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        try:
            response = httpx.post(f"{self.url}/mcp", headers=headers, json=body, timeout=300)
        except httpx.TransportError as error:
            raise StoreError(f"cannot reach the server at {self.url}: {error}") from error
        if response.status_code != 200:
            raise _domain(_client_error(response))
        result = response.json()["result"]
        text = str(result["content"][0]["text"])
        if result.get("isError"):
            raise ValidationError(text.removeprefix("error: "))
        return text


def _client_error(response: httpx.Response) -> XmemoClientError:
    try:
        body = response.json()
    except ValueError:
        body = None
    return error_for(response.status_code, body)


# A refusal's status -> the domain error the local path raises, from each class's own status; a body
# that is not JSON (400) or is too large (413) is the caller's error too, and any other status (a 5xx,
# no answer) a store that cannot serve.
_REFUSED: tuple[type[XMemoError], ...] = (
    AuthenticationError,
    PermissionDeniedError,
    NotFoundError,
    ConflictError,
    ValidationError,
)
_REFUSALS: dict[int, type[XMemoError]] = {kind.status: kind for kind in _REFUSED} | {
    400: ValidationError,
    413: ValidationError,
}


def _domain(error: XmemoClientError) -> XMemoError:
    """The domain error of a refusal: its message, and the exit code the local path would give."""
    return _REFUSALS.get(error.status, StoreError)(error.message)


def _held(data_dir: Path) -> bool:
    """Whether a process holds the data dir's lock (tried without taking it for long)."""
    try:
        handle = open(data_dir / "xmemo.lock", "a+")  # noqa: SIM115 (closed below)
    except OSError:
        return False
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        handle.close()  # closing releases a lock taken here
    return False


def remote_of(settings: RetrievalSettings) -> Remote | None:
    """The server holding this data dir, if one announced itself there; None: use the data dir."""
    path = settings.data_dir / SERVER_FILE
    if not path.exists() or not _held(settings.data_dir):
        return None
    try:
        announced = json.loads(path.read_text())
        return Remote(url=str(announced["url"]), token=str(announced["token"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None


@contextmanager
def announce(data_dir: Path, host: str, port: int) -> Iterator[tuple[str, Callable[[], None]]]:
    """Write server.json for the CLI while the server runs (0600), remove it after; yields the secret and
    the call that withdraws the file (for a shutdown that never returns here)."""
    token = secrets.token_urlsafe(32)
    reach = {"0.0.0.0": "127.0.0.1", "::": "::1", "": "127.0.0.1"}.get(host, host)
    url = f"http://[{reach}]:{port}" if ":" in reach else f"http://{reach}:{port}"
    path = data_dir / SERVER_FILE
    replace_private(path, json.dumps({"url": url, "pid": os.getpid(), "token": token}))

    def withdraw() -> None:
        path.unlink(missing_ok=True)

    try:
        yield token, withdraw
    finally:
        withdraw()
