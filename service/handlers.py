"""The service's answers to errors: every domain error as the contract's JSON body and status (the
status lives on the error class, retrieval/domain/errors.py), request validation as 422, HTTP errors
as JSON, and anything unexpected as a logged 500 that never shows its details."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from retrieval import XMemoError

from .routes.bodies import pattern_words

__all__ = ["error_response", "install_error_handlers"]

log = logging.getLogger("xmemo.service")


def error_response(status: int, code: str, message: str) -> JSONResponse:
    """`{"error": {"code", "message"}}` with `status` (the XMemo contract)."""
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _allowed_methods(app: FastAPI, request: Request) -> set[str]:
    allowed: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            allowed |= set(getattr(route, "methods", None) or ())
    return allowed


def install_error_handlers(app: FastAPI, page_error: Callable[[Request, int, str], Response]) -> None:
    """Every error as the contract answers it; a domain error of a console page (under /ui) as the page
    `page_error` renders (the console's, handed in by create_app: this module is below the console)."""

    @app.exception_handler(XMemoError)
    async def _domain_error(request: Request, error: XMemoError) -> Response:
        if request.url.path.startswith("/ui"):
            return page_error(request, error.status, error.message)
        return error_response(error.status, error.code, error.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(_in_words(e) for e in error.errors())
        return error_response(422, "validation_error", problems or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        response = error_response(error.status_code, "http_error", str(error.detail))
        response.headers.update(error.headers or {})
        if error.status_code == 405:  # Starlette names only the first matching route's methods
            response.headers["Allow"] = ", ".join(sorted(_allowed_methods(app, request)))
        return response

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return error_response(500, "internal_error", "internal error; see the server log with the audit id")


def _in_words(problem: dict[str, Any]) -> str:
    """One validation problem as a person reads it: the field, then what is wrong, never a regex."""
    where = ".".join(str(p) for p in problem.get("loc", ()) if p != "body")
    kind, context = problem.get("type", ""), problem.get("ctx") or {}
    if not where and kind in ("model_attributes_type", "dict_type", "json_invalid", "missing"):
        return "the body must be a JSON object, sent with Content-Type: application/json"
    if kind == "string_pattern_mismatch":
        return f"{where} {pattern_words(str(context.get('pattern', '')), problem.get('input'))}"
    return f"{where}: {problem.get('msg', 'invalid')}"
