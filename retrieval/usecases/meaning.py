"""The memories list's meaning mode: the hybrid ranking agents' recall and search use, within the list's filters.

The ranking is `usecases/retrieve.py hybrid_retrieve` (dense and BM25 fused, recency and importance
blended) under the same visibility and the filters the index can apply (type, status, bucket,
team, scope, path); the list's other filters (metadata, creation dates, the exact path prefix)
then narrow the ranked records. Unlike search_memory, a person browsing does not count as a read:
no access is recorded, so the console cannot promote or refresh a memory by looking at it.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..domain import Memory, MemoryStatus, Principal, check_query, optional_time
from ..engine import MemoryEngine
from .manage import ListQuery, list_memories
from .retrieve import hybrid_retrieve, hydrate, read_filters

__all__ = ["MEANING_DEPTH", "MEANING_PAGE", "Match", "search_by_meaning"]

MEANING_DEPTH = 100  # candidates each channel ranks and the records read back, before the list's own filters
MEANING_PAGE = 25  # the best this many are shown; the mode has no further pages


@dataclass(frozen=True, slots=True)
class Match:
    memory: Memory
    score: float  # the hybrid ranking's final score


def search_by_meaning(engine: MemoryEngine, principal: Principal, query: str, filters: dict[str, Any]) -> list[Match]:
    """The memories that best match `query` by meaning, best first, within the list's `filters`.

    `filters` are the list's (ListQuery's names, `text` excepted), checked by `list_memories` so that
    a bad value is the same 422 in both modes.
    """
    query = check_query(query)
    list_memories(engine, principal, ListQuery(**filters, limit=1))  # validates every filter as words mode does
    status, prefix = filters.get("status"), filters.get("path_prefix")
    visible = read_filters(
        principal,
        team_id=filters.get("team_id"),
        bucket=filters.get("bucket"),
        scope=filters.get("scope"),
        memory_type=filters.get("memory_type"),
        # `%` is path_filter's only wildcard: a prefix holding one is narrowed below, not in the index
        path_filter=f"{prefix}%" if prefix and "%" not in prefix else None,
        statuses=(MemoryStatus(status),) if status else tuple(MemoryStatus),
    )
    ranked = hydrate(engine, hybrid_retrieve(engine, visible, query, depth=MEANING_DEPTH), MEANING_DEPTH)
    keep = _narrowing(filters, engine.store.sql_engine.dialect.name)
    return [Match(h.memory, round(h.ranked.score, 4)) for h in ranked if keep(h.memory)][:MEANING_PAGE]


def _narrowing(filters: dict[str, Any], dialect: str) -> Callable[[Memory], bool]:
    """The list's filters the index cannot apply, as a test of one record (storage/listing.py's rules)."""
    prefix = filters.get("path_prefix") or ""
    key, _, value = (filters.get("metadata") or "").partition("=")
    since, until = optional_time(filters.get("since"), "since"), optional_time(filters.get("until"), "until")

    def keep(memory: Memory) -> bool:
        return (
            memory.path.startswith(prefix)
            and (not key or _metadata_text(memory.metadata.get(key), dialect) == value)
            and (since is None or memory.created_at >= since)
            and (until is None or memory.created_at < until)
        )

    return keep


def _metadata_text(value: Any, dialect: str) -> str | None:
    """A metadata field as the store's SQL reads it as text: a string as it is; else on SQLite
    (CAST of json_extract) a boolean as 1 or 0 and JSON without spaces, on PostgreSQL (`->>`) JSON."""
    if value is None or isinstance(value, str):
        return value
    if dialect == "sqlite":
        return (
            str(int(value)) if isinstance(value, bool) else json.dumps(value, ensure_ascii=False, separators=(",", ":"))
        )
    return json.dumps(value, ensure_ascii=False)
