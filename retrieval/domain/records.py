"""The memory record, the caller's identity and the filters a read applies."""

from __future__ import annotations

import re
from dataclasses import dataclass, field, fields
from datetime import UTC, datetime
from enum import Enum
from typing import Any

from .errors import ValidationError
from .limits import KEY_REGEX
from .path_filter import PathPattern
from .scopes import ADMIN, READ, WRITE

__all__ = [
    "KEY_PATTERN",
    "Memory",
    "MemoryStatus",
    "MemoryType",
    "Principal",
    "ReadFilters",
    "format_time",
    "parse_time",
    "utc_now",
]

KEY_PATTERN = re.compile(KEY_REGEX)


class MemoryType(str, Enum):
    EPISODIC = "episodic"
    SEMANTIC = "semantic"
    PROCEDURAL = "procedural"
    IDENTITY = "identity"
    WORKING = "working"


class MemoryStatus(str, Enum):
    ACTIVE = "active"
    ARCHIVED = "archived"
    EXPIRED = "expired"
    SUPERSEDED = "superseded"


def utc_now() -> datetime:
    return datetime.now(UTC)


def format_time(moment: datetime) -> str:
    """A fixed-width UTC ISO 8601 text (four-digit year, microseconds, Z), so stored times sort as strings."""
    return moment.astimezone(UTC).isoformat(timespec="microseconds").replace("+00:00", "Z")


def parse_time(text: str, *, field_name: str = "timestamp") -> datetime:
    """Parse ISO 8601 with a zone (a trailing Z allowed); a naive or malformed value is a ValidationError."""
    try:
        moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    except (ValueError, AttributeError) as error:
        raise ValidationError(f"{field_name} must be ISO 8601, got {text!r}") from error
    if moment.tzinfo is None:
        raise ValidationError(f"{field_name} must carry a time zone, got {text!r}")
    try:
        return moment.astimezone(UTC)
    except OverflowError as error:
        raise ValidationError(f"{field_name} is out of range: {text!r}") from error


@dataclass(frozen=True, slots=True)
class Memory:
    """One stored memory, as the system of record holds it."""

    id: str
    owner_id: str
    content: str
    path: str
    type: MemoryType
    bucket: str = "personal"
    scope: str = ""
    team_id: str | None = None
    semantic_key: str | None = None
    state_key: str | None = None
    event_type: str | None = None
    importance: float = 0.5
    confidence: float = 0.5
    source: str = ""
    session_id: str | None = None
    speaker: str | None = None  # who said it (a conversation's speaker, a chat's role); matched and preferred
    metadata: dict[str, Any] = field(default_factory=dict)
    created_at: str = ""
    updated_at: str = ""
    occurred_at: str = ""
    last_accessed_at: str | None = None
    access_count: int = 0
    expires_at: str | None = None
    status: MemoryStatus = MemoryStatus.ACTIVE
    version: int = 1
    derived_from: tuple[str, ...] = ()
    content_sha256: str = ""
    context: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as XMemo clients name its fields: every field but the content digest, JSON-ready."""
        values = {f.name: getattr(self, f.name) for f in fields(self) if f.name not in _NOT_SHOWN}
        values.update(
            type=self.type.value,
            status=self.status.value,
            metadata=dict(self.metadata),
            derived_from=list(self.derived_from),
        )
        return values


_NOT_SHOWN = ("content_sha256",)  # derived from the content; the store keeps it for the keyed no-op


@dataclass(frozen=True, slots=True)
class Principal:
    """Who is asking: the server resolves it from the API key, never from the request body."""

    owner_id: str
    agent_id: str = ""
    organization_id: str = ""
    workspace_id: str = ""
    project_id: str | None = None
    team_ids: tuple[str, ...] = ()
    scopes: frozenset[str] = frozenset({READ, WRITE})
    operator: bool = False  # the command line of the data dir: may name any team (domain/authorization.py)

    @classmethod
    def local(cls, owner_id: str) -> Principal:
        """The operator at the command line of the data dir: all rights, acting as `owner_id`."""
        return cls(
            owner_id=owner_id,
            agent_id="cli",
            scopes=frozenset({READ, WRITE, ADMIN}),
            operator=True,
        )


@dataclass(frozen=True, slots=True)
class ReadFilters:
    """What a read may return: visibility (owner and teams) narrowed by the caller's optional filters.

    A memory is visible when it is personal to `owner_id` (no team) or belongs to one of `team_ids`.
    `team_id`, when set, narrows to that team only (its membership is checked before this is built).
    `path_pattern` is a parsed `path_filter` (see path_filter.py for its one meaning).
    """

    owner_id: str
    team_ids: tuple[str, ...] = ()
    team_id: str | None = None
    bucket: str | None = None
    scope: str | None = None
    path_pattern: PathPattern | None = None
    memory_type: MemoryType | None = None
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,)

    def admits(self, memory: Memory) -> bool:
        """The same rule the index filter applies, for records read back from SQL."""
        if self.team_id is not None:
            visible = memory.team_id == self.team_id
        else:
            visible = (memory.team_id is None and memory.owner_id == self.owner_id) or (
                memory.team_id is not None and memory.team_id in self.team_ids
            )
        return (
            visible
            and memory.status in self.statuses
            and (self.bucket is None or memory.bucket == self.bucket)
            and (self.scope is None or memory.scope == self.scope)
            and (self.memory_type is None or memory.type == self.memory_type)
            and (self.path_pattern is None or self.path_pattern.matches(memory.path))
        )
