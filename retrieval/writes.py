"""Write use cases: remember, update_state, timeline events, archive, and bulk import."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np

from .backup import content_id, line_owner
from .embedding import text_sha256
from .engine import SESSION_CONTEXT_TURNS, MemoryEngine, session_context
from .errors import ConflictError, NotFoundError, ValidationError
from .index import IndexFilter
from .records import Memory, MemoryStatus, MemoryType, Principal, ReadFilters, format_time
from .policy import WRITE, member_team, require
from .unit_of_work import UnitOfWork
from .validation import (
    check_content,
    check_field,
    check_key,
    check_metadata,
    check_path,
    check_unit,
    memory_type_or_auto,
    optional_time,
)

__all__ = [
    "RememberRequest",
    "WriteResult",
    "add_event",
    "archive_memory",
    "import_records",
    "remember",
    "update_state",
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


@dataclass(frozen=True, slots=True)
class WriteResult:
    """What a write did: `outcome` is created, unchanged, superseded or merged."""

    memory: Memory
    outcome: str

    @property
    def created(self) -> bool:
        return self.outcome in ("created", "superseded")

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.memory.id,
            "memory_id": self.memory.id,
            "status": self.memory.status.value,
            "version": self.memory.version,
            "deduplicated": self.outcome in ("unchanged", "merged"),
            "outcome": self.outcome,
        }


def _new_memory(principal: Principal, request: RememberRequest, now: str, memory_type: MemoryType) -> Memory:
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
        semantic_key=check_field(request.semantic_key, "semantic_key", allow_empty=False) if request.semantic_key else None,
        importance=check_unit(request.importance, "importance"),
        confidence=check_unit(request.confidence, "confidence"),
        source=check_field(request.source or "", "source"),
        session_id=check_field(request.session_id, "session_id") if request.session_id else None,
        metadata=check_metadata(request.metadata),
        created_at=now,
        updated_at=now,
        occurred_at=optional_time(request.occurred_at, "occurred_at") or now,
        expires_at=optional_time(request.expires_at, "expires_at"),
    )


def _auto_type(request: RememberRequest) -> MemoryType:
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
    memory = _new_memory(principal, request, now, _auto_type(request))
    vector = engine.vectors_for([memory])

    def write(work: UnitOfWork) -> WriteResult:
        if memory.semantic_key is not None:
            result = _remember_keyed(work, memory, "semantic_key", memory.semantic_key, now, vector)
            if result is not None:
                return result
        if request.dedupe:
            result = _merge_near_duplicate(engine, work, memory, vector[0], now)
            if result is not None:
                return result
        fresh = _with_session_context(engine, memory)
        work.insert([fresh], vector)
        return WriteResult(fresh, "created")

    return _keyed_write(engine, write)


def _with_session_context(engine: MemoryEngine, memory: Memory) -> Memory:
    """Attach the session's preceding turns (see engine.SESSION_CONTEXT_TURNS); call under the write lock."""
    if memory.session_id is None or memory.context is not None:
        return memory
    turns = engine.store.session_tail(memory.owner_id, memory.session_id, SESSION_CONTEXT_TURNS)
    return replace(memory, context=session_context(turns))


def _remember_keyed(work: UnitOfWork, memory: Memory, column: str, key: str, now: str,
                    vector: np.ndarray | None = None) -> WriteResult | None:
    """The keyed upsert: unchanged when the content is the same, else a new version supersedes."""
    work.lock(json.dumps([column, memory.owner_id, memory.team_id, memory.bucket, memory.scope, key]))
    current = work.find_active_by_key(column, memory, key)
    if current is None:
        return None
    if current.content_sha256 == memory.content_sha256:
        return WriteResult(current, "unchanged")
    work.set_status(current, MemoryStatus.SUPERSEDED, now)
    successor = replace(memory, version=current.version + 1, metadata={**memory.metadata, "supersedes": current.id})
    work.insert([successor], vector)
    return WriteResult(successor, "superseded")


def _merge_near_duplicate(engine: MemoryEngine, work: UnitOfWork, memory: Memory, vector: np.ndarray,
                          now: str) -> WriteResult | None:
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
        content=content, path=f"state/{state_key}", memory_type=MemoryType.WORKING.value, bucket=bucket,
        scope=scope, source=source, metadata=metadata or {},
    )
    now = format_time(engine.clock())
    memory = replace(_new_memory(principal, request, now, MemoryType.WORKING), state_key=state_key)

    def write(work: UnitOfWork) -> WriteResult:
        result = _remember_keyed(work, memory, "state_key", state_key, now)
        if result is not None:
            return result
        work.insert([memory])
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
        content=content, path=f"timeline/{event_type}", bucket=bucket, scope=scope, source=source,
        metadata=metadata or {}, session_id=session_id, occurred_at=occurred_at,
    )
    now = format_time(engine.clock())
    memory = replace(_new_memory(principal, request, now, MemoryType.EPISODIC), event_type=event_type)
    with engine.writing() as work:
        memory = _with_session_context(engine, memory)
        work.insert([memory])
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


# What an import line may carry: the record's own fields as export writes them (Memory.to_dict), and
# `memory_type`, the name remember's request gives the type.
IMPORT_FIELDS = {f.name for f in fields(Memory)} - {"content_sha256"} | {"memory_type"}


