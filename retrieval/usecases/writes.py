"""Write use cases: remember, update_state, timeline events and archive."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import Any

import numpy as np

from ..domain import (
    SESSION_CONTEXT_TURNS,
    WRITE,
    ConflictError,
    Memory,
    MemoryStatus,
    MemoryType,
    NotFoundError,
    Principal,
    ReadFilters,
    ValidationError,
    check_content,
    check_field,
    check_key,
    check_metadata,
    check_path,
    check_unit,
    format_time,
    member_team,
    memory_type_or_auto,
    optional_time,
    parse_time,
    require,
    session_context,
    text_sha256,
)
from ..engine import MemoryEngine
from ..index import IndexFilter
from ..storage import UnitOfWork, actor_of, audit_change

__all__ = [
    "KEYED_ATTEMPTS",
    "RememberRequest",
    "WriteResult",
    "add_event",
    "archive_memory",
    "auto_type",
    "new_memory",
    "not_yet_expired",
    "remember",
    "remembered_memory",
    "update_state",
    "visible_memory",
    "with_session_context",
]


@dataclass(frozen=True, slots=True)
class RememberRequest:
    content: str
    path: str
    memory_type: str | None = None
    bucket: str = "personal"
    scope: str = ""
    team_id: str | None = None
    source: str = ""
    importance: float = 0.5
    confidence: float = 0.5
    expires_at: str | None = None
    semantic_key: str | None = None
    dedupe: bool = False
    metadata: dict[str, Any] = field(default_factory=dict)
    session_id: str | None = None
    occurred_at: str | None = None
    speaker: str | None = None


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: `outcome` is created, unchanged, superseded or merged; the rest is read from the
    memory written (or the existing one it matched)."""

    memory: Memory
    outcome: str

    @property
    def created(self) -> bool:
        return self.outcome in ("created", "superseded")

    @property
    def id(self) -> str:
        return self.memory.id

    @property
    def memory_id(self) -> str:
        return self.memory.id

    @property
    def status(self) -> str:
        return self.memory.status.value

    @property
    def version(self) -> int:
        return self.memory.version

    @property
    def deduplicated(self) -> bool:
        return self.outcome in ("unchanged", "merged")


def new_memory(principal: Principal, request: RememberRequest, now: str, memory_type: MemoryType) -> Memory:
    content = check_content(request.content)
    return Memory(
        id=str(uuid.uuid4()),
        owner_id=principal.owner_id,
        team_id=member_team(principal, request.team_id, "write to"),
        bucket=check_field(request.bucket or "personal", "bucket", allow_empty=False),
        scope=check_field(request.scope or "", "scope"),
        path=check_path(request.path),
        type=memory_type,
        content=content,
        content_sha256=text_sha256(content),
        semantic_key=check_field(request.semantic_key, "semantic_key", allow_empty=False)
        if request.semantic_key
        else None,
        importance=check_unit(request.importance, "importance"),
        confidence=check_unit(request.confidence, "confidence"),
        source=check_field(request.source or "", "source"),
        session_id=check_field(request.session_id, "session_id") if request.session_id else None,
        speaker=check_field(request.speaker, "speaker") if request.speaker else None,
        metadata=check_metadata(request.metadata),
        created_at=now,
        updated_at=now,
        occurred_at=_not_ahead(optional_time(request.occurred_at, "occurred_at"), now) or now,
        expires_at=optional_time(request.expires_at, "expires_at"),
    )


# Clocks differ and time zones get lost: up to a day ahead is taken as given; further is a mistake
# (a year typed wrong, seconds read as milliseconds) that would sort first in recency forever.
OCCURRED_AHEAD = timedelta(days=1)


def _not_ahead(occurred_at: str | None, now: str) -> str | None:
    if occurred_at is not None and parse_time(occurred_at) > parse_time(now) + OCCURRED_AHEAD:
        raise ValidationError(
            f"occurred_at {occurred_at} is more than a day in the future (now {now}); give when it happened"
        )
    return occurred_at


def not_yet_expired(memory: Memory, now: str) -> Memory:
    """A new memory whose `expires_at` is already past is refused (422): stored, it would read `active`
    until reflect's expire pass while every read passes it over. An import restores such records as
    they were (their status says what they are); a new write is told its mistake."""
    if memory.expires_at is not None and parse_time(memory.expires_at) <= parse_time(now):
        raise ValidationError(
            f"expires_at {memory.expires_at} is already past (now {now}): the memory would be stored expired; "
            "give a later time, or leave expires_at out"
        )
    return memory


