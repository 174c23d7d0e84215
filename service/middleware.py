"""The ASGI edge of every request: audit and request ids, body limit, auth, rate limit, metrics, request log."""

from __future__ import annotations

import json
import logging
import threading
import time
import uuid
from collections import deque
from collections.abc import Awaitable, Callable, MutableMapping
from typing import Any

from anyio import to_thread
from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram

from retrieval import AuthenticationError, StoreError

from .keys import KeyStore

__all__ = ["EdgeMiddleware", "Metrics", "PUBLIC_PATHS"]

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

PUBLIC_PATHS = {"/healthz", "/readyz", "/metrics", "/docs", "/redoc", "/openapi.json", "/docs/oauth2-redirect"}
log = logging.getLogger("xmemo.requests")


class Metrics:
    """Prometheus series of this app (its own registry, so several apps can live in one process)."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter("xmemo_http_requests", "HTTP requests", ["method", "route", "status"],
                                registry=self.registry)
        self.latency = Histogram("xmemo_http_request_seconds", "HTTP request latency", ["method", "route"],
                                 registry=self.registry,
                                 buckets=(0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10))
        self.index_size = Gauge("xmemo_index_points", "points in the vector index", registry=self.registry)
        self.memories = Gauge("xmemo_memories", "memory records in the system of record", registry=self.registry)


class _RateLimiter:
    """A sliding one-minute window per key."""

    def __init__(self, per_minute: int) -> None:
        self.per_minute = per_minute
        self._hits: dict[str, deque[float]] = {}
        self._lock = threading.Lock()

    def allow(self, key_id: str) -> bool:
        now = time.monotonic()
        with self._lock:
            hits = self._hits.setdefault(key_id, deque())
            while hits and now - hits[0] > 60.0:
                hits.popleft()
            if len(hits) >= self.per_minute:
                return False
            hits.append(now)
            return True


def _error_body(code: str, message: str) -> bytes:
    return json.dumps({"error": {"code": code, "message": message}}).encode()


class _TooLarge(Exception):
    pass


class EdgeMiddleware:
    def __init__(self, app: ASGIApp, keys: KeyStore, metrics: Metrics, max_body_bytes: int, rate_limit: int) -> None:
        self.app = app
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
        headers = {k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope.get("headers", [])}
        request_id = headers.get("x-request-id")
        state = scope.setdefault("state", {})
        state["audit_id"] = audit_id
        outcome: dict[str, Any] = {"status": 500}

        async def send_with_ids(message: Message) -> None:
            if message["type"] == "http.response.start":
                outcome["status"] = message["status"]
                extra = [(b"x-xmemo-audit-id", audit_id.encode())]
                if request_id is not None:
                    extra.append((b"x-request-id", request_id.encode("latin-1")))
                message["headers"] = [*message.get("headers", []), *extra]
            await send(message)

        async def reply(status: int, code: str, message: str) -> None:
            body = _error_body(code, message)
            await send_with_ids({"type": "http.response.start", "status": status,
                                 "headers": [(b"content-type", b"application/json"),
                                             (b"content-length", str(len(body)).encode())]})
            await send_with_ids({"type": "http.response.body", "body": body})

        try:
            await self._handle(scope, receive, headers, state, send_with_ids, reply)
        finally:
            self._observe(scope, state, outcome["status"], time.perf_counter() - started, audit_id, request_id)

    async def _handle(self, scope: Scope, receive: Receive, headers: dict[str, str], state: dict[str, Any],
                      send: Send, reply: Callable[[int, str, str], Awaitable[None]]) -> None:
        length = headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > self.max_body_bytes:
            await reply(413, "payload_too_large", f"request body exceeds {self.max_body_bytes} bytes")
            return
        if scope["path"] not in PUBLIC_PATHS:
            authorization = headers.get("authorization", "")
            if not authorization.lower().startswith("bearer ") or not authorization[7:].strip():
                await reply(401, "unauthorized", "missing bearer API key")
                return
            try:
                key_id, principal = await to_thread.run_sync(self.keys.resolve, authorization[7:].strip())
            except AuthenticationError as error:
                await reply(401, error.code, error.message)
                return
            except StoreError as error:
                await reply(503, error.code, error.message)
                return
            state["principal"], state["key_id"] = principal, key_id
            if self.limiter is not None and not self.limiter.allow(key_id):
                await reply(429, "rate_limited", "too many requests for this key; retry in a minute")
                return
        received = 0

        async def limited_receive() -> Message:
            nonlocal received
            message = await receive()
            if message["type"] == "http.request":
                received += len(message.get("body", b""))
                if received > self.max_body_bytes:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, limited_receive, send)
        except _TooLarge:
            await reply(413, "payload_too_large", f"request body exceeds {self.max_body_bytes} bytes")

    def _observe(self, scope: Scope, state: dict[str, Any], status: int, seconds: float, audit_id: str,
                 request_id: str | None) -> None:
        route = getattr(scope.get("route"), "path", None) or ("/mcp" if scope["path"] == "/mcp" else "unmatched")
        self.metrics.requests.labels(scope["method"], route, str(status)).inc()
        self.metrics.latency.labels(scope["method"], route).observe(seconds)
        principal = state.get("principal")
        log.info(json.dumps({
            "event": "request", "audit_id": audit_id, "request_id": request_id,
            "key_id": state.get("key_id"), "owner_id": getattr(principal, "owner_id", None),
            "agent_id": getattr(principal, "agent_id", None), "method": scope["method"], "route": route,
            "status": status, "duration_ms": round(seconds * 1000, 2),
            "at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        }))
