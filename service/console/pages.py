"""The console pages: memories, a memory, the audit log, recall, reflect, keys and status."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import replace
from typing import Annotated, Any
from urllib.parse import urlencode

from fastapi import APIRouter, Depends, Request
from fastapi.responses import FileResponse, HTMLResponse, RedirectResponse, Response
from starlette.datastructures import FormData

from compactor import ReflectRequest, reflect
from compactor.audit import AUDIT_ACTIONS
from retrieval import (
    MemoryEngine,
    MemoryStatus,
    NotFoundError,
    Principal,
    ReadFilters,
    ValidationError,
    recall_context,
)
from retrieval.domain import ADMIN, READ, SCOPES, WRITE, act_for_owner, require
from retrieval.storage import audit_records
from retrieval.usecases import (
    MEANING_PAGE,
    ListQuery,
    edit_memory,
    forget_memory,
    list_memories,
    memory_history,
    render_context_text,
    search_by_meaning,
    set_status,
)

from ..routes.deps import Caller, Engine, context_of
from .eval_reports import CHART, find_reports, read_report
from .rendering import checked_form, first_line, render, session_of

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)
Form = Annotated[FormData, Depends(checked_form)]

LIST_FILTERS = ("path_prefix", "memory_type", "status", "bucket", "team_id", "scope", "metadata", "text")
ACTIONS = ("summarize", "promote", "expire", "decay", "archive")
SEARCH_MODES = {"words": "words", "meaning": "meaning"}  # content contains the text; ranked as agents' recall ranks
# Why a memory read for a pack is not in it (retrieval_plan.dropped) or is there as another's words
# (retrieval_plan.collapsed: retrieval/ranking/restatements.py, and grouping.py for `grouped`), in words a
# person reads.
LEFT_OUT_REASONS = {
    "budget": "budget: among the top max items, kept out by the token budget",
    "item_limit": "item limit: beyond max items",
    "floor": "floor: scored below the relevance floor",
    "contained": "contained: its words are in the kept memory",
    "near-duplicate": "near-duplicate: almost the same meaning as the kept memory",
    "carried": "carried: the kept memory holds every sentence of it",
    "grouped": "grouped: shown as a line under the summary that holds it, with its other members",
}


def _day(value: str | None, end: bool = False) -> str | None:
    """A date input (YYYY-MM-DD) as the start of that day in UTC; `end` takes the next day's start."""
    if not value:
        return None
    if len(value) == 10:
        from datetime import date, timedelta

        try:
            day = date.fromisoformat(value) + timedelta(days=1 if end else 0)
        except ValueError as error:
            raise ValidationError(f"not a date: {value!r}") from error
        return f"{day.isoformat()}T00:00:00Z"
    return value


def _text(form: FormData, name: str) -> str:
    value = form.get(name)
    return value.strip() if isinstance(value, str) else ""


def _snippets(engine: MemoryEngine, ids: Iterable[str]) -> dict[str, str]:
    """The first line of each memory's text (rendering.first_line), read in one batch, to show beside its
    id; the ids come from the caller's own pack or audit records. A forgotten memory has none."""
    found = engine.store.get_many(list(dict.fromkeys(ids)))
    return {memory_id: first_line(memory.content) for memory_id, memory in found.items()}


def _scales(components: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each score component's best value among the packed items: a bar is its share of that best, so
    BM25's raw scores (unbounded) and the [0, 1] ones each fill their own width."""
    best: dict[str, float] = {}
    for item in components.values():
        for name, value in item.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > best.get(name, 0.0):
                best[name] = float(value)
    return best


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
    since, until = _day(params.get("since")), _day(params.get("until"), end=True)
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
        "notice": _notice(params.get("notice")),
        "switches_owner": ADMIN in principal.scopes,
    }
    if mode == "meaning" and chosen["text"]:
        given.pop("text")
        matches = search_by_meaning(engine, viewed, chosen["text"], {**given, "since": since, "until": until})
        return render(
            request,
            "memories.html",
            memories=[m.memory for m in matches],
            scores={m.memory.id: m.score for m in matches},
            next_query=None,
            **context,
        )
    page = list_memories(
        engine,
        viewed,
        ListQuery(
            **given,
            since=since,
            until=until,
            cursor=params.get("cursor") or None,
            limit=25,
            order=kept["order"],
        ),
    )
    next_query = {k: v for k, v in kept.items() if v} | ({"cursor": page.next_cursor} if page.next_cursor else {})
    same = {k: v for k, v in kept.items() if v or k == "status"}  # a sort keeps the filters, from the first page
    sort_links = {field: urlencode({**same, "order": field}) for field in ("occurred_at", "created_at")}
    return render(
        request,
        "memories.html",
        memories=page.memories,
        scores=None,
        sort_links=sort_links,
        next_query=next_query if page.next_cursor else None,
        **context,
    )


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
        notice=_notice(request.query_params.get("notice")),
    )


