"""Request bodies of the REST routes: strict pydantic models that reject unknown fields (contract section 3)."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["EventBody", "ProjectContextBody", "RecallContextBody", "RememberBody", "StateBody"]


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class RecallContextBody(_Strict):
    query: str = Field(min_length=1, max_length=8192)
    max_items: int = Field(default=8, ge=1, le=50)
    max_tokens: int = Field(default=1500, ge=1, le=12000)
    scope: str | None = None
    team_id: str | None = None
    bucket: str | None = None
    path_filter: str | None = None
    memory_type: str | None = None


class ProjectContextBody(_Strict):
    team_id: str | None = None
    max_items: int = Field(default=8, ge=1, le=50)
    max_tokens: int = Field(default=1500, ge=1, le=12000)
    durable_query: str | None = Field(default=None, max_length=8192)


class RememberBody(_Strict):
    content: str = Field(min_length=1)
    path: str = Field(min_length=1, max_length=512)
    memory_type: str | None = "auto"
    bucket: str = "personal"
    scope: str = ""
    team_id: str | None = None
    source: str = ""
    importance: float = Field(default=0.5, ge=0.0, le=1.0)
    confidence: float = Field(default=0.5, ge=0.0, le=1.0)
    expires_at: str | None = None
    semantic_key: str | None = Field(default=None, max_length=512)
    dedupe: bool = False
    metadata: dict[str, Any] = Field(default_factory=dict)


class StateBody(_Strict):
    state_key: str = Field(pattern=r"^[a-z0-9][a-z0-9_.:-]{0,127}$")
    content: str = Field(min_length=1)
    bucket: str = "personal"
    scope: str = ""
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)


class EventBody(_Strict):
    content: str = Field(min_length=1)
    event_type: str = Field(pattern=r"^[a-z0-9][a-z0-9_.:-]{0,127}$")
    occurred_at: str
    session_id: str | None = None
    bucket: str = "personal"
    scope: str = ""
    source: str = ""
    metadata: dict[str, Any] = Field(default_factory=dict)
