"""`XmemoClient` and `AsyncXmemoClient`: the HTTP API as typed methods over httpx, errors as exceptions
(errors.py). Both send the calls of calls.py."""

from __future__ import annotations

import json
from types import TracebackType
from typing import Any, Self, Unpack

import httpx

from . import calls
from .calls import Call
from .errors import UnavailableError, XmemoClientError, error_for
from .fields import ListFields, MemoryFields, RecallFields, ReflectFields, SearchFields, StateFields
from .results import ContextPack, MemoryPage, MemoryRecord, ReflectReport, Remembered, SearchResults

__all__ = ["AsyncXmemoClient", "XmemoClient"]

DEFAULT_TIMEOUT = 30.0


def _headers(api_key: str, extra: dict[str, str] | None) -> dict[str, str]:
    return {"Authorization": f"Bearer {api_key}", "User-Agent": "xmemo-client", **(extra or {})}


def _answer(call: Call, response: httpx.Response) -> Any:
    try:
        body = response.json() if response.content else None
    except json.JSONDecodeError:
        body = None
    if response.is_error:
        raise error_for(response.status_code, body, response.headers.get("retry-after"))
    if body is None and response.content:
        raise XmemoClientError(response.status_code, "bad_response", "the server's answer is not JSON")
    return call.read(body)


def _unreachable(error: httpx.TransportError) -> UnavailableError:
    return UnavailableError(0, "unreachable", f"cannot reach the server: {error}")


