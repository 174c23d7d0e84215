"""The console pages, one module a page: memories, the audit log, recall, reflect, keys and status, all
under /ui and out of the OpenAPI document."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import RedirectResponse, Response

from ..rendering import session_of
from . import audit, keys, memories, recall, reflect, status
from .forms import Form

__all__ = ["router"]

router = APIRouter(prefix="/ui", include_in_schema=False)
for page in (memories, audit, recall, reflect, keys, status):
    router.include_router(page.router)


@router.post("/logout")
def sign_out(request: Request, form: Form) -> Response:
    session = session_of(request)
    sessions = request.scope.get("state", {}).get("console_sessions")
    if session is not None and sessions is not None:
        sessions.close(session.sid)
    response = RedirectResponse("/ui/login", status_code=303)
    response.delete_cookie("xmemo_session", path="/ui")
    return response
