"""Bulk import: JSON lines (plain memories, or exported records with their ids and owners) into the store."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields, replace
from typing import Any

from ..domain import (
    SESSION_CONTEXT_TURNS,
    WRITE,
    Memory,
    MemoryStatus,
    Principal,
    ValidationError,
    check_field,
    check_key,
    context_line,
    format_time,
    optional_time,
    require,
    session_context,
)
from ..engine import MemoryEngine
from ..storage import content_id, line_owner
from .writes import RememberRequest, auto_type, new_memory, remember

__all__ = ["IMPORT_FIELDS", "OPTIMIZE_AFTER_IMPORTED", "check_import", "import_records", "record_from_line"]


# What an import line may carry: the record's own fields as export writes them (Memory.to_dict), and
# `memory_type`, the name remember's request gives the type.
IMPORT_FIELDS = {f.name for f in fields(Memory)} - {"content_sha256"} | {"memory_type"}


def record_from_line(principal: Principal | None, line: dict[str, Any], now: str) -> Memory:
    """One import line (a plain memory, or an exported record with its id, owner, status and times).

    With `principal` None the line's own owner_id is restored; otherwise a line of another owner is
    refused (storage/backup.py). A line without an id gets one from its content, so a re-import adds nothing.
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
        source=line["source"] if isinstance(line.get("source"), str) else "import",  # "" stays "" (a round trip)
        importance=line.get("importance", 0.5),
        confidence=line.get("confidence", 0.5),
        expires_at=line.get("expires_at"),
        semantic_key=line.get("semantic_key"),
        metadata=line.get("metadata") or {},
        session_id=line.get("session_id"),
        occurred_at=line.get("occurred_at"),
        speaker=line.get("speaker"),
    )
    memory = new_memory(_line_principal(principal, line), request, now, auto_type(request))
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
        sources = line["derived_from"]
        if not isinstance(sources, list) or not all(isinstance(i, str) and i for i in sources):
            raise ValidationError("derived_from must be a list of memory ids")
        restored["derived_from"] = tuple(sources)
    if line.get("context"):
        if not isinstance(line["context"], str):
            raise ValidationError("context must be a string")
        restored["context"] = line["context"]
    return replace(memory, **restored)


def _line_principal(principal: Principal | None, line: dict[str, Any]) -> Principal:
    owner = line_owner(principal.owner_id if principal is not None else None, line)
    return principal if principal is not None else Principal.local(check_field(owner, "owner_id", allow_empty=False))


OPTIMIZE_AFTER_IMPORTED = 1000  # below this, the plain segments search about as fast


class _SessionTails:
    """The context lines each (owner, session) has so far, read once from the store and then kept as
    the import writes further turns of that session, so that each turn's BM25 context holds the turns
    before it."""

    def __init__(self, engine: MemoryEngine) -> None:
        self.engine = engine
        self.tails: dict[tuple[str, str], list[str]] = {}

    def with_context(self, memory: Memory) -> Memory:
        if memory.session_id is None:
            return memory
        key = (memory.owner_id, memory.session_id)
        if key not in self.tails:
            self.tails[key] = self.engine.store.session_tail(memory.owner_id, memory.session_id, SESSION_CONTEXT_TURNS)
        turns = self.tails[key]
        if memory.context is None:
            memory = replace(memory, context=session_context(turns))
        turns.append(context_line(memory.content, memory.speaker))
        del turns[:-SESSION_CONTEXT_TURNS]
        return memory


