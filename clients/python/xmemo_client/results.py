"""What the client returns: typed views of the contract's responses, each keeping the whole response
as `raw` (fields the server adds later stay reachable)."""

from __future__ import annotations

from dataclasses import dataclass, field, fields, replace
from typing import Any, TypeVar

__all__ = [
    "Budget",
    "ContextPack",
    "MemoryPage",
    "MemoryRecord",
    "PackItem",
    "PackMember",
    "ReflectReport",
    "Remembered",
    "SearchHit",
    "SearchResults",
    "parse",
]

T = TypeVar("T")


def parse(kind: type[T], data: dict[str, Any]) -> T:
    """`kind` from a response object: its known fields (absent ones take their defaults), and `raw`."""
    names = {f.name for f in fields(kind) if f.name != "raw"}  # type: ignore[arg-type]
    chosen: dict[str, Any] = {name: data[name] for name in names if name in data}
    return kind(**chosen, raw=data)  # type: ignore[call-arg]


@dataclass(frozen=True, slots=True)
class Remembered:
    """A write's answer: `outcome` is created, unchanged (same key and content), superseded or merged."""

    id: str
    version: int
    status: str = "active"
    deduplicated: bool = False
    outcome: str = "created"
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class MemoryRecord:
    """A memory record (the contract's record)."""

    id: str
    content: str
    path: str
    type: str
    owner_id: str = ""
    team_id: str | None = None
    bucket: str = "personal"
    scope: str = ""
    status: str = "active"
    version: int = 1
    semantic_key: str | None = None
    state_key: str | None = None
    importance: float = 0.5
    created_at: str = ""
    updated_at: str = ""
    occurred_at: str = ""
    expires_at: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class MemoryPage:
    """One page of a listing, newest created first; pass `next_cursor` for the next (None: the last)."""

    memories: list[MemoryRecord]
    next_cursor: str | None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class PackMember:
    """A memory a grouped item's line shows: the id to cite or edit, and where it is."""

    id: str
    type: str
    path: str
    occurred_at: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class PackItem:
    id: str
    type: str
    path: str
    score: float
    tokens: int
    shortened: bool = False
    created_at: str = ""
    occurred_at: str = ""
    members: list[PackMember] = field(default_factory=list)  # a group's: the memories its lines show, in order
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class Budget:
    max_items: int
    max_tokens: int
    used_items: int
    used_tokens: int
    dropped_items: int = 0
    shortened_items: int = 0
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ContextPack:
    """A context pack: `context_text` is what an agent puts in its prompt; `items` what it holds."""

    query: str
    context_text: str
    items: list[PackItem]
    budget: Budget
    retrieval_plan: dict[str, Any] = field(default_factory=dict)
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class SearchHit:
    id: str
    content: str
    type: str
    path: str
    score: float  # the strict score the threshold is applied to
    rank_score: float | None = None  # the hybrid ranking's score (recall's order)
    content_truncated: bool = False
    bucket: str = "personal"
    scope: str = ""
    team_id: str | None = None
    created_at: str = ""
    occurred_at: str = ""
    importance: float = 0.5
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class SearchResults:
    """Strict search: only good matches, so `results` may be empty."""

    query: str
    results: list[SearchHit]
    min_score: float | None = None
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


@dataclass(frozen=True, slots=True)
class ReflectReport:
    """The compactor's report; `plan_digest` and each preview's `proposal_id` are what a reviewed apply
    sends back (`expected_plan`, `exclude`)."""

    dry_run: bool
    plan_digest: str = ""
    raw: dict[str, Any] = field(default_factory=dict, repr=False)


def context_pack(data: dict[str, Any]) -> ContextPack:
    return ContextPack(
        query=data.get("query", ""),
        context_text=data.get("context_text", ""),
        items=[pack_item(item) for item in data.get("items", [])],
        budget=parse(Budget, data.get("budget", {})),
        retrieval_plan=data.get("retrieval_plan", {}),
        raw=data,
    )


def pack_item(data: dict[str, Any]) -> PackItem:
    """A pack item, its members read as PackMember (`raw` keeps the response's object)."""
    return replace(parse(PackItem, data), members=[parse(PackMember, m) for m in data.get("members", [])])


def search_results(data: dict[str, Any]) -> SearchResults:
    return SearchResults(
        query=data.get("query", ""),
        results=[parse(SearchHit, hit) for hit in data.get("results", [])],
        min_score=data.get("min_score"),
        raw=data,
    )


def memory_page(data: dict[str, Any]) -> MemoryPage:
    return MemoryPage([parse(MemoryRecord, m) for m in data.get("memories", [])], data.get("next_cursor"), data)