def _changes(form: FormData, engine: MemoryEngine, principal: Principal, memory_id: str) -> dict[str, Any]:
    """The edit form's fields that differ from the stored memory."""
    memory = memory_history(engine, principal, memory_id).memory
    sent: dict[str, Any] = {
        "content": form.get("content"),
        "path": _text(form, "path"),
        "type": _text(form, "type"),
        "source": _text(form, "source"),
    }
    for name in ("importance", "confidence"):
        try:
            sent[name] = float(_text(form, name))
        except ValueError as error:
            raise ValidationError(f"{name} must be a number from 0 to 1") from error
    sent["expires_at"] = _text(form, "expires_at") or None
    try:
        sent["metadata"] = json.loads(_text(form, "metadata") or "{}")
    except json.JSONDecodeError as error:
        raise ValidationError("metadata must be a JSON object") from error
    current = memory.to_dict()
    return {k: v for k, v in sent.items() if v != current.get(k)}


@router.post("/memories/{memory_id}/edit")
def edit_action(memory_id: str, form: Form, engine: Engine, principal: Caller) -> Response:
    require(principal, WRITE)
    changes = _changes(form, engine, principal, memory_id)
    if changes:
        edit_memory(engine, principal, memory_id, int(_text(form, "expected_version") or 0), changes)
    return RedirectResponse(f"/ui/memories/{memory_id}?notice={'saved' if changes else 'unchanged'}", status_code=303)


@router.post("/memories/{memory_id}/{status}")
def status_action(memory_id: str, status: str, form: Form, engine: Engine, principal: Caller) -> Response:
    """archive, restore or forget (the last needs the confirmation box ticked)."""
    version = int(_text(form, "expected_version") or 0) or None
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
            since=_day(params.get("since")),
            until=_day(params.get("until"), end=True),
            limit=200,
        )
    return render(
        request,
        "audit.html",
        title="Audit log",
        records=records,
        texts=_snippets(engine, [i for r in records for i in r.memory_ids[:5]]),
        filters={
            "action": action,
            "memory_id": memory_id,
            "since": params.get("since", ""),
            "until": params.get("until", ""),
        },
        actions=AUDIT_ACTIONS,
    )


@router.get("/recall", response_class=HTMLResponse)
def recall_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """The pack exactly as an agent gets it: MCP text and structured pack, each item's score components."""
    params = request.query_params
    query = params.get("query", "").strip()
    max_items, max_tokens = params.get("max_items", "8"), params.get("max_tokens", "1500")
    pack, text = None, ""
    if query:
        try:
            budgets = int(max_items), int(max_tokens)
        except ValueError as error:
            raise ValidationError("the budgets must be whole numbers") from error
        found = recall_context(engine, principal, query, max_items=budgets[0], max_tokens=budgets[1])
        text = render_context_text(found, engine.tokens)
        pack = found.to_dict()  # the page shows the pack as the JSON an agent receives
    components = {c["id"]: c for c in pack["retrieval_plan"]["items"]} if pack else {}
    shown = []
    if pack:
        plan = pack["retrieval_plan"]
        shown = [item["id"] for item in pack["items"]] + [d["id"] for d in plan.get("dropped", [])]
        shown += [c[key] for c in plan.get("collapsed", []) for key in ("id", "into")]
    return render(
        request,
        "recall.html",
        texts=_snippets(engine, shown),
        scales=_scales(components),
        title="Recall",
        query=query,
        max_items=max_items,
        max_tokens=max_tokens,
        pack=pack,
        text=text,
        components=components,
        reasons=LEFT_OUT_REASONS,
        dropped=pack["retrieval_plan"].get("dropped", []) if pack else [],
        shortened=[item for item in pack["items"] if item["shortened"]] if pack else [],
        pack_json=json.dumps(pack, ensure_ascii=False, indent=2) if pack else "",
    )


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
    if params.get("run") == "dry":
        request_ = _reflect_request(params, dry_run=True)
        report = reflect(engine, principal, request_, context_of(request).settings.reflect)
        ids = [i for item in report["summaries"] + report["promotions"] for i in item.get("derived_from", [])]
        visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
        members = {m.id: m.content for m in engine.store.get_many(ids).values() if visible.admits(m)}
    groups = {a: [p for p in report["preview"] if p["action"] == a] for a in ACTIONS} if report else {}
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
    )


