"""Operations routes: liveness, readiness (the stores reachable, the model warm), Prometheus metrics and the
site's icon."""

from __future__ import annotations

import hmac

from fastapi import APIRouter, Request
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import generate_latest

from retrieval import XMemoError

from ..handlers import error_response
from .deps import context_of
from .responses import HealthOut, ReadyOut

__all__ = ["router"]

router = APIRouter(tags=["ops"])


def _metrics_allowed(token: str | None, request: Request) -> bool:
    """No token configured: /metrics is open (see docs/operations.md); else the bearer must match it."""
    if token is None:
        return True
    sent = request.headers.get("authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


@router.get("/healthz", response_model=HealthOut, operation_id="healthz", summary="Liveness: the process answers")
def healthz() -> HealthOut:
    return HealthOut(status="ok")


@router.get(
    "/readyz",
    response_model=ReadyOut,
    operation_id="readyz",
    summary="Readiness: the stores answer and the model and index are warm",
    responses={503: {"description": "warming up, a store is down, or a replica is behind"}},
)
def readyz(request: Request) -> Response:
    context = context_of(request)
    if not context.warmed.is_set():
        return error_response(503, "not_ready", "warming up the model and the index")
    try:
        engine = context.engine()
        points = engine.index.count()
        context.keys.count()
    except XMemoError as error:
        return error_response(503, "not_ready", error.message)
    if engine.follower is not None and not engine.follower.healthy():
        return error_response(503, "not_ready", "behind the change sequence: the database has not answered of late")
    return JSONResponse({"status": "ready", "index_points": points})


@router.get(
    "/metrics",
    response_class=PlainTextResponse,
    operation_id="metrics",
    summary="Prometheus metrics (a bearer token when XMEMO_METRICS_TOKEN is set)",
)
def metrics_text(request: Request) -> Response:
    context = context_of(request)
    if not _metrics_allowed(context.settings.metrics_token, request):
        return error_response(401, "unauthorized", "/metrics needs the bearer token set in XMEMO_METRICS_TOKEN")
    try:
        context.metrics.index_size.set(context.engine().index.count())
        context.metrics.memories.set(context.engine().store.count())
    except XMemoError:
        pass  # still serve the request series when a store is down
    return PlainTextResponse(generate_latest(context.metrics.registry).decode(), media_type="text/plain; version=0.0.4")


# The icon a browser asks for on every console page (and a 401 there made an error on each): a small
# inline SVG, public like /healthz (service/middleware.py PUBLIC_PATHS).
FAVICON_SVG = (
    '<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 16 16">'
    '<rect width="16" height="16" rx="3" fill="#1f4e79"/>'
    '<path d="M4 4l8 8M12 4l-8 8" stroke="#fff" stroke-width="2" stroke-linecap="round"/></svg>'
)


@router.get("/favicon.ico", include_in_schema=False)
def favicon() -> Response:
    return Response(FAVICON_SVG, media_type="image/svg+xml", headers={"cache-control": "public, max-age=86400"})