def record_from_line(principal: Principal | None, line: dict[str, Any], now: str) -> Memory:
    """One import line (a plain memory, or an exported record with its id, owner, status and times).

    With `principal` None the line's own owner_id is restored; otherwise a line of another owner is
    refused (retrieval.backup). A line without an id gets one from its content, so a re-import adds nothing.
    """
    unknown = set(line) - IMPORT_FIELDS
    if unknown:
        raise ValidationError(f"unknown fields: {', '.join(sorted(unknown))}")
    request = RememberRequest(
        content=line.get("content"),  # type: ignore[arg-type]
        path=line.get("path") or "imported",
        memory_type=line.get("type") or line.get("memory_type"),
        bucket=line.get("bucket") or "personal",
        scope=line.get("scope") or "",
        team_id=line.get("team_id"),
        source=line.get("source") or "import",
        importance=line.get("importance", 0.5),
        confidence=line.get("confidence", 0.5),
        expires_at=line.get("expires_at"),
        semantic_key=line.get("semantic_key"),
        metadata=line.get("metadata") or {},
        session_id=line.get("session_id"),
        occurred_at=line.get("occurred_at"),
    )
    memory = _new_memory(_line_principal(principal, line), request, now, _auto_type(request))
    restored: dict[str, Any] = {"id": content_id(memory, optional_time(line.get("occurred_at"), "occurred_at"))}
    if line.get("id"):
        try:
            restored["id"] = str(uuid.UUID(str(line["id"])))
        except ValueError as error:
            raise ValidationError(f"id must be a UUID, got {line['id']!r}") from error
    for name in ("created_at", "updated_at", "last_accessed_at"):
        if line.get(name):
            restored[name] = optional_time(line[name], name)
    if line.get("status"):
        try:
            restored["status"] = MemoryStatus(line["status"])
        except ValueError as error:
            raise ValidationError(f"unknown status {line['status']!r}") from error
    for name in ("version", "access_count"):
        if name in line:
            if isinstance(line[name], bool) or not isinstance(line[name], int) or line[name] < 0:
                raise ValidationError(f"{name} must be a non-negative integer")
            restored[name] = line[name] if name == "access_count" else max(1, line[name])
    if line.get("state_key"):
        restored["state_key"] = check_key(line["state_key"], "state_key")
    if line.get("event_type"):
        restored["event_type"] = check_key(line["event_type"], "event_type")
    if line.get("derived_from"):
        restored["derived_from"] = tuple(str(i) for i in line["derived_from"])
    if line.get("context"):
        if not isinstance(line["context"], str):
            raise ValidationError("context must be a string")
        restored["context"] = line["context"]
    return replace(memory, **restored)


def _line_principal(principal: Principal | None, line: dict[str, Any]) -> Principal:
    owner = line_owner(principal.owner_id if principal is not None else None, line)
    return principal if principal is not None else Principal.local(owner)


OPTIMIZE_AFTER_IMPORTED = 1000  # below this, the plain segments search about as fast


def import_records(
    engine: MemoryEngine,
    principal: Principal | None,
    lines: Iterable[dict[str, Any]],
    *,
    batch_size: int = 256,
    progress: Callable[[int], None] | None = None,
) -> dict[str, int]:
    """Bulk remember: validate, embed a batch, commit it to SQL, index it. Ids already present are skipped.

    `principal` None restores every line's own owner (a backup); see `record_from_line`.

    A line with a semantic_key takes the remember path (no-op, supersede) one by one. Returns counts.
    """
    if principal is not None:
        require(principal, WRITE)
    counts = {"imported": 0, "skipped": 0, "keyed": 0}
    batch: list[Memory] = []
    tails: dict[tuple[str, str], list[str]] = {}  # (owner, session) -> contents written so far

    def with_context(memory: Memory) -> Memory:
        if memory.session_id is None:
            return memory
        key = (memory.owner_id, memory.session_id)
        if key not in tails:
            tails[key] = engine.store.session_tail(memory.owner_id, memory.session_id, SESSION_CONTEXT_TURNS)
        turns = tails[key]
        if memory.context is None:
            memory = replace(memory, context=session_context(turns))
        turns.append(memory.content)
        del turns[:-SESSION_CONTEXT_TURNS]
        return memory

    def flush(pending: Sequence[Memory]) -> None:
        if not pending:
            return
        existing = engine.store.get_many([m.id for m in pending])
        seen = set(existing)
        fresh = []
        for memory in pending:  # a line repeated in the file is written once, as its first copy
            if memory.id not in seen:
                fresh.append(memory)
                seen.add(memory.id)
        counts["skipped"] += len(pending) - len(fresh)
        if fresh:
            vectors = engine.vectors_for(fresh)
            with engine.writing() as work:
                work.insert(fresh, vectors)
            counts["imported"] += len(fresh)
        if progress:
            progress(len(pending))

    now = format_time(engine.clock())
    for line in lines:
        memory = record_from_line(principal, line, now)
        if memory.semantic_key is not None and memory.status == MemoryStatus.ACTIVE and not line.get("id"):
            remember(engine, principal or Principal.local(memory.owner_id), _request_of(memory))
            counts["keyed"] += 1
            if progress:
                progress(1)
            continue
        batch.append(with_context(memory))
        if len(batch) >= batch_size:
            flush(batch)
            batch = []
    flush(batch)
    engine.index.flush()
    if counts["imported"] >= OPTIMIZE_AFTER_IMPORTED:
        engine.index.optimize()
    return counts


def _request_of(memory: Memory) -> RememberRequest:
    return RememberRequest(
        content=memory.content, path=memory.path, memory_type=memory.type.value, bucket=memory.bucket,
        scope=memory.scope, team_id=memory.team_id, source=memory.source, importance=memory.importance,
        confidence=memory.confidence, expires_at=memory.expires_at, semantic_key=memory.semantic_key,
        metadata=memory.metadata, session_id=memory.session_id, occurred_at=memory.occurred_at,
    )