@router.post("/reflect/apply", response_class=HTMLResponse)
def reflect_apply(request: Request, form: Form, engine: Engine, principal: Caller) -> Response:
    """Apply exactly the reviewed dry run: its actions, its window, its plan digest (else 409), and of its
    proposals the ones left ticked."""
    require(principal, WRITE)
    expected = _text(form, "expected_plan")
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
    )
    return render(request, "reflect_done.html", title="Reflect applied", report=report)


# What a redirect after a change may announce; any other `?notice=` text is never shown, so a link
# cannot put words of its own in the console's banner.
NOTICES = {
    "saved": "Saved",
    "unchanged": "Nothing changed",
    "forgotten": "Forgotten",
    "archived": "Archived",
    "restored": "Restored",
}


def _notice(code: str | None) -> str:
    return NOTICES.get(code or "", "")


@router.get("/keys", response_class=HTMLResponse)
def keys_page(request: Request, principal: Caller) -> Response:
    require(principal, ADMIN)
    keys = context_of(request).keys.list(by=principal)
    return render(request, "keys.html", title="Keys", keys=keys, issued=None)


@router.post("/keys", response_class=HTMLResponse)
def create_key(request: Request, form: Form, principal: Caller) -> Response:
    """Create a key and show it this once; it is stored only as a digest."""
    require(principal, ADMIN)
    keys = context_of(request).keys
    scopes = tuple(s for s in SCOPES if s in form.getlist("scopes"))
    teams = tuple(t.strip() for t in _text(form, "teams").split(",") if t.strip())
    issued = keys.create(
        _text(form, "owner"),
        agent_id=_text(form, "agent"),
        team_ids=teams,
        project_id=_text(form, "project") or None,
        scopes=scopes,
        by=principal,
    )
    return render(request, "keys.html", title="Keys", keys=keys.list(by=principal), issued=issued)


@router.post("/keys/{key_id}/revoke")
def revoke_key(key_id: str, request: Request, form: Form, principal: Caller) -> Response:
    require(principal, ADMIN)
    if not context_of(request).keys.revoke(key_id, by=principal):
        raise NotFoundError(f"no key {key_id[:40]!r} among the keys this key manages")
    return RedirectResponse("/ui/keys", status_code=303)


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """Counts by type and status, index health, request rates and latencies, the newest evaluation report."""
    require(principal, READ)
    visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
    tally = engine.store.tally(visible)
    requests: dict[str, dict[str, float]] = {}
    for metric in context_of(request).metrics.registry.collect():
        for sample in metric.samples:
            route = sample.labels.get("route", "")
            if sample.name == "xmemo_http_requests_total":
                requests.setdefault(route, {"count": 0.0, "seconds": 0.0})["count"] += sample.value
            elif sample.name == "xmemo_http_request_seconds_sum":
                requests.setdefault(route, {"count": 0.0, "seconds": 0.0})["seconds"] += sample.value
    reports_dir = context_of(request).settings.reports_dir()
    report, report_error = None, ""
    reports = find_reports(reports_dir)
    if reports:
        name, directory = next(iter(reports.items()))
        try:
            report = read_report(name, directory)
        except ValueError as error:
            report_error = str(error)
    return render(
        request,
        "status.html",
        title="Status",
        tally=sorted(tally.items()),
        total=sum(tally.values()),
        index_points=engine.index.count(),
        stored=engine.store.count(),
        indexed=engine.store.count_indexed(),
        backend=engine.index.backend,
        requests=sorted(requests.items()),
        report=report,
        report_error=report_error,
        reports_dir=reports_dir,
    )


@router.get("/status/eval-chart.png")
def eval_chart(request: Request, principal: Caller, report: str = "") -> Response:
    """The chart of a report the status page found (by its directory's name); nothing else is served."""
    require(principal, READ)
    directory = find_reports(context_of(request).settings.reports_dir()).get(report)
    if directory is None or not (directory / CHART).is_file():
        raise NotFoundError("no evaluation chart by that name")
    return FileResponse(directory / CHART, media_type="image/png", headers={"Cache-Control": "no-store"})


@router.post("/logout")
def sign_out(request: Request, form: Form) -> Response:
    session = session_of(request)
    sessions = request.scope.get("state", {}).get("console_sessions")
    if session is not None and sessions is not None:
        sessions.close(session.sid)
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie("xmemo_session", path="/ui")
    return response
