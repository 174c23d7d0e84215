"""The ASGI edge of every request: audit and request ids, body limit, auth, rate limit, metrics, request log."""

from __future__ import annotations

import hmac
import json
import logging
import math
import re
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any
from urllib.parse import unquote

from anyio import to_thread
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from retrieval import AuthenticationError, Principal, StoreError, ValidationError
from retrieval.domain import check_field

from .api_keys import KeyStore
from .local_proof import CHALLENGE_HEADER, MAX_CHALLENGE, PROOF_HEADER, proof_of

__all__ = ["PUBLIC_PATHS", "EdgeMiddleware", "Metrics", "bounded_body"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Probes an orchestrator sends every few seconds: their request lines are logged at debug, not info.
PROBE_PATHS = frozenset({"/healthz", "/readyz"})
PUBLIC_PATHS = {
    "/healthz",
    "/readyz",
    "/metrics",
    "/docs",
    "/redoc",
    "/openapi.json",
    "/docs/oauth2-redirect",
    "/favicon.ico",
}
log = logging.getLogger("xmemo.requests")

# Metric labels come from fixed sets, so that no request can add a series: 20,000 requests with
# made-up method names grew /metrics from 31 KB to 16 MB when the method was a label as sent.
KNOWN_METHODS = frozenset({"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"})
OTHER_METHOD = "other"
UNMATCHED_ROUTE = "unmatched"
# A caller's X-Request-ID is echoed and logged when it is a plain token of at most this many
# characters; a longer one is cut to it, one with other characters is replaced by a fresh uuid4.
MAX_REQUEST_ID = 128
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:@/+=-]+")


class Metrics:
    """Prometheus series of this app (its own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "xmemo_http_requests", "HTTP requests", ["method", "route", "status"], registry=self.registry
        )
        self.latency = Histogram(
            "xmemo_http_request_seconds",
            "HTTP request latency",
            ["method", "route"],
            registry=self.registry,
            buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10),
        )
        self.index_size = Gauge("xmemo_index_points", "points in the vector index", registry=self.registry)
        self.memories = Gauge("xmemo_memories", "memory records in the system of record", registry=self.registry)
        self.failed_signins = Counter(
            "xmemo_console_failed_signins",
            "console sign-ins refused (a wrong key, or throttled)",
            registry=self.registry,
        )


class _RateLimiter:
    """A sliding one-minute window per key."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def retry_after(self, key_id: str) -> int:
        """0 when this request may go (and counts it), else whole seconds until a slot frees."""
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(key_id, deque())
            while hits and now - hits[0] > 60.0:
                hits.popleft()
            if len(hits) >= self.per_minute:
                return max(1, math.ceil(60.0 - (now - hits[0])))
            hits.append(now)
            return 0


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


def metric_labels(scope: Scope) -> tuple[str, str]:
    """(method, route) from fixed sets: a known method or "other"; a route template or "unmatched"."""
    method = scope["method"] if scope["method"] in KNOWN_METHODS else OTHER_METHOD
    route = getattr(scope.get("route"), "path", None) or ("/mcp" if scope["path"] == "/mcp" else UNMATCHED_ROUTE)
    return method, route


def request_id_of(raw: str | None) -> str | None:
    """The caller's request id as echoed and logged: capped in length, replaced when not a plain token."""
    if raw is None:
        return None
    capped = raw[:MAX_REQUEST_ID]
    return capped if _REQUEST_ID.fullmatch(capped) else str(uuid.uuid4())


async def _read_body(receive: Receive, limit: int) -> tuple[list[Message], bool]:
    """The request's messages up to the end of its body; True when the body went over `limit`.

    Read here, before the app, because FastAPI turns any error raised while it reads a body into a
    400: a chunked body over the limit must be a 413."""
    messages: list[Message] = []
    size = 0
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request":
            return messages, False
        size += len(message.get("body", b""))
        if size > limit:
            return messages, True
        if not message.get("more_body", False):
            return messages, False


