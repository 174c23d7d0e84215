"""Templates of the console, the page context every page gets, and the CSRF check of its forms."""

from __future__ import annotations

import hmac
from pathlib import Path
from typing import Any

from fastapi import Request
from fastapi.responses import HTMLResponse
from fastapi.templating import Jinja2Templates
from starlette.datastructures import FormData

from retrieval import PermissionDeniedError, Principal
from retrieval.domain import ADMIN, READ

from .sessions import Session

__all__ = [
    "FORM_FIELDS",
    "STATIC_DIR",
    "checked_form",
    "first_line",
    "render",
    "render_error_page",
    "session_of",
    "templates",
]

HERE = Path(__file__).parent
# A console form has a few fields, or two per proposal of a reflect plan (at most 5,000); no form takes a file.
FORM_FIELDS = 12_000
STATIC_DIR = HERE / "static"
templates = Jinja2Templates(directory=str(HERE / "templates"))
# A memory beside its id is shown by its first line, at most this long.
SNIPPET_CHARS = 80


def first_line(content: str) -> str:
    """The first line of a memory's text, cut to SNIPPET_CHARS (an ellipsis when cut)."""
    lines = content.strip().splitlines()
    line = lines[0] if lines else ""
    return line if len(line) <= SNIPPET_CHARS else line[: SNIPPET_CHARS - 1] + "…"


templates.env.filters["first_line"] = first_line

# The pages of the navigation, each with the scope that makes it worth offering.
NAVIGATION = (
    ("/ui/", "Memories", READ),
    ("/ui/audit", "Audit log", READ),
    ("/ui/recall", "Recall", READ),
    ("/ui/reflect", "Reflect", READ),
    ("/ui/keys", "Keys", ADMIN),
    ("/ui/status", "Status", READ),
)


def session_of(request: Request) -> Session | None:
    session = request.scope.get("state", {}).get("console_session")
    return session if isinstance(session, Session) else None


def render(request: Request, template: str, status: int = 200, **context: Any) -> HTMLResponse:
    """A page with the signed-in principal, its navigation and the CSRF token its forms carry."""
    session = session_of(request)
    principal = getattr(request.state, "principal", None)
    scopes = principal.scopes if isinstance(principal, Principal) else frozenset()
    page = {
        "principal": principal if isinstance(principal, Principal) else None,
        "can": lambda scope: scope in scopes,
        "csrf": session.csrf if session is not None else "",
        "navigation": [(url, label) for url, label, scope in NAVIGATION if scope in scopes],
        "here": request.url.path,
        **context,
    }
    return templates.TemplateResponse(
        request, template, page, status_code=status, headers={"Cache-Control": "no-store"}
    )


# Where an error page leads back to: the page the failed request came from, else the memories.
BACK_LINKS = (
    ("/ui/reflect", "/ui/reflect", "Back to reflect"),
    ("/ui/recall", "/ui/recall", "Back to recall"),
    ("/ui/keys", "/ui/keys", "Back to keys"),
    ("/ui/audit", "/ui/audit", "Back to the audit log"),
)


def render_error_page(request: Request, status: int, message: str) -> HTMLResponse:
    titles = {
        401: "Signed out",
        403: "Not allowed",
        404: "Not found",
        409: "Changed meanwhile",
        422: "Not valid",
        503: "Unavailable",
    }
    path = request.url.path
    back = next(
        ((url, label) for prefix, url, label in BACK_LINKS if path.startswith(prefix)), ("/ui/", "Back to memories")
    )
    return render(
        request, "error.html", status, title=titles.get(status, "Error"), message=message, code=status, back=back
    )


async def checked_form(request: Request) -> FormData:
    """The posted form, if it carries this session's CSRF token (else 403: nothing changes)."""
    form = await request.form(max_files=0, max_fields=FORM_FIELDS)
    session = session_of(request)
    sent = form.get("csrf")
    if session is None or not isinstance(sent, str) or not hmac.compare_digest(sent, session.csrf):
        raise PermissionDeniedError("the form's CSRF token is missing or wrong; reload the page and try again")
    return form
