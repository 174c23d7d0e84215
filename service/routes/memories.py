"""The memory management routes (contract 3b): list, read, history, edit, archive or forget, restore, batch."""

from __future__ import annotations

from typing import Annotated, Literal

from fastapi import APIRouter, Path, Query

from retrieval import MemoryStatus, get_memory
from retrieval.domain import MAX_LIST_PAGE
from retrieval.usecases import (
    CURSOR_PATTERN,
    ListQuery,
    edit_memory,
    forget_memory,
    forget_owner,
    list_memories,
    memory_history,
    remember_batch,
    set_status,
)

from .bodies import NO_NUL, NON_BLANK_LABEL, BatchBody, EditBody, Label, Timestamp, iso
from .deps import Caller, Engine
from .responses import BatchOut, ForgetOut, HistoryOut, MemoryOut, MemoryPageOut, StatusOut, answer

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["memories"])

MemoryId = Annotated[str, Path(max_length=64)]
ExpectedVersion = Annotated[int | None, Query(ge=1, description="409 if the memory is at another version")]


@router.get("/memories", response_model=MemoryPageOut)
def list_route(
    engine: Engine,
    principal: Caller,
    path_prefix: Label | None = None,
    memory_type: Literal["episodic", "semantic", "procedural", "identity", "working"] | None = None,
    status: Literal["active", "archived", "expired", "superseded"] | None = None,
    bucket: Label | None = None,
    team_id: Label | None = None,
    scope: Label | None = None,
    metadata: Annotated[
        str | None,
        Query(
            max_length=512,
            pattern=r"^[A-Za-z0-9_.:-]{1,128}=[^\x00]*$",
            description="key=value: the metadata field equals this text",
        ),
    ] = None,
    text: Annotated[str | None, Query(max_length=512, pattern=NO_NUL, description="content contains this")] = None,
    time_field: Literal["created_at", "updated_at", "occurred_at"] = "created_at",
    order: Literal["created_at", "updated_at", "occurred_at"] = "created_at",
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    owner_id: Annotated[
        str | None,
        Query(max_length=512, pattern=NON_BLANK_LABEL, description="another owner's memories (memory:admin)"),
    ] = None,
    cursor: Annotated[str | None, Query(pattern=CURSOR_PATTERN, description="next_cursor of the previous page")] = None,
    limit: Annotated[int, Query(ge=1, le=MAX_LIST_PAGE)] = 50,
) -> MemoryPageOut:
    """Memories you may see, newest created first, any status unless `status` is given."""
    page = list_memories(
        engine,
        principal,
        ListQuery(
            path_prefix=path_prefix,
            memory_type=memory_type,
            status=status,
            bucket=bucket,
            team_id=team_id,
            scope=scope,
            metadata=metadata,
            text=text,
            time_field=time_field,
            since=iso(since),
            until=iso(until),
            owner_id=owner_id,
            cursor=cursor,
            limit=limit,
            order=order,
        ),
    )
    return answer(MemoryPageOut, page)


@router.post("/memories/batch", response_model=BatchOut)
def batch_route(body: BatchBody, engine: Engine, principal: Caller) -> BatchOut:
    """Up to 500 new memories in one transaction (all or none); a batch sent again adds nothing."""
    results = remember_batch(engine, principal, [item.line() for item in body.memories])
    return BatchOut.model_validate({"results": results}, from_attributes=True)


@router.get("/memories/{memory_id}", response_model=MemoryOut)
def get_route(memory_id: MemoryId, engine: Engine, principal: Caller) -> MemoryOut:
    return answer(MemoryOut, get_memory(engine, principal, memory_id))


@router.get("/memories/{memory_id}/history", response_model=HistoryOut)
def history_route(memory_id: MemoryId, engine: Engine, principal: Caller) -> HistoryOut:
    """Versions, derived_from links both ways, supersession, and the audit trail."""
    return answer(HistoryOut, memory_history(engine, principal, memory_id))


@router.patch("/memories/{memory_id}", response_model=MemoryOut)
def edit_route(memory_id: MemoryId, body: EditBody, engine: Engine, principal: Caller) -> MemoryOut:
    """A new version with the fields sent; 409 unless the memory is at `expected_version`."""
    return answer(MemoryOut, edit_memory(engine, principal, memory_id, body.expected_version, body.changes()))


@router.post("/memories/{memory_id}/restore", response_model=StatusOut)
def restore_route(
    memory_id: MemoryId, engine: Engine, principal: Caller, expected_version: ExpectedVersion = None
) -> StatusOut:
    """An archived or expired memory becomes active again."""
    return answer(StatusOut, set_status(engine, principal, memory_id, MemoryStatus.ACTIVE, expected_version))


@router.delete("/memories/{memory_id}", response_model=StatusOut | ForgetOut)
def delete_route(
    memory_id: MemoryId,
    engine: Engine,
    principal: Caller,
    expected_version: ExpectedVersion = None,
    hard: Annotated[bool, Query(description="forget: remove the content from every store")] = False,
) -> StatusOut | ForgetOut:
    """Archive (soft, audited), or with `hard=true` forget: gone from every store, a tombstone audited."""
    if hard:
        return answer(ForgetOut, forget_memory(engine, principal, memory_id, expected_version))
    return answer(StatusOut, set_status(engine, principal, memory_id, MemoryStatus.ARCHIVED, expected_version))


@router.delete("/owners/{owner_id}/memories", response_model=ForgetOut)
def forget_owner_route(
    owner_id: Annotated[str, Path(min_length=1, max_length=512, pattern=NON_BLANK_LABEL)],
    engine: Engine,
    principal: Caller,
) -> ForgetOut:
    """Forget every memory an owner wrote ("forget me"), by a memory:admin key."""
    return answer(ForgetOut, forget_owner(engine, principal, owner_id))
