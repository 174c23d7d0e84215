"""The optional fields of each operation, typed (a field left out takes the server's default)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, TypedDict

__all__ = ["ListFields", "MemoryFields", "RecallFields", "ReflectFields", "SearchFields", "StateFields"]


class MemoryFields(TypedDict, total=False):
    memory_type: str  # episodic, semantic, procedural, identity, working, or auto (from the text)
    bucket: str
    scope: str
    team_id: str
    source: str
    importance: float
    confidence: float
    expires_at: str
    occurred_at: str
    speaker: str
    session_id: str
    semantic_key: str
    dedupe: bool
    metadata: dict[str, Any]


class StateFields(TypedDict, total=False):
    bucket: str
    scope: str
    source: str
    metadata: dict[str, Any]


class _Filters(TypedDict, total=False):
    scope: str
    team_id: str
    bucket: str
    path_filter: str
    memory_type: str


class RecallFields(_Filters, total=False):
    max_items: int
    max_tokens: int
    as_of: str


class SearchFields(_Filters, total=False):
    limit: int
    min_score: float


class ReflectFields(TypedDict, total=False):
    actions_csv: str
    dry_run: bool
    time_window_hours: float
    since: str
    until: str
    path_filter: str
    owner_filter: str
    bucket: str
    scope: str
    team_id: str
    limit: int
    expected_plan: str
    exclude: Sequence[str]
    reconsider: bool  # clear the proposals earlier reviews turned down


class ListFields(TypedDict, total=False):
    path_prefix: str
    memory_type: str
    status: str
    bucket: str
    team_id: str
    scope: str
    metadata: str  # key=value
    text: str
    time_field: str
    since: str
    until: str
    owner_id: str
    cursor: str
    limit: int