async def bounded_body(scope: Scope, receive: Receive, send: Send, limit: int) -> Receive | None:
    """Read the request's body before anything parses it, up to `limit` bytes: a receive that replays it,
    or None once a 413 has been sent (a Content-Length over the limit is refused unread)."""
    length = dict(scope.get("headers", [])).get(b"content-length", b"")
    over = length.isdigit() and int(length) > limit
    buffered: list[Message] = []
    if not over:
        buffered, over = await _read_body(receive, limit)
    if over:
        body = _error_body("payload_too_large", f"request body exceeds {limit} bytes")
        headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
        await send({"type": "http.response.start", "status": 413, "headers": headers})
        await send({"type": "http.response.body", "body": body})
        return None

    async def replay() -> Message:
        return buffered.pop(0) if buffered else await receive()

    return replay


# The header naming the owner a request with the data dir's local token acts as (the CLI beside a
# running server, service/cli/remote.py): the operator at the command line, Principal.local(owner).
# Its value is ASCII on the wire, the owner's UTF-8 percent-encoded (`bøb` is `b%C3%B8b`, a `%` is
# `%25`): header bytes beyond ASCII have no agreed charset, and reading them as latin-1 made `bøb`
# another owner, `bÃ¸b`.
OWNER_HEADER = "x-xmemo-owner"
_BAD_ESCAPE = re.compile(r"%(?![0-9A-Fa-f]{2})")


class _Refused(Exception):
    """A request the edge answers itself, with the contract's error body."""

    def __init__(self, status: int, code: str, message: str) -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def _local_owner(sent: list[bytes]) -> str:
    """The owner a local-token request names: one X-XMemo-Owner header, percent-decoded UTF-8, a label
    (domain/validation.py check_field, the rule of every label). None or two are 401 like the
    Authorization header; a value that cannot be read is 422 naming the header, never a guess."""
    if not sent:
        raise _Refused(401, "unauthorized", "the data dir's local token needs the owner in X-XMemo-Owner")
    if len(sent) > 1:  # never pick one of several owners
        raise _Refused(401, "unauthorized", "more than one X-XMemo-Owner header")
    try:
        text = sent[0].decode("ascii")
    except UnicodeDecodeError:
        raise _Refused(
            422, "validation_error", "X-XMemo-Owner must be ASCII: percent-encode the owner's UTF-8 (bøb is b%C3%B8b)"
        ) from None
    if _BAD_ESCAPE.search(text):
        raise _Refused(422, "validation_error", "X-XMemo-Owner has a % that is not followed by two hex digits")
    try:
        owner = unquote(text, errors="strict")
    except UnicodeDecodeError:
        raise _Refused(422, "validation_error", "X-XMemo-Owner is not UTF-8 once percent-decoded") from None
    try:
        return check_field(owner.strip(), "X-XMemo-Owner", allow_empty=False)
    except ValidationError as error:
        raise _Refused(422, error.code, error.message) from error


