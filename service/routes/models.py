"""Typed bodies and responses of the management routes, so that OpenAPI documents what they return."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import BaseModel, BeforeValidator, ConfigDict, Field

from compactor.plan import PROPOSAL_PATTERN
from compactor.reflect import MAX_EXCLUDE
from compactor.report import PLAN_DIGEST_PATTERN
from retrieval import Memory, WriteResult
from retrieval.domain import BATCH_LIMIT
from retrieval.storage import AuditRecord
from retrieval.usecases import History, Version

from ..schemas import Content, Label, NewMemoryFields, NonBlankLabel, ReflectBody, Timestamp

__all__ = [
    "BatchBody",
    "BatchOut",
    "EditBody",
    "ForgetOut",
    "HistoryOut",
    "LinkOut",
    "MemoryOut",
    "MemoryPageOut",
    "ReflectPlanBody",
    "StatusOut",
    "WriteOut",
]


def _whole(value: Any) -> Any:
    """JSON Schema's integer includes 8.0: take a whole float as its int, and nothing else lax (no text, no bool)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


WholeNumber = Annotated[int, BeforeValidator(_whole)]
StoredType = Literal["episodic", "semantic", "procedural", "identity", "working"]
StatusName = Literal["active", "archived", "expired", "superseded"]


class MemoryOut(BaseModel):
    """A memory record (the XMemo contract)."""

    id: str
    owner_id: str
    team_id: str | None
    bucket: str
    scope: str
    path: str
    type: StoredType
    content: str
    semantic_key: str | None
    state_key: str | None
    event_type: str | None
    importance: float
    confidence: float
    source: str
    session_id: str | None
    speaker: str | None = None
    metadata: dict[str, Any]
    created_at: str
    updated_at: str
    occurred_at: str
    last_accessed_at: str | None
    access_count: int
    expires_at: str | None
    status: StatusName
    version: int
    derived_from: list[str]

    @classmethod
    def of(cls, memory: Memory) -> MemoryOut:
        record = memory.to_dict()
        record.pop("context", None)
        return cls(**record)


class MemoryPageOut(BaseModel):
    memories: list[MemoryOut]
    next_cursor: str | None = Field(description="pass as `cursor` for the next page; null on the last")


class LinkOut(BaseModel):
    """Another memory named by a link, briefly."""

    id: str
    type: StoredType
    path: str
    status: StatusName
    created_at: str

    @classmethod
    def of(cls, memory: Memory) -> LinkOut:
        return cls(
            id=memory.id,
            type=memory.type.value,
            path=memory.path,
            status=memory.status.value,
            created_at=memory.created_at,
        )


class HistoryOut(BaseModel):
    memory: MemoryOut
    versions: list[Version]
    derived_from: list[LinkOut] = Field(description="the memories this one was made from (reflect)")
    derived_into: list[LinkOut] = Field(description="the memories made from this one (reflect)")
    supersedes: list[LinkOut]
    superseded_by: list[LinkOut]
    audit: list[AuditRecord] = Field(description="the memory's audit trail, oldest first")

    @classmethod
    def of(cls, history: History) -> HistoryOut:
        return cls(
            memory=MemoryOut.of(history.memory),
            versions=history.versions,
            derived_from=[LinkOut.of(m) for m in history.derived_from],
            derived_into=[LinkOut.of(m) for m in history.derived_into],
            supersedes=[LinkOut.of(m) for m in history.supersedes],
            superseded_by=[LinkOut.of(m) for m in history.superseded_by],
            audit=history.audit,
        )


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EditBody(_Strict):
    """The fields to change (only those sent) and the version they were read at."""

    expected_version: WholeNumber = Field(ge=1, strict=True, description="409 if the memory is at another version")
    content: Content | None = None
    path: NonBlankLabel | None = None
    memory_type: StoredType | None = None
    importance: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    confidence: float | None = Field(default=None, ge=0.0, le=1.0, strict=True)
    source: Label | None = None
    expires_at: Timestamp | None = Field(default=None, description="null clears it")
    metadata: dict[str, Any] | None = None

    def changes(self) -> dict[str, Any]:
        """What was sent, in the use case's names; a null means "clear" for expires_at only."""
        sent = self.model_dump(include=self.model_fields_set - {"expected_version"})
        if "memory_type" in sent:
            sent["type"] = sent.pop("memory_type")
        if sent.get("expires_at") is not None:
            sent["expires_at"] = sent["expires_at"].isoformat()
        return {k: v for k, v in sent.items() if v is not None or k == "expires_at"}


class ReflectPlanBody(ReflectBody):
    """reflect's parameters (the XMemo contract) and, our addition, the plan a dry run showed."""

    expected_plan: str | None = Field(
        default=None,
        pattern=PLAN_DIGEST_PATTERN,
        description="a dry run's plan_digest: plan again and apply only if the plan is still this one, else 409",
    )
    exclude: list[Annotated[str, Field(pattern=PROPOSAL_PATTERN)]] | None = Field(
        default=None,
        max_length=MAX_EXCLUDE,
        description=(
            "proposal_id values of that dry run to leave out: the rest is applied exactly as reviewed, "
            "or nothing is written (409) when an id is not in the plan or leaving it out changes another proposal"
        ),
    )


class StatusOut(BaseModel):
    id: str
    status: StatusName
    version: int


class ForgetOut(BaseModel):
    forgotten: list[str] = Field(description="ids removed from every store")
    audit_record_ids: list[str] = Field(description="the tombstones left in the audit log, without content")


class BatchItem(NewMemoryFields):
    def line(self) -> dict[str, Any]:
        line = self.model_dump()
        for name in ("expires_at", "occurred_at"):
            line[name] = line[name].isoformat() if line[name] is not None else None
        return line


class BatchBody(_Strict):
    memories: list[BatchItem] = Field(min_length=1, max_length=BATCH_LIMIT)


class WriteOut(BaseModel):
    id: str
    memory_id: str
    status: StatusName
    version: int
    deduplicated: bool
    outcome: Literal["created", "unchanged", "superseded", "merged"]

    @classmethod
    def of(cls, result: WriteResult) -> WriteOut:
        return cls(**result.to_dict())


class BatchOut(BaseModel):
    results: list[WriteOut]