def remembered_memory(principal: Principal, request: RememberRequest, now: str) -> Memory:
    """The memory `remember` would write for `request` (its checks: every field, an `expires_at` to come)."""
    return not_yet_expired(new_memory(principal, request, now, auto_type(request)), now)


def auto_type(request: RememberRequest) -> MemoryType:
    chosen = memory_type_or_auto(request.memory_type)
    if chosen is not None:
        return chosen
    return MemoryType.SEMANTIC if request.semantic_key else MemoryType.EPISODIC


# Writers of one key take the key's lock first (UnitOfWork.lock: replicas of one PostgreSQL queue on
# it), so they meet no conflict among themselves; a keyed write that still meets one (an edit or an
# archive of the current version in between) starts again on what is there now.
KEYED_ATTEMPTS = 3


def _keyed_write(engine: MemoryEngine, write: Callable[[UnitOfWork], WriteResult]) -> WriteResult:
    """Run `write` in a unit of work, again on a ConflictError, at most KEYED_ATTEMPTS times."""
    for attempt in range(KEYED_ATTEMPTS):
        try:
            with engine.writing() as work:
                return write(work)
        except ConflictError:
            if attempt == KEYED_ATTEMPTS - 1:
                raise
    raise AssertionError("unreachable")


def remember(engine: MemoryEngine, principal: Principal, request: RememberRequest) -> WriteResult:
    """Store a memory. Same semantic_key and content: no-op. New content: supersede. dedupe: merge."""
    require(principal, WRITE)
    now = format_time(engine.clock())
    memory = remembered_memory(principal, request, now)
    # The model encodes before the write lock, units included; a unit made of the session's previous
    # turn uses the tail read here, and if another turn lands in between, the write encodes it again.
    vector = engine.vectors_for([with_session_context(engine, memory)])

    def write(work: UnitOfWork) -> WriteResult:
        if memory.semantic_key is not None:
            keyed = ("semantic_key", memory.semantic_key)
            result = _remember_keyed(work, memory, keyed, now, vector, actor_of(principal))
            if result is not None:
                return result
        if request.dedupe:
            result = _merge_near_duplicate(engine, work, memory, vector[0], now)
            if result is not None:
                return result
        fresh = with_session_context(engine, memory)
        work.insert([fresh], vector)
        return WriteResult(fresh, "created")

    return _keyed_write(engine, write)


def with_session_context(engine: MemoryEngine, memory: Memory) -> Memory:
    """Attach the session's preceding turns (domain/texts.py SESSION_CONTEXT_TURNS). Under the write
    lock for the record; before it, only as a guess."""
    if memory.session_id is None or memory.context is not None:
        return memory
    turns = engine.store.session_tail(memory.owner_id, memory.session_id, SESSION_CONTEXT_TURNS)
    return replace(memory, context=session_context(turns))


def _remember_keyed(
    work: UnitOfWork, memory: Memory, keyed: tuple[str, str], now: str, vector: np.ndarray | None, actor: str
) -> WriteResult | None:
    """The keyed upsert: unchanged when the content and the path are the same, else a new version
    supersedes (a path is where the memory is filed and what `path_filter` reads: moving it is a change).
    A supersession is audited on both records: the old one's move to superseded, the new one's creation,
    each naming the other, so each record's history holds its versions and the chain."""
    column, key = keyed
    work.lock(json.dumps([column, memory.owner_id, memory.team_id, memory.bucket, memory.scope, key]))
    current = work.find_active_by_key(column, memory, key)
    if current is None:
        return None
    if current.content_sha256 == memory.content_sha256 and current.path == memory.path:
        return WriteResult(current, "unchanged")
    retired = work.set_status(current, MemoryStatus.SUPERSEDED, now)
    successor = replace(memory, version=current.version + 1, metadata={**memory.metadata, "supersedes": current.id})
    work.insert([successor], vector)
    work.audit(
        [
            audit_change("supersede", actor, now, current, retired, f"superseded by {successor.id} ({column} {key})"),
            audit_change("create", actor, now, None, successor, f"supersedes {current.id} ({column} {key})"),
        ]
    )
    return WriteResult(successor, "superseded")


