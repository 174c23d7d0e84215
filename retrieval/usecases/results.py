"""What the read use cases return: typed, frozen results, each with the JSON shape of the contract.

`to_dict` gives the REST and `--json` shape (the XMemo contract: the pack's `version`, `query`,
`retrieval_plan`, `budget`, `items`, `context_text`, `scope`); the MCP texts are rendered from the
same objects (usecases/mcp_text.py).
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

    def to_dict(self) -> dict[str, int]:
        return {
            "max_items": self.max_items,
            "max_tokens": self.max_tokens,
            "used_items": self.used_items,
            "used_tokens": self.used_tokens,
            "dropped_items": self.dropped_items,
            "shortened_items": self.shortened_items,
        }


@dataclass(frozen=True, slots=True)
class PackItem:
    """One packed memory: where it is, its final score, and the tokens its block costs."""

    id: str
    type: str
    path: str
    score: float
    tokens: int
    shortened: bool
    created_at: str
    occurred_at: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "type": self.type,
            "path": self.path,
            "score": self.score,
            "tokens": self.tokens,
            "shortened": self.shortened,
            "created_at": self.created_at,
            "occurred_at": self.occurred_at,
        }


@dataclass(frozen=True, slots=True)
class Candidates:
    """How many memories each channel returned, their union, and how many the ranking kept."""

    dense: int = 0
    bm25: int = 0
    union: int = 0
    matched: int = 0

    def to_dict(self) -> dict[str, int]:
        return {"dense": self.dense, "bm25": self.bm25, "union": self.union, "matched": self.matched}


@dataclass(frozen=True, slots=True)
class Dropped:
    """A memory read for a pack and left out: `budget`, `item_limit` or `floor` (usecases/reads.py)."""

    id: str
    reason: str
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "reason": self.reason, "score": self.score}


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "strategy": self.strategy,
            "channels": list(self.channels),
            "fusion": dict(self.fusion),
            "ranking": dict(self.ranking),
            "candidates": self.candidates.to_dict(),
            "query": dict(self.query),
            "relevance_floor": self.relevance_floor,
            "items": [dict(item) for item in self.items],
            "collapsed": [c.to_dict() for c in self.collapsed],
            "dropped": [d.to_dict() for d in self.dropped],
        }


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

    def to_dict(self) -> dict[str, Any]:
        return {
            "version": self.version,
            "query": self.query,
            "retrieval_plan": self.retrieval_plan.to_dict(),
            "budget": self.budget.to_dict(),
            "items": [item.to_dict() for item in self.items],
            "context_text": self.context_text,
            "scope": self.scope,
        }


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

    def to_dict(self) -> dict[str, Any]:
        found = {
            "id": self.id,
            "content": self.content,
            "content_truncated": self.content_truncated,
            "type": self.type,
            "path": self.path,
            "bucket": self.bucket,
            "scope": self.scope,
            "team_id": self.team_id,
            "created_at": self.created_at,
            "occurred_at": self.occurred_at,
            "importance": self.importance,
            "score": self.score,
        }
        if self.rank_score is not None:
            found["rank_score"] = self.rank_score
        return found


@dataclass(frozen=True, slots=True)
class SearchResults:
    """search_memory's strict list: only results at `min_score` or above, so it may be empty."""

    query: str
    min_score: float
    results: tuple[SearchResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "min_score": self.min_score, "results": [r.to_dict() for r in self.results]}


@dataclass(frozen=True, slots=True)
class RecallResults:
    """The light recall's best few memories."""

    query: str
    results: tuple[SearchResult, ...]

    def to_dict(self) -> dict[str, Any]:
        return {"query": self.query, "results": [r.to_dict() for r in self.results]}


@dataclass(frozen=True, slots=True)
class ProjectScope:
    scope_key: str
    project_id: str
    owner_id: str
    organization_id: str
    workspace_id: str
    team_id: str | None

    def to_dict(self) -> dict[str, Any]:
        return {
            "scope_key": self.scope_key,
            "project_id": self.project_id,
            "owner_id": self.owner_id,
            "organization_id": self.organization_id,
            "workspace_id": self.workspace_id,
            "team_id": self.team_id,
        }


@dataclass(frozen=True, slots=True)
class RecentMemory:
    id: str
    content: str
    type: str
    path: str
    occurred_at: str

    def to_dict(self) -> dict[str, str]:
        return {
            "id": self.id,
            "content": self.content,
            "type": self.type,
            "path": self.path,
            "occurred_at": self.occurred_at,
        }


@dataclass(frozen=True, slots=True)
class DurableMemory:
    id: str
    content: str
    path: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "content": self.content, "path": self.path}


@dataclass(frozen=True, slots=True)
class ProjectContext:
    """A project's scope, its newest memories and its durable (semantic) context, under one budget."""

    project_scope: ProjectScope
    recent_memories: tuple[RecentMemory, ...]
    durable_context: tuple[DurableMemory, ...]
    budget: Budget
    context_text: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "project_scope": self.project_scope.to_dict(),
            "recent_memories": [m.to_dict() for m in self.recent_memories],
            "durable_context": [m.to_dict() for m in self.durable_context],
            "budget": self.budget.to_dict(),
            "context_text": self.context_text,
        }
