"""What the read use cases return: typed, frozen results.

Their JSON shape (the XMemo contract: the pack's `version`, `query`, `retrieval_plan`, `budget`, `items`,
`context_text`, `scope`) is the service's response models, read from these by attribute
(service/routes/responses.py); the MCP texts are rendered from the same objects (usecases/mcp_text.py).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..domain import Memory
from ..ranking import Collapsed, Pack

__all__ = [
    "Budget",
    "Candidates",
    "ContextPack",
    "Dropped",
    "DurableMemory",
    "PackItem",
    "PackMember",
    "ProjectContext",
    "ProjectScope",
    "RecallResults",
    "RecentMemory",
    "RetrievalPlan",
    "SearchResult",
    "SearchResults",
]


@dataclass(frozen=True, slots=True)
class Budget:
    """What a pack spent of its budget; `dropped_items` counts the top `max_items` the tokens kept out."""

    max_items: int
    max_tokens: int
    used_items: int
    used_tokens: int
    dropped_items: int
    shortened_items: int

    @classmethod
    def of(cls, pack: Pack, max_items: int, max_tokens: int) -> Budget:
        return cls(max_items, max_tokens, len(pack.items), pack.used_tokens, pack.dropped, pack.shortened)


@dataclass(frozen=True, slots=True)
class PackMember:
    """A memory a group's line shows: the id to cite or edit, and where it is."""

    id: str
    type: str
    path: str
    occurred_at: str

    @classmethod
    def of(cls, memory: Memory) -> PackMember:
        return cls(memory.id, memory.type.value, memory.path, memory.occurred_at)


@dataclass(frozen=True, slots=True)
class PackItem:
    """One packed memory: where it is, its final score, and the tokens its block costs. A group's item
    (a summary or promotion showing the members the pack holds: ranking/grouping.py) lists in
    `members` the memories its lines show, in line order: the ones to cite or edit."""

    id: str
    type: str
    path: str
    score: float
    tokens: int
    shortened: bool
    created_at: str
    occurred_at: str
    members: tuple[PackMember, ...] = ()


@dataclass(frozen=True, slots=True)
class Candidates:
    """How many memories each channel returned, their union, and how many the ranking kept."""

    dense: int = 0
    bm25: int = 0
    union: int = 0
    matched: int = 0


@dataclass(frozen=True, slots=True)
class Dropped:
    """A memory read for a pack and left out: `budget`, `item_limit` or `floor` (usecases/reads.py)."""

    id: str
    reason: str
    score: float


@dataclass(frozen=True, slots=True)
class RetrievalPlan:
    """How a ranking was made: channels, fusion and blend parameters, candidate counts; for a pack
    also the relevance floor, each packed item's score components, what collapsed and what was left out."""

    strategy: str
    channels: tuple[str, ...]
    fusion: Mapping[str, Any]
    ranking: Mapping[str, Any]
    candidates: Candidates = Candidates()
    query: Mapping[str, Any] = field(default_factory=dict)  # what the query was read to say: as_of, speaker, time
    relevance_floor: float | None = None
    items: tuple[Mapping[str, Any], ...] = ()
    collapsed: tuple[Collapsed, ...] = ()
    dropped: tuple[Dropped, ...] = ()


@dataclass(frozen=True, slots=True)
class ContextPack:
    """recall_context's bounded pack (the XMemo contract)."""

    version: str
    query: str
    retrieval_plan: RetrievalPlan
    budget: Budget
    items: tuple[PackItem, ...]
    context_text: str
    scope: str
    blocks: tuple[str, ...] = ()  # context_text item by item, for the MCP text's cut (mcp_text.py)


# A result list shows at most this much of each memory: a search of 100 results over 64 KiB memories
# answered 6.4 MB and took the CPU from other tenants' reads. The whole text is one fetch by id away.
RESULT_CONTENT_CHARS = 8192


def _bounded(content: str) -> tuple[str, bool]:
    """The content, or its first RESULT_CONTENT_CHARS cut at a word gap and marked with an ellipsis."""
    if len(content) <= RESULT_CONTENT_CHARS:
        return content, False
    cut = content[:RESULT_CONTENT_CHARS]
    gap = cut.rfind(" ")
    return (cut[:gap] if gap > RESULT_CONTENT_CHARS // 2 else cut).rstrip() + " …", True


@dataclass(frozen=True, slots=True)
class SearchResult:
    """A memory found by search_memory (`score` its strict score, `rank_score` its place in the
    ranking) or by the light recall (`score` the ranking's, no `rank_score`)."""

    id: str
    content: str
    type: str
    path: str
    bucket: str
    scope: str
    team_id: str | None
    created_at: str
    occurred_at: str
    importance: float
    score: float
    rank_score: float | None = None
    content_truncated: bool = False

    @classmethod
    def of(cls, memory: Memory, score: float, rank_score: float | None = None) -> SearchResult:
        content, truncated = _bounded(memory.content)
        return cls(
            memory.id,
            content,
            memory.type.value,
            memory.path,
            memory.bucket,
            memory.scope,
            memory.team_id,
            memory.created_at,
            memory.occurred_at,
            memory.importance,
            score,
            rank_score,
            truncated,
        )


@dataclass(frozen=True, slots=True)
class SearchResults:
    """search_memory's strict list: only results at `min_score` or above, so it may be empty."""

    query: str
    min_score: float
    results: tuple[SearchResult, ...]


@dataclass(frozen=True, slots=True)
class RecallResults:
    """The light recall's best few memories."""

    query: str
    results: tuple[SearchResult, ...]


@dataclass(frozen=True, slots=True)
class ProjectScope:
    scope_key: str
    project_id: str
    owner_id: str
    organization_id: str
    workspace_id: str
    team_id: str | None


@dataclass(frozen=True, slots=True)
class RecentMemory:
    id: str
    content: str
    type: str
    path: str
    occurred_at: str


@dataclass(frozen=True, slots=True)
class DurableMemory:
    id: str
    content: str
    path: str


@dataclass(frozen=True, slots=True)
class ProjectContext:
    """A project's scope, its newest memories and its durable (semantic) context, under one budget."""

    project_scope: ProjectScope
    recent_memories: tuple[RecentMemory, ...]
    durable_context: tuple[DurableMemory, ...]
    budget: Budget
    context_text: str
