"""The audit log page: records by action, memory and time, newest first."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from compactor.audit import AUDIT_ACTIONS
from retrieval.domain import READ, require
from retrieval.storage import audit_records

from ...routes.deps import Caller, Engine
from ..rendering import render
from .forms import day, first_lines

__all__ = ["router"]

router = APIRouter()


@router.get("/audit", response_class=HTMLResponse)
def audit_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """The audit log: by action, memory and time, newest first."""
    require(principal, READ)
    params = request.query_params
    action, memory_id = params.get("action", "").strip(), params.get("memory_id", "").strip()
    with engine.store.sql_engine.connect() as connection:
        records = audit_records(
            connection,
            principal,
            memory_id=memory_id or None,
            actions=(action,) if action else (),
            since=day(params.get("since")),
            until=day(params.get("until"), end=True),
            limit=200,
        )
    return render(
        request,
        "audit.html",
        title="Audit log",
        records=records,
        texts=first_lines(engine, [i for r in records for i in r.memory_ids[:5]]),
        filters={
            "action": action,
            "memory_id": memory_id,
            "since": params.get("since", ""),
            "until": params.get("until", ""),
        },
        actions=AUDIT_ACTIONS,
    )
