"""The write routes: remember, update_state and timeline events (the XMemo contract)."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from retrieval import RememberRequest, WriteResult, add_event, remember, update_state
from retrieval.domain import WRITE, require

from .bodies import EventBody, RememberBody, StateBody, iso
from .deps import Caller, Engine
from .responses import WriteOut, answered

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["write"])


@router.post(
    "/remember",
    status_code=201,
    response_model=WriteOut,
    responses={200: {"description": "unchanged (same semantic_key and content) or merged (dedupe)", "model": WriteOut}},
)
def remember_route(body: RememberBody, engine: Engine, principal: Caller) -> Response:
    require(principal, WRITE)
    fields = body.model_dump()
    fields["expires_at"] = iso(body.expires_at)
    return _answer(remember(engine, principal, RememberRequest(**fields)))


@router.post(
    "/update_state",
    status_code=201,
    response_model=WriteOut,
    responses={200: {"description": "unchanged: the state already holds this content", "model": WriteOut}},
)
def update_state_route(body: StateBody, engine: Engine, principal: Caller) -> Response:
    """As remember answers: 201 when a memory (or a new version of the state) was written, 200 when not."""
    require(principal, WRITE)
    return _answer(update_state(engine, principal, **body.model_dump()))


@router.post("/timeline/events", status_code=201, response_model=WriteOut)
def event_route(body: EventBody, engine: Engine, principal: Caller) -> Response:
    require(principal, WRITE)
    fields = body.model_dump()
    fields["occurred_at"] = iso(body.occurred_at)
    return answered(WriteOut, add_event(engine, principal, **fields), status_code=201)


def _answer(result: WriteResult) -> Response:
    """201 when the write made a memory (or a new version of one), 200 when it changed nothing."""
    return answered(WriteOut, result, status_code=201 if result.created else 200)
