"""The console's door: sign-in and static files without a session; with one, the principal of its key.

Added as the outermost middleware. A console request with a live session is authorised from its
key's row (a revoked key ends its sessions here, at once), then passes the same edge as any API
call (rate limit, metrics, audit id: `EdgeMiddleware` takes the principal from the request state
this gate sets, since the session does not hold the key) and reaches the console pages.
"""

from __future__ import annotations

import hmac
import logging
import secrets
from collections.abc import Awaitable, Callable, MutableMapping
from http.cookies import SimpleCookie
from typing import Any

from anyio import to_thread
from fastapi.responses import RedirectResponse
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles

from retrieval import AuthenticationError, Principal, StoreError

from ..api_keys import KeyStore
from ..docs_pages import VENDOR_DIR
from ..middleware import Metrics, bounded_body
from .rendering import FORM_FIELDS, STATIC_DIR, templates
from .sessions import COOKIE, Session, SessionStore
from .throttle import SignInThrottle

__all__ = ["ConsoleGate"]

log = logging.getLogger("xmemo.console")
Scope = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[MutableMapping[str, Any]]]
Send = Callable[[MutableMapping[str, Any]], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

LOGIN_COOKIE = "xmemo_login"  # the sign-in form's CSRF token, double-submitted (no session yet)
PUBLIC = ("/ui/login", "/ui/static/")


def _cookie(scope: Scope, name: str) -> str | None:
    for key, value in scope.get("headers", []):
        if key == b"cookie":
            jar = SimpleCookie()
            jar.load(value.decode("latin-1"))
            if name in jar:
                return jar[name].value
    return None


def _set_cookie(response: Response, request: Request, name: str, value: str, max_age: int | None = None) -> None:
    response.set_cookie(
        name, value, max_age=max_age, path="/ui", httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


# Every console response: never framed by another site (clickjacking), never sniffed into another type.
FRAMING_HEADERS = (
    (b"x-frame-options", b"DENY"),
    (b"content-security-policy", b"frame-ancestors 'none'; object-src 'none'; base-uri 'none'"),
    (b"x-content-type-options", b"nosniff"),
    (b"referrer-policy", b"same-origin"),
)


class ConsoleGate:
    """ASGI middleware for /ui: public pages to a small app of their own, signed-in ones down the stack."""

    def __init__(self, app: ASGIApp, keys: KeyStore, max_body_bytes: int, metrics: Metrics | None = None) -> None:
        self.app = app
        self.keys = keys
        self.max_body_bytes = max_body_bytes
        self.metrics = metrics
        self.throttle = SignInThrottle()
        self.sessions = SessionStore(keys.engine)
        self.public = self._public_app()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path = scope.get("path", "")
        if scope["type"] != "http" or not (path == "/ui" or path.startswith("/ui/")):
            await self.app(scope, receive, send)
            return
        send = _with_headers(send, FRAMING_HEADERS)
        # The body limit before any form is parsed, signed in or not: the login form is public.
        bounded = await bounded_body(scope, receive, send, self.max_body_bytes)
        if bounded is None:
            return
        receive = bounded
        if path.startswith(PUBLIC):
            await self.public(scope, receive, send)
            return
        try:
            signed_in = await to_thread.run_sync(self._signed_in, _cookie(scope, COOKIE))
        except StoreError as error:
            await self._unavailable(Request(scope), error.message)(scope, receive, send)
            return
        if signed_in is None:
            await self.public(scope, receive, send)
            return
        session, principal = signed_in
        headers = [(k, v) for k, v in scope.get("headers", []) if k != b"authorization"]
        state = dict(scope.get("state") or {})
        state.update(
            console_session=session, console_sessions=self.sessions, console_principal=(session.key_id, principal)
        )
        await self.app({**scope, "headers": headers, "state": state}, receive, send)

    def _signed_in(self, sid: str | None) -> tuple[Session, Principal] | None:
        """The live session of this cookie and its key's principal; a revoked key ends all its sessions."""
        session = self.sessions.get(sid)
        if session is None:
            return None
        try:
            return session, self.keys.principal_of(session.key_id)
        except AuthenticationError:
            self.sessions.close_key(session.key_id)
            return None

    def _refused(self, address: str, why: str) -> None:
        """Log and count a refused sign-in: the address and why, never the key that was tried."""
        log.warning("console sign-in refused from %s: %s", address, why)
        if self.metrics is not None:
            self.metrics.failed_signins.inc()

    def _unavailable(self, request: Request, message: str) -> Response:
        return templates.TemplateResponse(
            request,
            "error.html",
            {
                "title": "Unavailable",
                "message": message,
                "back": ("/ui/", "Try again"),
                "navigation": [],
                "principal": None,
            },
            status_code=503,
            headers={"Cache-Control": "no-store"},
        )

    def _public_app(self) -> Starlette:
        async def login_form(request: Request) -> Response:
            return self._login_page(request)

        async def sign_in(request: Request) -> Response:
            address = request.client.host if request.client else "unknown"
            wait = self.throttle.wait(address)
            if wait:
                self._refused(address, "throttled")
                page = self._login_page(request, f"Too many failed sign-ins; try again in {wait} s.", 429)
                page.headers["Retry-After"] = str(wait)
                return page
            form = await request.form(max_files=0, max_fields=FORM_FIELDS)
            sent, expected = form.get("csrf"), request.cookies.get(LOGIN_COOKIE)
            if not isinstance(sent, str) or not expected or not hmac.compare_digest(sent, expected):
                return self._login_page(request, "The sign-in form expired; please try again.", 403)
            key = str(form.get("api_key") or "").strip()
            try:
                key_id, _ = await to_thread.run_sync(self.keys.resolve, key)
                session = await to_thread.run_sync(self._open, key_id)
            except AuthenticationError:
                self.throttle.failed(address)
                self._refused(address, "wrong or revoked key")
                return self._login_page(request, "That API key is not valid or was revoked.", 401)
            except StoreError as error:
                return self._login_page(request, f"Cannot sign in now: {error.message}.", 503)
            self.throttle.succeeded(address)
            response = RedirectResponse("/ui/", status_code=303)
            _set_cookie(response, request, COOKIE, session.sid)
            response.delete_cookie(LOGIN_COOKIE, path="/ui")
            return response

        async def elsewhere(request: Request) -> Response:
            return RedirectResponse("/ui/login", status_code=303)

        return Starlette(
            routes=[
                Route("/ui/login", login_form, methods=["GET"]),
                Route("/ui/login", sign_in, methods=["POST"]),
                Mount("/ui/static/vendor", StaticFiles(directory=VENDOR_DIR)),
                Mount("/ui/static", StaticFiles(directory=STATIC_DIR)),
                Route("/ui/{rest:path}", elsewhere, methods=["GET", "POST", "HEAD"]),
                Route("/ui", elsewhere, methods=["GET", "POST", "HEAD"]),
            ]
        )

    def _open(self, key_id: str) -> Session:
        self.sessions.sweep()
        return self.sessions.open(key_id)

    def _login_page(self, request: Request, message: str = "", status: int = 200) -> Response:
        token = secrets.token_urlsafe(32)
        response = templates.TemplateResponse(
            request,
            "login.html",
            {"csrf": token, "message": message, "navigation": [], "principal": None},
            status_code=status,
            headers={"Cache-Control": "no-store"},
        )
        _set_cookie(response, request, LOGIN_COOKIE, token, max_age=3600)
        return response


def _with_headers(send: Send, headers: tuple[tuple[bytes, bytes], ...]) -> Send:
    async def sending(message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            message = {**message, "headers": [*message.get("headers", []), *headers]}
        await send(message)

    return sending
