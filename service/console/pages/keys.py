"""The keys page: the API keys this key manages, a new one shown once, revocation."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response

from retrieval import NotFoundError
from retrieval.domain import ADMIN, SCOPES, require

from ...routes.deps import Caller, context_of
from ..rendering import render
from .forms import Form, text_of

__all__ = ["router"]

router = APIRouter()


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
    teams = tuple(t.strip() for t in text_of(form, "teams").split(",") if t.strip())
    issued = keys.create(
        text_of(form, "owner"),
        agent_id=text_of(form, "agent"),
        team_ids=teams,
        project_id=text_of(form, "project") or None,
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
