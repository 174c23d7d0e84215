"""Each operation of the HTTP API as data: its method, path, parameters and how to read its answer.
The sync and the async client (clients.py) send the same calls, so they cannot drift."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from .results import (
    MemoryRecord,
    ReflectReport,
    Remembered,
    context_pack,
    memory_page,
    parse,
    search_results,
)

__all__ = ["Call", "fields_of"]


@dataclass(frozen=True, slots=True)
class Call:
    method: str
    path: str
    read: Callable[[Any], Any]
    params: dict[str, Any] = field(default_factory=dict)
    body: dict[str, Any] | None = None


def fields_of(values: Mapping[str, Any]) -> dict[str, Any]:
    """The fields a caller set: None means "the server's default", so it is not sent."""
    return {name: value for name, value in values.items() if value is not None}


def _id(memory_id: str) -> str:
    return quote(memory_id, safe="")


def _remembered(data: Any) -> Remembered:
    return parse(Remembered, data)


def _record(data: Any) -> MemoryRecord:
    return parse(MemoryRecord, data)


def _same(data: Any) -> Any:
    return data


def remember(content: str, path: str, fields: Mapping[str, Any]) -> Call:
    return Call("POST", "/api/v1/remember", _remembered, body={"content": content, "path": path, **fields_of(fields)})


def remember_batch(memories: list[dict[str, Any]]) -> Call:
    def read(data: Any) -> list[Remembered]:
        return [_remembered(result) for result in data["results"]]

    return Call("POST", "/api/v1/memories/batch", read, body={"memories": [fields_of(m) for m in memories]})


def update_state(state_key: str, content: str, fields: Mapping[str, Any]) -> Call:
    body = {"state_key": state_key, "content": content, **fields_of(fields)}
    return Call("POST", "/api/v1/update_state", _remembered, body=body)


def timeline_event(content: str, event_type: str, occurred_at: str, fields: Mapping[str, Any]) -> Call:
    body = {"content": content, "event_type": event_type, "occurred_at": occurred_at, **fields_of(fields)}
    return Call("POST", "/api/v1/timeline/events", _remembered, body=body)


def recall_context(query: str, fields: Mapping[str, Any]) -> Call:
    return Call("POST", "/v1/recall/context", context_pack, body={"query": query, **fields_of(fields)})


def search(query: str, fields: Mapping[str, Any]) -> Call:
    return Call("GET", "/v1/memories/search", search_results, params={"query": query, **fields_of(fields)})


def reflect(fields: Mapping[str, Any]) -> Call:
    def read(data: Any) -> ReflectReport:
        return ReflectReport(bool(data.get("dry_run")), str(data.get("plan_digest", "")), data)

    body = fields_of(fields)
    if "exclude" in body:
        body["exclude"] = list(body["exclude"])
    return Call("POST", "/api/v1/reflect", read, body=body)


def get_memory(memory_id: str) -> Call:
    return Call("GET", f"/api/v1/memories/{_id(memory_id)}", _record)


def list_memories(fields: Mapping[str, Any]) -> Call:
    return Call("GET", "/api/v1/memories", memory_page, params=fields_of(fields))


def history(memory_id: str) -> Call:
    return Call("GET", f"/api/v1/memories/{_id(memory_id)}/history", _same)


def edit(memory_id: str, expected_version: int, changes: Mapping[str, Any]) -> Call:
    body = {"expected_version": expected_version, **changes}  # None is sent: it clears `expires_at`
    return Call("PATCH", f"/api/v1/memories/{_id(memory_id)}", _record, body=body)


def _at(expected_version: int | None) -> dict[str, Any]:
    return {"expected_version": expected_version} if expected_version is not None else {}


def restore(memory_id: str, expected_version: int | None = None) -> Call:
    return Call("POST", f"/api/v1/memories/{_id(memory_id)}/restore", _same, params=_at(expected_version))


def archive(memory_id: str, expected_version: int | None = None) -> Call:
    return Call("DELETE", f"/api/v1/memories/{_id(memory_id)}", _same, params=_at(expected_version))


def forget(memory_id: str, expected_version: int | None = None) -> Call:
    params = {"hard": "true", **_at(expected_version)}
    return Call("DELETE", f"/api/v1/memories/{_id(memory_id)}", _same, params=params)


def forget_owner(owner_id: str) -> Call:
    return Call("DELETE", f"/api/v1/owners/{_id(owner_id)}/memories", _same)


def audit(fields: Mapping[str, Any]) -> Call:
    return Call("GET", "/api/v1/audit", _same, params=fields_of(fields))


def health() -> Call:
    return Call("GET", "/healthz", _same)
