"""The memories pages: the list (by words or by meaning), one memory, and its edit, archive, restore and forget."""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any
from urllib.parse import urlencode

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from retrieval import MemoryEngine, MemoryStatus, Principal, ValidationError
from retrieval.domain import WRITE, act_for_owner, reaches_every_owner, require
from retrieval.usecases import (
    MEANING_PAGE,
    ListQuery,
    MemoryPage,
    edit_memory,
    forget_memory,
    list_memories,
    memory_history,
    search_by_meaning,
    set_status,
)

from ...routes.deps import Caller, Engine
from ..rendering import render
from .forms import Form, day, notice, text_of

__all__ = ["router"]

router = APIRouter()

LIST_FILTERS = ("path_prefix", "memory_type", "status", "bucket", "team_id", "scope", "metadata", "text")
SEARCH_MODES = {"words": "words", "meaning": "meaning"}  # content contains the text; ranked as agents' recall ranks


@router.get("/", response_class=HTMLResponse)
def memories_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """The landing page: a table of memories with filters, a search box (by words or by meaning) and pagination."""
    params = request.query_params
    chosen = {name: params.get(name, "").strip() for name in LIST_FILTERS}
    if "status" not in params:  # active versions by default: superseded ones would outrank them by meaning
        chosen["status"] = MemoryStatus.ACTIVE.value
    owner = params.get("owner_id", "").strip()
    viewed = principal
    if owner:  # an admin looks at another owner's memories (403 otherwise); only their personal ones
        viewed = replace(principal, owner_id=act_for_owner(principal, owner), team_ids=())
    mode = params.get("mode", "words")
    if mode not in SEARCH_MODES:
        raise ValidationError(f"mode must be one of {', '.join(SEARCH_MODES)}")
    given: dict[str, Any] = {name: value or None for name, value in chosen.items()}
    since, until = day(params.get("since")), day(params.get("until"), end=True)
    kept = {
        **chosen,
        "since": params.get("since", ""),
        "until": params.get("until", ""),
        "mode": mode,
        "owner_id": owner,
        "order": params.get("order", "created_at"),  # checked by list_memories
    }
    context: dict[str, Any] = {
        "title": "Memories",
        "filters": kept,
        "statuses": [s.value for s in MemoryStatus],
        "modes": SEARCH_MODES,
        "page_size": MEANING_PAGE,
        "notice": notice(params.get("notice")),
        "switches_owner": reaches_every_owner(principal),
    }
    if mode == "meaning" and chosen["text"]:
        given.pop("text")
        matches = search_by_meaning(engine, viewed, chosen["text"], {**given, "since": since, "until": until})
        scores = {m.memory.id: m.score for m in matches}
        return render(request, "memories.html", memories=[m.memory for m in matches], scores=scores, **context)
    query = ListQuery(
        **given, since=since, until=until, cursor=params.get("cursor") or None, limit=25, order=kept["order"]
    )
    page = list_memories(engine, viewed, query)
    return render(request, "memories.html", memories=page.memories, scores=None, **_page_links(kept, page), **context)


def _page_links(kept: dict[str, str], page: MemoryPage) -> dict[str, Any]:
    """The next page's query (the filters kept, and the cursor) and a link per sortable column (a sort
    keeps the filters and starts from the first page)."""
    next_query = {k: v for k, v in kept.items() if v} | ({"cursor": page.next_cursor} if page.next_cursor else {})
    same = {k: v for k, v in kept.items() if v or k == "status"}
    return {
        "sort_links": {field: urlencode({**same, "order": field}) for field in ("occurred_at", "created_at")},
        "next_query": next_query if page.next_cursor else None,
    }


@router.get("/memories/{memory_id}", response_class=HTMLResponse)
def memory_page(memory_id: str, request: Request, engine: Engine, principal: Caller) -> Response:
    """One memory: its fields, versions, links both ways and audit trail; edit, archive, restore, forget."""
    history = memory_history(engine, principal, memory_id)
    return render(
        request,
        "memory.html",
        title="Memory",
        history=history,
        memory=history.memory,
        metadata_text=json.dumps(history.memory.metadata, ensure_ascii=False, indent=2),
        notice=notice(request.query_params.get("notice")),
    )


def _changes(form: FormData, engine: MemoryEngine, principal: Principal, memory_id: str) -> dict[str, Any]:
    """The edit form's fields that differ from the stored memory."""
    memory = memory_history(engine, principal, memory_id).memory
    sent: dict[str, Any] = {
        "content": form.get("content"),
        "path": text_of(form, "path"),
        "type": text_of(form, "type"),
        "source": text_of(form, "source"),
    }
    for name in ("importance", "confidence"):
        try:
            sent[name] = float(text_of(form, name))
        except ValueError as error:
            raise ValidationError(f"{name} must be a number from 0 to 1") from error
    sent["expires_at"] = text_of(form, "expires_at") or None
    try:
        sent["metadata"] = json.loads(text_of(form, "metadata") or "{}")
    except json.JSONDecodeError as error:
        raise ValidationError("metadata must be a JSON object") from error
    current = memory.to_dict()
    return {k: v for k, v in sent.items() if v != current.get(k)}


@router.post("/memories/{memory_id}/edit")
def edit_action(memory_id: str, form: Form, engine: Engine, principal: Caller) -> Response:
    require(principal, WRITE)
    changes = _changes(form, engine, principal, memory_id)
    if changes:
        edit_memory(engine, principal, memory_id, int(text_of(form, "expected_version") or 0), changes)
    return RedirectResponse(f"/ui/memories/{memory_id}?notice={'saved' if changes else 'unchanged'}", status_code=303)


@router.post("/memories/{memory_id}/{status}")
def status_action(memory_id: str, status: str, form: Form, engine: Engine, principal: Caller) -> Response:
    """archive, restore or forget (the last needs the confirmation box ticked)."""
    version = int(text_of(form, "expected_version") or 0) or None
    if status == "forget":
        if form.get("confirm") != "yes":
            raise ValidationError("tick the box to confirm that this memory is to be forgotten for good")
        forget_memory(engine, principal, memory_id, version)
        return RedirectResponse("/ui/?notice=forgotten", status_code=303)
    targets = {"archive": MemoryStatus.ARCHIVED, "restore": MemoryStatus.ACTIVE}
    if status not in targets:
        raise ValidationError(f"unknown action {status!r}")
    set_status(engine, principal, memory_id, targets[status], version)
    return RedirectResponse(f"/ui/memories/{memory_id}?notice={status}d", status_code=303)
