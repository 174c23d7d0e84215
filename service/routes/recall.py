"""The recall routes: the bounded context pack, strict search and a project's context (the XMemo contract)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query
from fastapi.responses import Response

from retrieval import RecallRequest, SearchRequest, recall_context, search_memory
from retrieval.domain import DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT
from retrieval.usecases import MAX_PROJECT_ID, project_context

from ..loop_reads import read_for_query
from .bodies import NON_BLANK_LABEL, Label, MemoryTypeName, ProjectContextBody, QueryText, RecallContextBody, iso
from .deps import Caller, Engine
from .responses import ContextPackOut, ProjectContextOut, SearchOut, answered

__all__ = ["router"]

router = APIRouter(tags=["recall"])


@router.post("/v1/recall/context", response_model=ContextPackOut)
async def recall_context_route(body: RecallContextBody, engine: Engine, principal: Caller) -> Response:
    request = RecallRequest(**body.model_dump(exclude={"as_of"}), as_of=iso(body.as_of))
    return answered(ContextPackOut, await read_for_query(engine, principal, request, recall_context))


async def search_request(
    query: QueryText,
    limit: int = Query(default=DEFAULT_SEARCH_LIMIT, ge=1, le=MAX_SEARCH_LIMIT),
    scope: Label | None = None,
    team_id: Label | None = None,
    bucket: Label | None = None,
    path_filter: Label | None = None,
    memory_type: MemoryTypeName | None = None,
    min_score: float | None = Query(default=None, ge=0.0, le=1.0),
) -> SearchRequest:
    """The search's query parameters, as the request they make (`async`: FastAPI runs a plain `def`
    dependency on a worker thread, a hand-off per request, routes/deps.py)."""
    return SearchRequest(
        query=query,
        limit=limit,
        scope=scope,
        team_id=team_id,
        bucket=bucket,
        path_filter=path_filter,
        memory_type=memory_type,
        min_score=min_score,
    )


@router.get("/v1/memories/search", response_model=SearchOut)
async def search_route(
    request: Annotated[SearchRequest, Depends(search_request)], engine: Engine, principal: Caller
) -> Response:
    return answered(SearchOut, await read_for_query(engine, principal, request, search_memory))


@router.post("/v1/projects/{project_id}/context", response_model=ProjectContextOut)
def project_context_route(
    project_id: Annotated[str, Path(min_length=1, max_length=MAX_PROJECT_ID, pattern=NON_BLANK_LABEL)],
    body: ProjectContextBody,
    engine: Engine,
    principal: Caller,
) -> Response:
    found = project_context(
        engine,
        principal,
        project_id,
        team_id=body.team_id,
        max_items=body.max_items,
        max_tokens=body.max_tokens,
        durable_query=body.durable_query,
    )
    return answered(ProjectContextOut, found)
