"""The CLI beside a running server: while `xmemo serve` holds the data dir, the data commands reach it
over its HTTP API, as the operator acting for `--owner`, with the local path's output and exit codes.

`xmemo serve` writes `<data dir>/server.json` (0600, in the 0700 data dir): its URL, pid and a secret made
at start (service/middleware.py takes it as the operator, acting as the owner in `X-XMemo-Owner`). The file
is believed only while its pid is alive and holds the data dir's lock (storage lock_holder); a stale
one (a killed server) is ignored. Before the secret is sent, /healthz must answer within PROBE_SECONDS
with the proof only the file's writer can give (service/local_proof.py): a hung server is exit 3 in
seconds, and whatever else listens on the old port never sees the secret, the owner or the content.
"""

from __future__ import annotations

import hmac
import json
import os
import secrets
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

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
from retrieval.storage import lock_holder, replace_private
from xmemo_client import XmemoClient, XmemoClientError
from xmemo_client.errors import error_for

from ..local_proof import CHALLENGE_HEADER, PROOF_HEADER, proof_of

__all__ = ["SERVER_FILE", "Remote", "announce", "remote_of"]

SERVER_FILE = "server.json"
OWNER_HEADER = "X-XMemo-Owner"
# The probe before each command: a live server answers /healthz in milliseconds, so 2 s tells a stopped
# or hung one (SIGSTOP) apart; the command itself then has the 300 s a long recall or reflect may take.
PROBE_SECONDS = 2.0
_TIMEOUT = 300.0


@dataclass(frozen=True, slots=True)
class Remote:
    """A server holding the data dir: where it listens and the secret it takes."""

    url: str
    token: str
    pid: int = 0

    def verify(self) -> None:
        """That the server announced answers, and is the one holding the secret: /healthz within
        PROBE_SECONDS with the HMAC of a fresh challenge (service/local_proof.py); else StoreError (exit 3)."""
        challenge = secrets.token_urlsafe(24)
        named = f"the server at {self.url} (pid {self.pid}, from {SERVER_FILE})"
        try:
            response = httpx.get(f"{self.url}/healthz", headers={CHALLENGE_HEADER: challenge}, timeout=PROBE_SECONDS)
        except httpx.TimeoutException as error:
            raise StoreError(f"{named} does not answer within {PROBE_SECONDS:g} s: it is stopped or hung") from error
        except httpx.TransportError as error:
            raise StoreError(f"cannot reach {named}: {error}") from error
        proof = response.headers.get(PROOF_HEADER, "")
        if not hmac.compare_digest(proof.encode(), proof_of(self.token, challenge).encode()):
            raise StoreError(
                f"what answers at {self.url} is not {named} (it cannot prove it holds the file's secret); "
                "nothing was sent. Stop what holds the data dir, or remove the stale server.json"
            )

    @contextmanager
    def client(self, owner: str) -> Iterator[XmemoClient]:
        """A client acting as `owner`; a refusal becomes the domain error the local path raises."""
        with XmemoClient(self.url, self.token, headers=_owner_header(owner), timeout=_TIMEOUT) as client:
            try:
                yield client
            except XmemoClientError as error:
                raise _domain(error) from None

    def mcp_text(self, owner: str, tool: str, arguments: dict[str, Any]) -> str:
        """One MCP tool's text (what the local path prints for recall-context)."""
        try:
            response = httpx.post(**self._mcp_call(owner, tool, arguments))
        except httpx.TransportError as error:
            raise StoreError(f"cannot reach the server at {self.url}: {error}") from error
        result = self._mcp_result(response)
        text = str(result["content"][0]["text"])
        if result.get("isError"):
            raise ValidationError(text.removeprefix("error: "))
        return text

    async def mcp_result(self, owner: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """One MCP tool call's result as the server gave it, a tool error included (`xmemo mcp`)."""
        try:
            async with httpx.AsyncClient() as http:
                response = await http.post(**self._mcp_call(owner, tool, arguments))
        except httpx.TransportError as error:
            raise StoreError(f"cannot reach the server at {self.url}: {error}") from error
        return self._mcp_result(response)

    def _mcp_call(self, owner: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """The POST of one tools/call to the server's /mcp, acting for `owner`."""
        headers = {
            "Authorization": f"Bearer {self.token}",
            **_owner_header(owner),
            "Accept": "application/json, text/event-stream",
        }
        body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}}
        return {"url": f"{self.url}/mcp", "headers": headers, "json": body, "timeout": _TIMEOUT}

    @staticmethod
    def _mcp_result(response: httpx.Response) -> dict[str, Any]:
        if response.status_code != 200:
            raise _domain(_client_error(response))
        result: dict[str, Any] = response.json()["result"]
        return result


def _owner_header(owner: str) -> dict[str, str]:
    """The owner as the server reads it (service/middleware.py): UTF-8, percent-encoded, so any label
    travels as ASCII (`bøb` is `b%C3%B8b`)."""
    return {OWNER_HEADER: quote(owner, safe="")}


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


def _alive(pid: int) -> bool:
    """Whether a process of this pid runs (a signal 0 checks, sends nothing)."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it runs
        return True
    return True


def remote_of(settings: RetrievalSettings) -> Remote | None:
    """The server holding this data dir, verified (Remote.verify), if one announced itself there; None: use
    the data dir (no file, the lock free, or the file's pid gone: a killed server's file). StoreError when
    the announced server is alive but does not answer, or something else answers for it."""
    path = settings.data_dir / SERVER_FILE
    if not path.exists():
        return None
    holder = lock_holder(settings.data_dir)
    if holder is None:
        return None
    try:
        announced = json.loads(path.read_text())
        remote = Remote(url=str(announced["url"]), token=str(announced["token"]), pid=int(announced["pid"]))
    except (OSError, ValueError, KeyError, TypeError):
        return None
    if not _alive(remote.pid) or holder != remote.pid:
        return None  # the lock is another process's (reindex, import): the local path says the data dir is busy
    remote.verify()
    return remote


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