def _merge_near_duplicate(
    engine: MemoryEngine, work: UnitOfWork, memory: Memory, vector: np.ndarray, now: str
) -> WriteResult | None:
    """Merge into the most similar active memory of the same space when cosine >= dedupe_similarity."""
    filters = ReadFilters(
        owner_id=memory.owner_id,
        team_ids=(memory.team_id,) if memory.team_id else (),
        team_id=memory.team_id,
        bucket=memory.bucket,
        scope=memory.scope,
    )
    hits, _ = engine.index.search(vector, None, IndexFilter.from_read_filters(filters), 1, 0)
    if not hits or hits[0].score < engine.settings.dedupe_similarity:
        return None
    existing = work.get(hits[0].id)
    if existing is None or not filters.admits(existing):
        return None
    merged = replace(
        existing,
        importance=max(existing.importance, memory.importance),
        confidence=max(existing.confidence, memory.confidence),
        metadata={**existing.metadata, **memory.metadata},
        updated_at=now,
        version=existing.version + 1,
    )
    work.replace(merged, existing.version)
    return WriteResult(merged, "merged")


def update_state(
    engine: MemoryEngine,
    principal: Principal,
    *,
    state_key: str,
    content: str,
    bucket: str = "personal",
    scope: str = "",
    source: str = "",
    metadata: dict[str, Any] | None = None,
) -> WriteResult:
    """A versioned slot: one active `working` memory per owner, bucket, scope and state_key."""
    require(principal, WRITE)
    check_key(state_key, "state_key")
    request = RememberRequest(
        content=content,
        path=f"state/{state_key}",
        memory_type=MemoryType.WORKING.value,
        bucket=bucket,
        scope=scope,
        source=source,
        metadata=metadata or {},
    )
    now = format_time(engine.clock())
    memory = replace(new_memory(principal, request, now, MemoryType.WORKING), state_key=state_key)
    vector = engine.vectors_for([memory])  # before the write lock, as remember

    def write(work: UnitOfWork) -> WriteResult:
        result = _remember_keyed(work, memory, ("state_key", state_key), now, vector, actor_of(principal))
        if result is not None:
            return result
        work.insert([memory], vector)
        return WriteResult(memory, "created")

    return _keyed_write(engine, write)


def add_event(
    engine: MemoryEngine,
    principal: Principal,
    *,
    content: str,
    event_type: str,
    occurred_at: str,
    session_id: str | None = None,
    bucket: str = "personal",
    scope: str = "",
    source: str = "",
    metadata: dict[str, Any] | None = None,
) -> WriteResult:
    """Append an episodic timeline event; never deduplicated."""
    require(principal, WRITE)
    check_key(event_type, "event_type")
    if not occurred_at:
        raise ValidationError("occurred_at is required (ISO 8601 with a zone)")
    request = RememberRequest(
        content=content,
        path=f"timeline/{event_type}",
        bucket=bucket,
        scope=scope,
        source=source,
        metadata=metadata or {},
        session_id=session_id,
        occurred_at=occurred_at,
    )
    now = format_time(engine.clock())
    memory = replace(new_memory(principal, request, now, MemoryType.EPISODIC), event_type=event_type)
    vector = engine.vectors_for([with_session_context(engine, memory)])  # before the write lock, as remember
    with engine.writing() as work:
        memory = with_session_context(engine, memory)
        work.insert([memory], vector)
    return WriteResult(memory, "created")


def visible_memory(engine: MemoryEngine, principal: Principal, memory_id: str) -> Memory:
    """The memory if this principal may see it (any status), else NotFound, never saying which."""
    memory = engine.store.get(memory_id)
    filters = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
    if memory is None or not filters.admits(memory):
        raise NotFoundError(f"no memory {memory_id}")
    return memory


def archive_memory(
    engine: MemoryEngine, principal: Principal, memory_id: str, expected_version: int | None = None
) -> Memory:
    """Soft-delete one memory: status archived, kept and readable by id.

    With `expected_version`, a memory that is at another version is a conflict (nothing changes).
    """
    require(principal, WRITE)
    with engine.writing() as work:
        memory = visible_memory(engine, principal, memory_id)
        if expected_version is not None and memory.version != expected_version:
            raise ConflictError(f"memory {memory_id} is at version {memory.version}, not {expected_version}")
        if memory.status == MemoryStatus.ARCHIVED:
            return memory
        return work.set_status(memory, MemoryStatus.ARCHIVED, format_time(engine.clock()))
