"""The reflect page: a dry run grouped by action, each proposal with its members, then applying exactly
the reviewed plan (its actions, its window, its digest) with the proposals left ticked."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from compactor import ReflectRequest, reflect
from retrieval import MemoryStatus, ReadFilters, ValidationError
from retrieval.domain import WRITE, require

from ...routes.deps import Caller, Engine, context_of
from ..rendering import render
from .forms import Form, text_of

__all__ = ["router"]

router = APIRouter()

ACTIONS = ("summarize", "promote", "expire", "decay", "archive")


def _reflect_request(source: Any, dry_run: bool) -> ReflectRequest:
    """The form's actions and window; an apply also carries the reviewed window's exact since and until."""
    chosen = [a for a in ACTIONS if a in source.getlist("actions")]
    try:
        hours = float(source.get("hours") or 24)
    except ValueError as error:
        raise ValidationError("the time window must be a number of hours") from error
    return ReflectRequest(
        actions_csv=",".join(chosen) or None,
        dry_run=dry_run,
        time_window_hours=hours,
        since=source.get("since") or None,
        until=source.get("until") or None,
    )


@router.get("/reflect", response_class=HTMLResponse)
def reflect_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """A dry run grouped by action (clusters as their member texts), then apply the chosen actions."""
    params = request.query_params
    report = None
    members: dict[str, str] = {}
    reconsider = params.get("reconsider") == "1"
    if params.get("run") == "dry":
        request_ = _reflect_request(params, dry_run=True)
        report = reflect(engine, principal, request_, context_of(request).settings.reflect, reconsider=reconsider)
        ids = [i for item in report.summaries + report.promotions for i in item.get("derived_from", [])]
        visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
        members = {m.id: m.content for m in engine.store.get_many(ids).values() if visible.admits(m)}
    groups = {a: [p for p in report.preview if p["action"] == a] for a in ACTIONS} if report else {}
    return render(
        request,
        "reflect.html",
        title="Reflect",
        report=report,
        groups=groups,
        members=members,
        actions=ACTIONS,
        chosen=params.getlist("actions") or list(ACTIONS),
        hours=params.get("hours", "24"),
        since=params.get("since", ""),
        until=params.get("until", ""),
        reconsider=reconsider,
    )


@router.post("/reflect/apply", response_class=HTMLResponse)
def reflect_apply(request: Request, form: Form, engine: Engine, principal: Caller) -> Response:
    """Apply exactly the reviewed dry run: its actions, its window, its plan digest (else 409), and of its
    proposals the ones left ticked."""
    require(principal, WRITE)
    expected = text_of(form, "expected_plan")
    if not expected:
        raise ValidationError("an apply needs the plan of a dry run; run the dry run and review it first")
    kept = {str(p) for p in form.getlist("keep")}
    proposed = [str(p) for p in form.getlist("proposed")]
    if proposed and not kept & set(proposed):
        raise ValidationError("no change is ticked: tick the changes to apply, or leave the page")
    report = reflect(
        engine,
        principal,
        _reflect_request(form, dry_run=False),
        context_of(request).settings.reflect,
        expected_plan=expected,
        exclude=[p for p in proposed if p not in kept],
        reconsider=text_of(form, "reconsider") == "1",
    )
    return render(request, "reflect_done.html", title="Reflect applied", report=report)