def _write_batch(engine: MemoryEngine, pending: Sequence[Memory]) -> int:
    """Embed and commit the memories of `pending` the store lacks (a line repeated in the file is written
    once, as its first copy); how many it wrote."""
    seen = set(engine.store.get_many([m.id for m in pending]))
    fresh = []
    for memory in pending:
        if memory.id not in seen:
            fresh.append(memory)
            seen.add(memory.id)
    if fresh:
        vectors = engine.vectors_for(fresh)
        with engine.writing() as work:
            work.insert(fresh, vectors)
    return len(fresh)


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
    parsed = _parsed(principal, lines, format_time(engine.clock()))
    check_import(engine, parsed)
    counts = {"imported": 0, "skipped": 0, "keyed": 0}
    tails = _SessionTails(engine)
    batch: list[Memory] = []

    def flush() -> None:
        if batch:
            written = _write_batch(engine, batch)
            counts["imported"] += written
            counts["skipped"] += len(batch) - written
            if progress:
                progress(len(batch))
            batch.clear()

    for line, memory in parsed:
        if memory.semantic_key is not None and memory.status == MemoryStatus.ACTIVE and not line.get("id"):
            remember(engine, principal or Principal.local(memory.owner_id), _request_of(memory))
            counts["keyed"] += 1
            if progress:
                progress(1)
            continue
        batch.append(tails.with_context(memory))
        if len(batch) >= batch_size:
            flush()
    flush()
    engine.index.flush()
    if counts["imported"] >= OPTIMIZE_AFTER_IMPORTED:
        engine.index.optimize()
    return counts


def _parsed(
    principal: Principal | None, lines: Iterable[dict[str, Any]], now: str
) -> list[tuple[dict[str, Any], Memory]]:
    """Every line with its record, or a ValidationError naming the first bad line: nothing is written yet."""
    parsed = []
    for number, line in enumerate(lines, start=1):
        try:
            parsed.append((line, record_from_line(principal, line, now)))
        except ValidationError as error:
            raise ValidationError(f"line {number}: {error.message}") from error
    return parsed


def check_import(engine: MemoryEngine, parsed: Sequence[tuple[dict[str, Any], Memory]]) -> None:
    """What a file's lines cannot do together, checked before anything is written, so that a bad file
    changes nothing and a retry meets the same answer: two active records of one key in one space, an
    id that is another owner's, an active record taking a key another active memory holds."""
    held: dict[tuple[str, str, str, str, str, str], tuple[int, str]] = {}
    carried = [(n, m) for n, (line, m) in enumerate(parsed, start=1) if line.get("id")]
    with engine.store.reading() as connection:  # one read of the store for every line's keys
        _check_keys(engine, carried, held, connection)
    stored = engine.store.get_many([m.id for _, m in carried])
    for number, memory in carried:
        found = stored.get(memory.id)
        if found is not None and found.owner_id != memory.owner_id:
            raise ValidationError(f"line {number}: id {memory.id} is another owner's memory")


def _check_keys(
    engine: MemoryEngine,
    carried: Sequence[tuple[int, Memory]],
    held: dict[tuple[str, str, str, str, str, str], tuple[int, str]],
    connection: Any,
) -> None:
    for number, memory in carried:
        for column in ("semantic_key", "state_key"):
            key = getattr(memory, column)
            if key is None or memory.status != MemoryStatus.ACTIVE:
                continue
            space = (column, key, memory.owner_id, memory.team_id or "", memory.bucket, memory.scope)
            first = held.setdefault(space, (number, memory.id))
            if first[1] != memory.id:
                raise ValidationError(
                    f"line {number}: {column} {key!r} is also the active record of line {first[0]}; "
                    "one key has one active memory in a space"
                )
            holder = engine.store.find_active_by_key(
                column, key, memory.owner_id, memory.bucket, memory.scope, memory.team_id, connection
            )
            if holder is not None and holder.id != memory.id:
                raise ValidationError(
                    f"line {number}: {column} {key!r} is held by active memory {holder.id} already; "
                    "archive it, or import this record without its id to supersede it"
                )


def _request_of(memory: Memory) -> RememberRequest:
    return RememberRequest(
        content=memory.content,
        path=memory.path,
        memory_type=memory.type.value,
        bucket=memory.bucket,
        scope=memory.scope,
        team_id=memory.team_id,
        source=memory.source,
        importance=memory.importance,
        confidence=memory.confidence,
        expires_at=memory.expires_at,
        semantic_key=memory.semantic_key,
        metadata=memory.metadata,
        session_id=memory.session_id,
        occurred_at=memory.occurred_at,
        speaker=memory.speaker,
    )