class EdgeMiddleware:
    def __init__(
        self,
        app: ASGIApp,
        keys: KeyStore,
        metrics: Metrics,
        max_body_bytes: int,
        rate_limit: int,
        local_token: str | None = None,
    ) -> None:
        """`local_token`: the secret `xmemo serve` keeps in the data dir (server.json, 0600) for the CLI;
        whoever can read it can read the data dir's files, so it carries the operator's rights."""
        self.app = app
        self.local_token = local_token
        self.keys = keys
        self.metrics = metrics
        self.max_body_bytes = max_body_bytes
        self.limiter = _RateLimiter(rate_limit) if rate_limit > 0 else None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.perf_counter()
        audit_id = str(uuid.uuid4())
        raw_headers = [(k.decode("latin-1").lower(), v.decode("latin-1")) for k, v in scope.get("headers", [])]
        headers = dict(raw_headers)
        state = scope.setdefault("state", {})
        state["authorization_headers"] = sum(1 for name, _ in raw_headers if name == "authorization")
        state["owner_headers"] = [v for k, v in scope.get("headers", []) if k.lower() == OWNER_HEADER.encode()]
        request_id = request_id_of(headers.get("x-request-id"))
        state["audit_id"] = audit_id
        outcome: dict[str, Any] = {"status": 500}

        proof = self._proof(scope["path"], headers.get(CHALLENGE_HEADER.lower()))

        async def send_with_ids(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome["status"] = message["status"]
                extra = [(b"x-xmemo-audit-id", audit_id.encode())]
                if request_id is not None:
                    extra.append((b"x-request-id", request_id.encode("latin-1")))
                if proof is not None:
                    extra.append((PROOF_HEADER.lower().encode(), proof.encode()))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        async def reply(status: int, code: str, message: str, *extra: tuple[bytes, bytes]) -> None:
            body = _error_body(code, message)
            await send_with_ids(
                {
                    "type": "http.response.start",
                    "status": status,
                    "headers": [
                        (b"content-type", b"application/json"),
                        (b"content-length", str(len(body)).encode()),
                        *extra,
                    ],
                }
            )
            await send_with_ids({"type": "http.response.body", "body": body})

        try:
            await self._handle(scope, receive, headers, state, send_with_ids, reply)
        finally:
            self._observe(scope, state, outcome["status"], time.perf_counter() - started, audit_id, request_id)

    def _proof(self, path: str, challenge: str | None) -> str | None:
        """/healthz's answer to the CLI's challenge (service/local_proof.py), when this server has a local token."""
        if path != "/healthz" or self.local_token is None or not challenge or len(challenge) > MAX_CHALLENGE:
            return None
        return proof_of(self.local_token, challenge)

    async def _handle(
        self,
        scope: Scope,
        receive: Receive,
        headers: dict[str, str],
        state: dict[str, Any],
        send: Send,
        reply: Callable[..., Awaitable[None]],
    ) -> None:
        too_large = f"request body exceeds {self.max_body_bytes} bytes"
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await reply(413, "payload_too_large", too_large)
            return
        if scope["path"] not in PUBLIC_PATHS:
            try:
                key_id, principal = await self._authenticate(headers, state)
            except _Refused as refused:
                await reply(refused.status, refused.code, refused.message)
                return
            state["principal"], state["key_id"] = principal, key_id
            wait = self.limiter.retry_after(key_id) if self.limiter is not None else 0
            if wait:
                await reply(
                    429,
                    "rate_limited",
                    f"too many requests for this key; retry in {wait} s",
                    (b"retry-after", str(wait).encode()),
                )
                return
        buffered, over = await _read_body(receive, self.max_body_bytes)
        if over:
            await reply(413, "payload_too_large", too_large)
            return

        async def replay() -> Message:
            return buffered.pop(0) if buffered else await receive()

        await self.app(scope, replay, send)

    async def _authenticate(self, headers: dict[str, str], state: dict[str, Any]) -> tuple[str, Principal]:
        """The key id and principal of a request: the console's session, the data dir's local token acting
        for the owner it names, or a bearer API key; `_Refused` (401, or 503 when the key store is down)."""
        authorization = headers.get("authorization", "")
        if "console_principal" in state:  # the console gate authorised its session from the key's row
            key_id, principal = state["console_principal"]
            return key_id, principal
        if state["authorization_headers"] > 1:  # never pick one of several keys
            raise _Refused(401, "unauthorized", "more than one Authorization header")
        if not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
            raise _Refused(401, "unauthorized", "missing bearer API key")
        secret = authorization[7:].strip()
        if self.local_token is not None and hmac.compare_digest(secret.encode(), self.local_token.encode()):
            return "local", Principal.local(_local_owner(state["owner_headers"]))
        try:
            if self.keys.in_process:
                return self.keys.resolve(secret)
            return await to_thread.run_sync(self.keys.resolve, secret)
        except AuthenticationError as error:
            raise _Refused(401, error.code, error.message) from error
        except StoreError as error:
            raise _Refused(503, error.code, error.message) from error

    def _observe(
        self, scope: Scope, state: dict[str, Any], status: int, seconds: float, audit_id: str, request_id: str | None
    ) -> None:
        method, route = metric_labels(scope)
        self.metrics.requests.labels(method, route, str(status)).inc()
        self.metrics.latency.labels(method, route).observe(seconds)
        principal = state.get("principal")
        level = logging.DEBUG if scope["path"] in PROBE_PATHS else logging.INFO
        if not log.isEnabledFor(level):
            return
        log.log(
            level,
            json.dumps(
                {
                    "event": "request",
                    "audit_id": audit_id,
                    "request_id": request_id,
                    "key_id": state.get("key_id"),
                    "owner_id": getattr(principal, "owner_id", None),
                    "agent_id": getattr(principal, "agent_id", None),
                    "method": method,
                    "route": route,
                    "status": status,
                    "duration_ms": round(seconds * 1000, 2),
                    "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                }
            ),
        )