class XmemoClient:
    """A client of one server with one API key. Use it as a context manager, or call `close()`."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self._http = httpx.Client(
            base_url=base_url.rstrip("/"), headers=_headers(api_key, headers), timeout=timeout, transport=transport
        )

    def _send(self, call: Call) -> Any:
        try:
            response = self._http.request(call.method, call.path, params=call.params or None, json=call.body)
        except httpx.TransportError as error:
            raise _unreachable(error) from error
        return _answer(call, response)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()

    # -- writes ---------------------------------------------------------------------------------

    def remember(self, content: str, path: str, **fields: Unpack[MemoryFields]) -> Remembered:
        """Store a memory; the same `semantic_key` with new content supersedes the old version."""
        result: Remembered = self._send(calls.remember(content, path, fields))
        return result

    def remember_batch(self, memories: list[dict[str, Any]]) -> list[Remembered]:
        """Up to 500 memories in one transaction (each a dict of `remember`'s fields with content and path)."""
        result: list[Remembered] = self._send(calls.remember_batch(memories))
        return result

    def update_state(self, state_key: str, content: str, **fields: Unpack[StateFields]) -> Remembered:
        """The one current `working` memory of `state_key` (a new version when the content changes)."""
        result: Remembered = self._send(calls.update_state(state_key, content, fields))
        return result

    def timeline_event(
        self, content: str, event_type: str, occurred_at: str, **fields: Unpack[StateFields]
    ) -> Remembered:
        """Append an episodic event that happened at `occurred_at` (ISO 8601 with a zone)."""
        result: Remembered = self._send(calls.timeline_event(content, event_type, occurred_at, fields))
        return result

    # -- reads ----------------------------------------------------------------------------------

    def recall_context(self, query: str, **fields: Unpack[RecallFields]) -> ContextPack:
        """The context pack for `query`: the few memories that matter, within the item and token budgets."""
        result: ContextPack = self._send(calls.recall_context(query, fields))
        return result

    def search(self, query: str, **fields: Unpack[SearchFields]) -> SearchResults:
        """Strict search: only memories that match `query` well (the list may be empty)."""
        result: SearchResults = self._send(calls.search(query, fields))
        return result

    def get_memory(self, memory_id: str) -> MemoryRecord:
        result: MemoryRecord = self._send(calls.get_memory(memory_id))
        return result

    def list_memories(self, **fields: Unpack[ListFields]) -> MemoryPage:
        """One page of the memories this key may see, newest created first."""
        result: MemoryPage = self._send(calls.list_memories(fields))
        return result

    def history(self, memory_id: str) -> dict[str, Any]:
        """A memory's versions, links and audit trail."""
        result: dict[str, Any] = self._send(calls.history(memory_id))
        return result

    def audit(self, **fields: Any) -> dict[str, Any]:
        """Audit records, newest first (`since`, `until`, `action`, `limit`)."""
        result: dict[str, Any] = self._send(calls.audit(fields))
        return result

    def health(self) -> dict[str, Any]:
        result: dict[str, Any] = self._send(calls.health())
        return result

    # -- management -----------------------------------------------------------------------------

    def edit(self, memory_id: str, expected_version: int, **changes: Any) -> MemoryRecord:
        """Change a memory in place at `expected_version` (ConflictError if it moved on)."""
        result: MemoryRecord = self._send(calls.edit(memory_id, expected_version, changes))
        return result

    def restore(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        result: dict[str, Any] = self._send(calls.restore(memory_id, expected_version))
        return result

    def archive(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        """Archive (soft, audited, restorable)."""
        result: dict[str, Any] = self._send(calls.archive(memory_id, expected_version))
        return result

    def forget(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        """Forget: the content is removed from every store; the audit keeps a tombstone."""
        result: dict[str, Any] = self._send(calls.forget(memory_id, expected_version))
        return result

    def forget_owner(self, owner_id: str) -> dict[str, Any]:
        """Forget every memory of an owner ("forget me"; a memory:admin key)."""
        result: dict[str, Any] = self._send(calls.forget_owner(owner_id))
        return result

    def reflect(self, **fields: Unpack[ReflectFields]) -> ReflectReport:
        """Consolidate and age memories; `dry_run=True` plans and writes nothing."""
        result: ReflectReport = self._send(calls.reflect(fields))
        return result


class AsyncXmemoClient:
    """The async twin of XmemoClient: the same methods, awaited."""

    def __init__(
        self,
        base_url: str,
        api_key: str,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        headers: dict[str, str] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self._http = httpx.AsyncClient(
            base_url=base_url.rstrip("/"), headers=_headers(api_key, headers), timeout=timeout, transport=transport
        )

    async def _send(self, call: Call) -> Any:
        try:
            response = await self._http.request(call.method, call.path, params=call.params or None, json=call.body)
        except httpx.TransportError as error:
            raise _unreachable(error) from error
        return _answer(call, response)

    async def aclose(self) -> None:
        await self._http.aclose()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()

    async def remember(self, content: str, path: str, **fields: Unpack[MemoryFields]) -> Remembered:
        result: Remembered = await self._send(calls.remember(content, path, fields))
        return result

    async def remember_batch(self, memories: list[dict[str, Any]]) -> list[Remembered]:
        result: list[Remembered] = await self._send(calls.remember_batch(memories))
        return result

    async def update_state(self, state_key: str, content: str, **fields: Unpack[StateFields]) -> Remembered:
        result: Remembered = await self._send(calls.update_state(state_key, content, fields))
        return result

    async def timeline_event(
        self, content: str, event_type: str, occurred_at: str, **fields: Unpack[StateFields]
    ) -> Remembered:
        result: Remembered = await self._send(calls.timeline_event(content, event_type, occurred_at, fields))
        return result

    async def recall_context(self, query: str, **fields: Unpack[RecallFields]) -> ContextPack:
        result: ContextPack = await self._send(calls.recall_context(query, fields))
        return result

    async def search(self, query: str, **fields: Unpack[SearchFields]) -> SearchResults:
        result: SearchResults = await self._send(calls.search(query, fields))
        return result

    async def get_memory(self, memory_id: str) -> MemoryRecord:
        result: MemoryRecord = await self._send(calls.get_memory(memory_id))
        return result

    async def list_memories(self, **fields: Unpack[ListFields]) -> MemoryPage:
        result: MemoryPage = await self._send(calls.list_memories(fields))
        return result

    async def history(self, memory_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.history(memory_id))
        return result

    async def audit(self, **fields: Any) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.audit(fields))
        return result

    async def health(self) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.health())
        return result

    async def edit(self, memory_id: str, expected_version: int, **changes: Any) -> MemoryRecord:
        result: MemoryRecord = await self._send(calls.edit(memory_id, expected_version, changes))
        return result

    async def restore(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.restore(memory_id, expected_version))
        return result

    async def archive(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.archive(memory_id, expected_version))
        return result

    async def forget(self, memory_id: str, expected_version: int | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.forget(memory_id, expected_version))
        return result

    async def forget_owner(self, owner_id: str) -> dict[str, Any]:
        result: dict[str, Any] = await self._send(calls.forget_owner(owner_id))
        return result

    async def reflect(self, **fields: Unpack[ReflectFields]) -> ReflectReport:
        result: ReflectReport = await self._send(calls.reflect(fields))
        return result
