"""The recall routes: the bounded context pack, strict search and a project's context (the XMemo contract)."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path, Query

from retrieval import recall_context, search_memory
from retrieval.domain import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from retrieval.usecases import MAX_PROJECT_ID, project_context

from ..loop_reads import read_for_query
from ..schemas import (
    NON_BLANK_LABEL,
    Label,
    MemoryTypeName,
    ProjectContextBody,
    QueryText,
    RecallContextBody,
    iso,
)
from .deps import Caller, Engine
from .responses import ContextPackOut, ProjectContextOut, SearchOut

__all__ = ["router"]

router = APIRouter(tags=["recall"])


@router.post("/v1/recall/context", response_model=ContextPackOut)
async def recall_context_route(body: RecallContextBody, engine: Engine, principal: Caller) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "scope": body.scope,
        "team_id": body.team_id,
        "bucket": body.bucket,
        "path_filter": body.path_filter,
        "memory_type": body.memory_type,
    }
    pack = await read_for_query(
        engine,
        principal,
        body.query,
        lambda vector: recall_context(
            engine,
            principal,
            body.query,
            max_items=body.max_items,
            max_tokens=body.max_tokens,
            query_vector=vector,
            as_of=iso(body.as_of),
            **filters,
        ),
        items=body.max_items,
        **filters,
    )
    return pack.to_dict()


@router.get("/v1/memories/search", response_model=SearchOut)
async def search_route(
    engine: Engine,
    principal: Caller,
    query: QueryText,
    limit: int = Query(default=DEFAULT_SEARCH_LIMIT, ge=1, le=MAX_SEARCH_LIMIT),
    scope: Label | None = None,
    team_id: Label | None = None,
    bucket: Label | None = None,
    path_filter: Label | None = None,
    memory_type: MemoryTypeName | None = None,
    min_score: float | None = Query(default=None, ge=0.0, le=1.0),
) -> dict[str, Any]:
    filters: dict[str, Any] = {
        "scope": scope,
        "team_id": team_id,
        "bucket": bucket,
        "path_filter": path_filter,
        "memory_type": memory_type,
    }
    found = await read_for_query(
        engine,
        principal,
        query,
        lambda vector: search_memory(
            engine, principal, query, limit=limit, min_score=min_score, query_vector=vector, **filters
        ),
        **filters,
    )
    return found.to_dict()


@router.post("/v1/projects/{project_id}/context", response_model=ProjectContextOut)
def project_context_route(
    project_id: Annotated[str, Path(min_length=1, max_length=MAX_PROJECT_ID, pattern=NON_BLANK_LABEL)],
    body: ProjectContextBody,
    engine: Engine,
    principal: Caller,
) -> dict[str, Any]:
    return project_context(
        engine,
        principal,
        project_id,
        team_id=body.team_id,
        max_items=body.max_items,
        max_tokens=body.max_tokens,
        durable_query=body.durable_query,
    ).to_dict()
