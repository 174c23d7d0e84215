"""Management use cases for people and tools: list, history, edit, archive, restore, forget, batch.

Every change is audited in its own transaction (storage/audit_log.py). Who may do what is decided by
domain/authorization.py, as for every use case: reads need memory:read, changes memory:write, another owner
memory:admin, a team its membership; a memory the caller may not see is NotFound, never saying
whether it exists.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..domain import (
    ADMIN,
    BATCH_LIMIT,
    MAX_LIST_PAGE,
    READ,
    SENTENCE_END,
    SESSION_CONTEXT_CHARS,
    WRITE,
    ConflictError,
    IndexUnavailableError,
    Memory,
    MemoryStatus,
    MemoryType,
    Principal,
    ReadFilters,
    ValidationError,
    act_for_owner,
    check_content,
    check_field,
    check_metadata,
    check_no_nul,
    check_path,
    check_range,
    check_unit,
    context_line,
    encoded_texts,
    format_time,
    member_team,
    memory_digest,
    optional_time,
    reaches_every_owner,
    require,
    text_sha256,
)
from ..engine import MemoryEngine
from ..storage import AuditRecord, Listing, UnitOfWork, actor_of, audit_change, audit_records, scrub_audit, tombstone
from .imports import record_from_line
from .writes import WriteResult, not_yet_expired, visible_memory

log = logging.getLogger("xmemo.manage")

__all__ = [
    "CURSOR_PATTERN",
    "Forgotten",
    "History",
    "ListQuery",
    "MemoryPage",
    "Version",
    "edit_memory",
    "forget_memory",
    "forget_owner",
    "list_memories",
    "memory_history",
    "remember_batch",
    "set_status",
]

EDITABLE = ("content", "path", "type", "importance", "confidence", "source", "expires_at", "metadata")
TIME_FIELDS = ("created_at", "updated_at", "occurred_at")
_METADATA_KEY = re.compile(r"[A-Za-z0-9_.:-]{1,128}")


# -- listing ----------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ListQuery:
    """The filters of GET /api/v1/memories as the caller gave them (validated by `list_memories`)."""

    path_prefix: str | None = None
    memory_type: str | None = None
    status: str | None = None
    bucket: str | None = None
    team_id: str | None = None
    scope: str | None = None
    metadata: str | None = None  # key=value
    text: str | None = None
    time_field: str = "created_at"
    since: str | None = None
    until: str | None = None
    owner_id: str | None = None
    cursor: str | None = None
    limit: int = 50
    order: str = "created_at"  # newest first by this time field (TIME_FIELDS); the cursor follows it


@dataclass(frozen=True, slots=True)
class MemoryPage:
    memories: list[Memory]
    next_cursor: str | None


# A cursor is the (time, id) of the last memory shown, as `<time>~<id>`, the time being the field the list
# is ordered by: any text of this
# shape is a valid cursor (the next page starts after that point), so its schema can say exactly that.
CURSOR_PATTERN = r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z~[^~]{1,64}$"


def _encode_cursor(memory: Memory, order: str) -> str:
    return f"{getattr(memory, order)}~{memory.id}"


def _decode_cursor(cursor: str) -> tuple[str, str]:
    if not re.fullmatch(CURSOR_PATTERN, cursor):
        raise ValidationError("cursor must be <time>~<id>, as next_cursor gives it")
    created, _, memory_id = cursor.partition("~")
    return created, memory_id


def _metadata_pair(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not _METADATA_KEY.fullmatch(key):
        raise ValidationError("metadata must be key=value with a key of letters, digits and _ . : -")
    return key, value


def _owner_filters(principal: Principal, query: ListQuery) -> ReadFilters:
    statuses = tuple(MemoryStatus)
    if query.status:
        try:
            statuses = (MemoryStatus(query.status),)
        except ValueError as error:
            raise ValidationError(f"status must be one of {', '.join(s.value for s in MemoryStatus)}") from error
    memory_type = None
    if query.memory_type:
        try:
            memory_type = MemoryType(query.memory_type)
        except ValueError as error:
            raise ValidationError(f"type must be one of {', '.join(t.value for t in MemoryType)}") from error
    team_id = member_team(principal, query.team_id or None, "list")
    owner = act_for_owner(principal, query.owner_id)
    if owner != principal.owner_id:
        return ReadFilters(
            owner_id=owner,
            team_id=team_id,
            statuses=statuses,
            bucket=query.bucket or None,
            scope=query.scope,
            memory_type=memory_type,
        )
    return ReadFilters(
        owner_id=principal.owner_id,
        team_ids=principal.team_ids,
        team_id=team_id,
        statuses=statuses,
        bucket=query.bucket or None,
        scope=query.scope,
        memory_type=memory_type,
    )


def list_memories(engine: MemoryEngine, principal: Principal, query: ListQuery) -> MemoryPage:
    """Memories the principal may see (any status unless `status`), newest first by `order` (created_at
    unless given), a page at a time."""
    require(principal, READ)
    limit = check_range(query.limit, "limit", 1, MAX_LIST_PAGE)
    if query.time_field not in TIME_FIELDS:
        raise ValidationError(f"time_field must be one of {', '.join(TIME_FIELDS)}")
    if query.order not in TIME_FIELDS:
        raise ValidationError(f"order must be one of {', '.join(TIME_FIELDS)}")
    listing = Listing(
        order=query.order,
        path_prefix=query.path_prefix or None,
        metadata=_metadata_pair(check_no_nul(query.metadata, "metadata")) if query.metadata else None,
        text=check_no_nul(query.text, "text").strip() if query.text and query.text.strip() else None,
        time_field=query.time_field,
        since=optional_time(query.since, "since"),
        until=optional_time(query.until, "until"),
        after=_decode_cursor(query.cursor) if query.cursor else None,
        # listed as active only while unexpired, whether or not reflect has marked the expiry yet
        unexpired_at=format_time(engine.clock()) if query.status == MemoryStatus.ACTIVE.value else None,
    )
    found = engine.store.listing(_owner_filters(principal, query), listing, limit + 1)
    page = found[:limit]
    return MemoryPage(page, _encode_cursor(page[-1], query.order) if len(found) > limit else None)


# -- history ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Version:
    """One version of a memory: when and how it came to be, and what changed (from the audit log)."""

    version: int
    at: str
    action: str
    actor: str
    audit_id: str | None
    changes: dict[str, Any]


@dataclass(frozen=True, slots=True)
class History:
    memory: Memory
    versions: list[Version]
    derived_from: list[Memory]
    derived_into: list[Memory]
    supersedes: list[Memory]
    superseded_by: list[Memory]
    audit: list[AuditRecord]


def _versions(memory: Memory, trail: list[AuditRecord]) -> list[Version]:
    versions: dict[int, Version] = {}
    for record in trail:  # oldest first: a later record of the same version wins
        after = record.after.get(memory.id)
        if isinstance(after, dict) and "version" in after:
            versions[int(after["version"])] = Version(
                int(after["version"]), record.created_at, record.action, record.actor, record.id, after
            )
    # The version a memory was created at is the one its audited creation names, else the one before its
    # first audited change, or, with none, the version it is at: a state that superseded version 1 of its
    # slot is created at version 2.
    first = min(versions, default=memory.version + 1)
    if first > 1 and versions.get(first) is not None and versions[first].action == "create":
        return [versions[v] for v in sorted(versions)]
    if first > 1:
        start = first - 1
        versions.setdefault(start, Version(start, memory.created_at, "created", "", None, {}))
    return [versions[v] for v in sorted(versions)]


def memory_history(engine: MemoryEngine, principal: Principal, memory_id: str) -> History:
    """The memory, its versions, what it was derived from and what was derived from it, its audit trail.

    Linked memories the caller may not see are left out."""
    require(principal, READ)
    memory = visible_memory(engine, principal, memory_id)
    visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
    sources = engine.store.get_many(list(memory.derived_from))
    supersedes = memory.metadata.get("supersedes")
    earlier = engine.store.get_many([supersedes]) if isinstance(supersedes, str) else {}
    with engine.store.reading() as connection:
        trail = audit_records(connection, principal, memory_id=memory.id, limit=1000, newest_first=False)
    return History(
        memory=memory,
        versions=_versions(memory, trail),
        derived_from=[m for i in memory.derived_from if (m := sources.get(i)) is not None and visible.admits(m)],
        derived_into=[m for m in engine.store.derived_into(memory.id) if visible.admits(m)],
        supersedes=[m for m in earlier.values() if visible.admits(m)],
        superseded_by=[m for m in engine.store.superseding(memory.id) if visible.admits(m)],
        audit=trail,
    )


# -- changes ------------------------------------------------------------------------------------


def _check_version(memory: Memory, expected_version: int | None) -> None:
    if expected_version is not None and memory.version != expected_version:
        raise ConflictError(f"memory {memory.id} is at version {memory.version}, not {expected_version}")


def _edited(memory: Memory, changes: dict[str, Any]) -> dict[str, Any]:
    unknown = set(changes) - set(EDITABLE)
    if unknown:
        raise ValidationError(f"not editable: {', '.join(sorted(unknown))}")
    checks: dict[str, Any] = {
        "content": check_content,
        "path": check_path,
        "type": lambda v: MemoryType(check_field(v, "type", allow_empty=False)),
        "importance": lambda v: check_unit(v, "importance"),
        "confidence": lambda v: check_unit(v, "confidence"),
        "source": lambda v: check_field(v, "source"),
        "expires_at": lambda v: optional_time(v, "expires_at"),
        "metadata": check_metadata,
    }
    try:
        fields = {name: checks[name](value) for name, value in changes.items()}
    except ValueError as error:  # MemoryType of an unknown name
        raise ValidationError(f"type must be one of {', '.join(t.value for t in MemoryType)}") from error
    if "content" in fields:
        fields["content_sha256"] = text_sha256(fields["content"])
    return fields


def edit_memory(
    engine: MemoryEngine, principal: Principal, memory_id: str, expected_version: int, changes: dict[str, Any]
) -> Memory:
    """A new version with `changes` (fields of EDITABLE); 409 unless the memory is at `expected_version`."""
    require(principal, WRITE)
    memory = visible_memory(engine, principal, memory_id)
    if memory.status == MemoryStatus.SUPERSEDED:
        raise ConflictError(_superseded_by(engine, principal, memory))
    _check_version(memory, expected_version)
    fields = _edited(memory, changes)
    now = format_time(engine.clock())
    edited = replace(memory, **fields, updated_at=now, version=memory.version + 1)
    vectors = engine.vectors_for([edited])  # encoded before the write lock; the version check below holds
    with engine.writing() as work:
        work.replace(edited, memory.version, vectors[0])
        work.audit([audit_change("edit", actor_of(principal), now, memory, edited)])
    return edited


def _superseded_by(engine: MemoryEngine, principal: Principal, memory: Memory) -> str:
    """Why a superseded memory takes no edit, naming the version that is active now (the chain followed)."""
    visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
    later, seen = memory, {memory.id}
    while later.status == MemoryStatus.SUPERSEDED:
        successors = [m for m in engine.store.superseding(later.id) if visible.admits(m) and m.id not in seen]
        if not successors:
            break
        later = successors[0]
        seen.add(later.id)
    if later.id == memory.id:
        return f"memory {memory.id} is superseded; edit the version that superseded it"
    return (
        f"memory {memory.id} is superseded by {later.id} (version {later.version}, {later.status.value}); edit that one"
    )


def set_status(
    engine: MemoryEngine,
    principal: Principal,
    memory_id: str,
    status: MemoryStatus,
    expected_version: int | None = None,
) -> Memory:
    """Archive (any status -> archived) or restore (archived or expired -> active), audited.

    Already there: unchanged, no record. Restoring a superseded memory is a conflict (its successor
    holds the key); a restored memory whose `expires_at` has passed loses it, or reflect would expire it again.
    """
    require(principal, WRITE)
    with engine.writing() as work:
        memory = visible_memory(engine, principal, memory_id)
        _check_version(memory, expected_version)
        if memory.status == status:
            return memory
        if status == MemoryStatus.ACTIVE and memory.status not in (MemoryStatus.ARCHIVED, MemoryStatus.EXPIRED):
            raise ConflictError(f"memory {memory_id} is {memory.status.value}; only archived or expired ones restore")
        now = format_time(engine.clock())
        expires_at = memory.expires_at
        if status == MemoryStatus.ACTIVE and expires_at is not None and expires_at <= now:
            expires_at = None
        changed = replace(memory, status=status, expires_at=expires_at, updated_at=now, version=memory.version + 1)
        action = "restore" if status == MemoryStatus.ACTIVE else "archive"
        work.replace(changed, memory.version)
        work.audit([audit_change(action, actor_of(principal), now, memory, changed)])
    return changed


@dataclass(frozen=True, slots=True)
class Forgotten:
    """What a forget removed from every store, and the tombstones it left in the audit log."""

    forgotten: list[str]
    audit_record_ids: list[str]


def forget_memory(
    engine: MemoryEngine, principal: Principal, memory_id: str, expected_version: int | None = None
) -> Forgotten:
    """Remove one memory for good: its row, its index point, its embedding-cache entries (every
    version's), the query cache, its words in its session's BM25 contexts and in earlier audit records.
    A `forget` audit record without content remains."""
    require(principal, WRITE)
    memory = visible_memory(engine, principal, memory_id)
    _check_version(memory, expected_version)
    return _forget(engine, principal, [memory], "forgotten on request", expected_version)


def forget_owner(engine: MemoryEngine, principal: Principal, owner_id: str) -> Forgotten:
    """Forget every memory an owner wrote, by an admin: team ones in the admin's own teams, and personal
    ones when the admin reaches every owner (domain/authorization.py: a team's admin administers its teams;
    the operator, every team and owner)."""
    require(principal, ADMIN)
    owner_id = check_field(owner_id, "owner_id", allow_empty=False)
    personal = owner_id == principal.owner_id or reaches_every_owner(principal)
    chosen = [
        m
        for m in engine.store.get_many(engine.store.owner_ids(owner_id)).values()
        if (personal if m.team_id is None else principal.operator or m.team_id in principal.team_ids)
    ]
    return _forget(engine, principal, chosen, f"every memory of owner {owner_id} forgotten by an admin")


def _forget(
    engine: MemoryEngine,
    principal: Principal,
    chosen: Sequence[Memory],
    reason: str,
    expected_version: int | None = None,
) -> Forgotten:
    ids = [m.id for m in chosen]
    now = format_time(engine.clock())
    with engine.writing() as work:
        stored = work.versions(ids)  # what was read is what goes: a memory changed meanwhile is a conflict
        moved = [m.id for m in chosen if stored.get(m.id) != m.version]
        if moved:
            raise ConflictError(f"memories changed while being forgotten: {', '.join(moved[:5])}; try again")
        earlier = scrub_audit(work, ids)
        work.delete(ids)
        work.count_forget()  # until every index is rebuilt after it (engine/upkeep.py)
        recontexted = _drop_from_contexts(work, chosen, earlier)
        audit_ids = work.audit(tombstone(actor_of(principal), now, list(chosen), reason))
        keys = _embedding_keys(chosen, earlier, recontexted)
        unused = sorted(set(keys) - _keys_in_use(work, keys, chosen, earlier, recontexted))
    engine.embedder.cache.delete_many(unused)
    _clear_query_cache(engine)
    engine.store.checkpoint()  # the forgotten rows' old pages leave the SQLite write-ahead log too
    try:
        engine.after_forget()  # the deleted vectors leave the disk too (engine/memory_engine.py)
    except IndexUnavailableError as error:  # committed: answer what happened (engine.writing says more)
        log.warning("forgotten in the record; the index catches up when repaired (%s)", error.message)
    return Forgotten(ids, audit_ids)


def _drop_from_contexts(
    work: UnitOfWork, forgotten: Sequence[Memory], earlier: list[tuple[str, dict[str, Any]]]
) -> list[tuple[Memory, Memory]]:
    """Later turns of the same session carry a forgotten turn's text (any version of it) in their BM25
    context (domain/texts.py session_context); cut those lines out (the index takes them after the commit).
    Returns each rewritten turn as it was and as it is now: its question-and-answer pair changes with it."""
    gone = {m.id for m in forgotten}
    rewritten: dict[str, str | None] = {}
    before: dict[str, Memory] = {}
    for memory in forgotten:
        if memory.session_id is None:
            continue
        texts = [memory.content] + [
            v["content"] for i, v in earlier if i == memory.id and isinstance(v.get("content"), str)
        ]
        # a line as context_line writes it, and as releases before it wrote it (the raw first characters)
        snippets = {context_line(t, memory.speaker) for t in texts} | {t[:SESSION_CONTEXT_CHARS] for t in texts}
        for snippet in snippets:
            for other in work.with_context_containing(memory.owner_id, memory.session_id, snippet):
                context = rewritten.get(other.id, other.context)
                if other.id in gone or context is None:
                    continue
                kept = "\n".join(line for line in context.split("\n") if line != snippet) or None
                work.set_context(other.id, kept)
                rewritten[other.id] = kept
                before.setdefault(other.id, other)
    return [(was, replace(was, context=rewritten[i])) for i, was in before.items()]


WORD_PREFIX = 200  # of a word looked for (_keys_in_use): far under SQLite's bound on a LIKE pattern


def _versions_of(memories: Sequence[Memory], earlier: list[tuple[str, dict[str, Any]]]) -> list[Memory]:
    """These memories as they are and as each audited earlier content had them (the speaker is not editable)."""
    by_id = {m.id: m for m in memories}
    versions = list(memories)
    for memory_id, values in earlier:
        content = values.get("content")
        if isinstance(content, str) and memory_id in by_id:
            versions.append(replace(by_id[memory_id], content=content))
    return versions


def _keys_of(memory: Memory) -> list[str]:
    """Every cache key a memory's text gives (engine/feed.py): its whole text, its sentence units and its
    question-and-answer pair, whichever units the settings or an earlier release embedded (a key absent
    from the cache costs nothing)."""
    return [memory_digest(memory, text) for text in encoded_texts(memory)]


def _embedding_keys(
    memories: Sequence[Memory],
    earlier: list[tuple[str, dict[str, Any]]],
    recontexted: Sequence[tuple[Memory, Memory]],
) -> list[str]:
    """The cache keys derived from the forgotten memories: those of every version of them (current and
    audited), and the pairs of the later turns whose context held them (their question was one of these)."""
    keys = [key for version in _versions_of(memories, earlier) for key in _keys_of(version)]
    for was, now in recontexted:
        keys += sorted(set(_keys_of(was)) - set(_keys_of(now)))
    return list(dict.fromkeys(keys))


def _keys_in_use(
    work: UnitOfWork,
    keys: Sequence[str],
    memories: Sequence[Memory],
    earlier: list[tuple[str, dict[str, Any]]],
    recontexted: Sequence[tuple[Memory, Memory]],
) -> set[str]:
    """Which of `keys` a remaining memory gives too: as its whole text (the stored `embed_sha256`), or as
    a unit (the same sentence said by the same speaker in the same tenant). A memory giving a unit key of
    one of these texts holds that text's longest word, so only the tenant's memories holding one are read."""
    used = work.embed_shas_in_use(keys)
    words: dict[tuple[str, str | None], set[str]] = {}
    for version in [*_versions_of(memories, earlier), *(was for was, _ in recontexted)]:
        pieces = [version.content, *SENTENCE_END.split(" ".join(version.content.split()))]
        tenant = words.setdefault((version.owner_id, version.team_id), set())
        tenant.update(max(piece.split(), key=len)[:WORD_PREFIX] for piece in pieces if piece.split())
    wanted = set(keys)
    for (owner_id, team_id), tenant_words in words.items():
        for other in work.of_tenant_containing(owner_id, team_id, sorted(tenant_words)):
            used.update(wanted.intersection(_keys_of(other)))
    return used


def _clear_query_cache(engine: MemoryEngine) -> None:
    """The query LRU is keyed by digests that do not say whose text they hold: drop all of it."""
    engine.embedder.clear_queries()


# -- batch ----------------------------------------------------------------------------------------


def remember_batch(engine: MemoryEngine, principal: Principal, items: Sequence[dict[str, Any]]) -> list[WriteResult]:
    """Up to BATCH_LIMIT new memories in one transaction, each audited; all or nothing.

    Each item takes remember's fields (no semantic_key, no dedupe). An item's id comes from its
    owner, team, place, content, session and time (storage/backup.py), so sending a batch again adds
    nothing: such items come back `unchanged`.
    """
    require(principal, WRITE)
    if not 1 <= len(items) <= BATCH_LIMIT:
        raise ValidationError(f"a batch holds 1 to {BATCH_LIMIT} memories")
    now = format_time(engine.clock())
    built = [
        not_yet_expired(record_from_line(principal, {**item, "source": item.get("source") or "batch"}, now), now)
        for item in items
    ]
    unseen = {m.id: m for m in built if m.id not in engine.store.get_many([m.id for m in built])}
    vectors = dict(zip(unseen, engine.vectors_for(list(unseen.values())), strict=True)) if unseen else {}
    with engine.writing() as work:  # read again under the write lock: a concurrent same batch wrote first
        existing = engine.store.get_many([m.id for m in built])
        fresh = [m for i, m in unseen.items() if i not in existing]
        work.insert(fresh, [vectors[m.id] for m in fresh])
        work.audit([audit_change("create", actor_of(principal), now, None, m, "batch") for m in fresh])
    made = {m.id for m in fresh}
    return [WriteResult(existing.get(m.id, m), "created" if m.id in made else "unchanged") for m in built]
