"""Typed responses of the recall, write and reflect routes, so that OpenAPI documents what they return.

Each mirrors the `to_dict` shape of the use case's typed result (retrieval/usecases/results.py) or
report (compactor/report.py); the route returns that shape and FastAPI checks it against the model.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, Field

__all__ = [
    "AuditListOut",
    "AuditRecordOut",
    "BudgetOut",
    "ContextPackOut",
    "PackItemOut",
    "ProjectContextOut",
    "ReflectReportOut",
    "RetrievalPlanOut",
    "SearchOut",
    "SearchResultOut",
]

StoredType = Literal["episodic", "semantic", "procedural", "identity", "working"]


class BudgetOut(BaseModel):
    max_items: int
    max_tokens: int
    used_items: int
    used_tokens: int = Field(description="the exact cl100k token count of context_text")
    dropped_items: int = Field(description="memories among the top max_items that the token budget kept out")
    shortened_items: int


class PackItemOut(BaseModel):
    id: str
    type: StoredType
    path: str
    score: float
    tokens: int = Field(description="tokens of this item's block in context_text")
    shortened: bool
    created_at: str
    occurred_at: str


class CandidatesOut(BaseModel):
    dense: int
    bm25: int
    union: int
    matched: int


class CollapsedOut(BaseModel):
    id: str
    into: str
    reason: str


class DroppedOut(BaseModel):
    id: str
    reason: Literal["budget", "item_limit", "floor"]
    score: float


class RetrievalPlanOut(BaseModel):
    strategy: str
    channels: list[str]
    fusion: dict[str, Any] = Field(description="the fusion method and its parameters")
    ranking: dict[str, Any] = Field(description="the recency and importance blend and its parameters")
    candidates: CandidatesOut
    query: QueryReadingOut = Field(description="what the query was read to say")
    relevance_floor: float | None
    items: list[dict[str, Any]] = Field(description="each packed item's id and score components")
    collapsed: list[CollapsedOut] = Field(
        description="memories shown as another packed item: restatements collapsed into it, and members "
        "grouped under a summary's header"
    )
    dropped: list[DroppedOut] = Field(description="memories read for the pack and left out, with why")


class TimeWindowOut(BaseModel):
    phrase: str = Field(description="the date phrase of the query")
    start: str
    end: str


class QueryReadingOut(BaseModel):
    as_of: str | None = Field(default=None, description="when the question was asked: dates resolve against it")
    speaker: str | None = Field(default=None, description="the speaker the query asks about, preferred")
    time_window: TimeWindowOut | None = Field(default=None, description="the time the query names, preferred")


class ContextPackOut(BaseModel):
    """recall_context's bounded pack (the XMemo contract)."""

    version: str
    query: str
    retrieval_plan: RetrievalPlanOut
    budget: BudgetOut
    items: list[PackItemOut]
    context_text: str = Field(description="the rendered context that goes into a prompt")
    scope: str


class SearchResultOut(BaseModel):
    id: str
    content: str = Field(description="the memory's text, its first 8,192 characters when it is longer")
    content_truncated: bool = Field(description="true when content is cut: GET /api/v1/memories/{id} has it all")
    type: StoredType
    path: str
    bucket: str
    scope: str
    team_id: str | None
    created_at: str
    occurred_at: str
    importance: float
    score: float = Field(description="cosine with the query, or 1.0 when every query term is in the memory")
    rank_score: float = Field(description="the hybrid ranking's score")


class SearchOut(BaseModel):
    results: list[SearchResultOut]
    query: str
    min_score: float


class ProjectScopeOut(BaseModel):
    scope_key: str
    project_id: str
    owner_id: str
    organization_id: str
    workspace_id: str
    team_id: str | None


class RecentMemoryOut(BaseModel):
    id: str
    content: str
    type: StoredType
    path: str
    occurred_at: str


class DurableMemoryOut(BaseModel):
    id: str
    content: str
    path: str


class ProjectContextOut(BaseModel):
    project_scope: ProjectScopeOut
    recent_memories: list[RecentMemoryOut] = Field(description="newest first")
    durable_context: list[DurableMemoryOut] = Field(description="semantic memories relevant to durable_query")
    budget: BudgetOut
    context_text: str


class ReflectReportOut(BaseModel):
    """The compactor report (the XMemo contract); a dry run's is exactly the plan a real run applies."""

    dry_run: bool
    plan_id: str
    plan_digest: str = Field(description="pass as expected_plan to apply exactly this plan")
    actions: list[str]
    filters: dict[str, Any]
    now: str
    candidates: dict[str, int]
    summaries: list[dict[str, Any]]
    promotions: list[dict[str, Any]]
    lifecycle: dict[str, list[dict[str, Any]]]
    counts: dict[str, int]
    audit_record_ids: list[str]
    excluded: list[str] = Field(description="the proposals left out at the caller's request")
    preview: list[dict[str, Any]] = Field(description="each proposal as a person reviews it, with its proposal_id")


class AuditRecordOut(BaseModel):
    id: str
    created_at: str
    actor: str
    action: str
    plan_id: str | None
    owner_id: str
    team_id: str | None
    memory_ids: list[str]
    before: dict[str, Any]
    after: dict[str, Any]
    reason: str


class AuditListOut(BaseModel):
    records: list[AuditRecordOut] = Field(description="newest first")
