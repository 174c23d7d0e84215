"""The FastAPI application: the REST routes, MCP at /mcp, health, readiness and metrics."""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import json
import logging
import time
from collections.abc import AsyncIterator
from typing import Annotated, Any

from anyio import to_thread
from fastapi import FastAPI, Path, Query, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, PlainTextResponse, Response
from prometheus_client import generate_latest
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.routing import Match

from retrieval import (
    MemoryEngine,
    RememberRequest,
    StoreError,
    XMemoError,
    add_event,
    recall_context,
    remember,
    search_memory,
    update_state,
)
from compactor import ReflectRequest, list_audit, reflect
from compactor.audit import MAX_AUDIT_LIMIT
from retrieval.embedding import Embedder
from retrieval.policy import require
from retrieval.reads import MAX_PROJECT_ID, project_context

from .errors import status_of
from .keys import KeyStore
from .maintenance import run_periodically
from .mcp_tools import build_mcp
from .middleware import EdgeMiddleware, Metrics
from .schemas import (
    ERROR_RESPONSES,
    EventBody,
    Label,
    NON_BLANK_LABEL,
    MemoryTypeName,
    ActionList,
    ProjectContextBody,
    QueryText,
    RecallContextBody,
    RememberBody,
    StateBody,
    Timestamp,
    iso,
)
from .settings import ServiceSettings
from .console import ConsoleGate, console_pages, render_error_page
from .docs_pages import add_offline_docs
from .reads import read_for_query
from .routes.context import AppContext, principal_of
from .routes.memories import router as memories_router
from .routes.models import ReflectPlanBody

__all__ = ["create_app"]

log = logging.getLogger("xmemo.service")
def _error(status: int, code: str, message: str) -> JSONResponse:
    return JSONResponse({"error": {"code": code, "message": message}}, status_code=status)


def _metrics_allowed(token: str | None, request: Request) -> bool:
    """No token configured: /metrics is open (see docs/operations.md); else the bearer must match it."""
    if token is None:
        return True
    sent = request.headers.get("authorization", "")
    return hmac.compare_digest(sent.encode(), f"Bearer {token}".encode())


def _allowed_methods(app: FastAPI, request: Request) -> set[str]:
    allowed: set[str] = set()
    for route in app.router.routes:
        match, _ = route.matches(request.scope)
        if match != Match.NONE:
            allowed |= set(getattr(route, "methods", None) or ())
    return allowed


def create_app(
    settings: ServiceSettings, *, embedder: Embedder | None = None, engine: MemoryEngine | None = None
) -> FastAPI:
    """Build the app. The stores open in its lifespan, unless an opened `engine` is handed in
    (as `xmemo serve` does, so that a store that cannot open fails before the port is bound)."""
    keys = KeyStore.open(settings.retrieval.data_dir, settings.retrieval.database_url)
    metrics = Metrics()
    holder: dict[str, MemoryEngine] = {}

    opened = engine

    def running_engine() -> MemoryEngine:
        if "engine" not in holder:
            raise StoreError("the memory engine is not open")
        return holder["engine"]

    mcp = build_mcp(running_engine, settings.reflect)
    mcp_app = mcp.streamable_http_app(streamable_http_path="/mcp", stateless_http=True, json_response=True,
                                      host=settings.host)

    warmed = asyncio.Event()

    async def warm_up() -> None:
        """Ready only once the model and the index have served one real query (see MemoryEngine.warm)."""
        started = time.perf_counter()
        try:
            await to_thread.run_sync(running_engine().warm)
        except Exception:  # /readyz stays 503; say why, which a task's unretrieved exception never did
            log.exception(json.dumps({"event": "warm_up_failed"}))
            raise
        warmed.set()
        log.info(json.dumps({"event": "ready", "warm_ms": round((time.perf_counter() - started) * 1000, 1)}))

    @contextlib.asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if opened is not None:
            holder["engine"] = opened
        else:
            holder["engine"] = await to_thread.run_sync(lambda: MemoryEngine(settings.retrieval, embedder=embedder))
        tasks = [asyncio.create_task(warm_up())]
        if settings.reflect_interval_seconds > 0:
            tasks.append(asyncio.create_task(run_periodically(running_engine, settings)))
        log.info(json.dumps({"event": "listening", "url": f"http://{settings.host}:{settings.port}"}))
        try:
            async with mcp.session_manager.run():
                yield
        finally:
            for task in tasks:
                task.cancel()
                with contextlib.suppress(asyncio.CancelledError):
                    await task
            await to_thread.run_sync(holder.pop("engine").close)
            keys.close()

    app = FastAPI(title="xmemo-server", version="0.1.0", lifespan=lifespan, responses=ERROR_RESPONSES,
                  description="XMemo-compatible memory service: remember, recall_context, search, reflect.",
                  docs_url=None, redoc_url=None)
    app.state.xmemo = AppContext(engine=running_engine, keys=keys, settings=settings, metrics=metrics)
    app.router.routes.extend(mcp_app.routes)  # POST /mcp, behind the same middleware as every route
    app.include_router(memories_router)
    app.include_router(console_pages)
    add_offline_docs(app)
    app.add_middleware(EdgeMiddleware, keys=keys, metrics=metrics, max_body_bytes=settings.max_body_bytes,
                       rate_limit=settings.rate_limit_per_minute)
    app.add_middleware(ConsoleGate, keys=keys)  # outermost: the console's session cookie to a bearer key

    @app.exception_handler(XMemoError)
    async def _domain_error(request: Request, error: XMemoError) -> Response:
        if request.url.path.startswith("/ui"):
            return render_error_page(request, status_of(error), error.message)
        return _error(status_of(error), error.code, error.message)

    @app.exception_handler(RequestValidationError)
    async def _invalid(_: Request, error: RequestValidationError) -> JSONResponse:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e.get('loc', ()) if p != 'body')}: {e.get('msg', 'invalid')}"
            for e in error.errors()
        )
        return _error(422, "validation_error", problems or "invalid request")

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, error: StarletteHTTPException) -> JSONResponse:
        response = _error(error.status_code, "http_error", str(error.detail))
        response.headers.update(error.headers or {})
        if error.status_code == 405:  # Starlette names only the first matching route's methods
            response.headers["Allow"] = ", ".join(sorted(_allowed_methods(app, request)))
        return response

    @app.exception_handler(Exception)
    async def _unexpected(_: Request, error: Exception) -> JSONResponse:
        log.exception("unexpected error")
        return _error(500, "internal_error", "internal error; see the server log with the audit id")

    @app.get("/healthz", tags=["ops"])
    def healthz() -> dict[str, str]:
        return {"status": "ok"}

    @app.get("/readyz", tags=["ops"])
    def readyz() -> JSONResponse:
        if not warmed.is_set():
            return _error(503, "not_ready", "warming up the model and the index")
        try:
            engine = running_engine()
            points = engine.index.count()
            keys.count()
        except XMemoError as error:
            return _error(503, "not_ready", error.message)
        if engine.follower is not None and not engine.follower.healthy():
            return _error(503, "not_ready", "behind the change sequence: the database has not answered of late")
        return JSONResponse({"status": "ready", "index_points": points})

    @app.get("/metrics", tags=["ops"], response_class=PlainTextResponse)
    def metrics_text(request: Request) -> Response:
        if not _metrics_allowed(settings.metrics_token, request):
            return _error(401, "unauthorized", "/metrics needs the bearer token set in XMEMO_METRICS_TOKEN")
        try:
            metrics.index_size.set(running_engine().index.count())
            metrics.memories.set(running_engine().store.count())
        except XMemoError:
            pass  # still serve the request series when a store is down
        return PlainTextResponse(generate_latest(metrics.registry).decode(), media_type="text/plain; version=0.0.4")

    @app.post("/v1/recall/context", tags=["recall"])
    async def recall_context_route(body: RecallContextBody, request: Request) -> dict[str, Any]:
        engine, principal = running_engine(), principal_of(request)
        filters: dict[str, Any] = {"scope": body.scope, "team_id": body.team_id, "bucket": body.bucket,
                                   "path_filter": body.path_filter, "memory_type": body.memory_type}
        return await read_for_query(engine, principal, body.query, lambda vector: recall_context(
            engine, principal, body.query, max_items=body.max_items, max_tokens=body.max_tokens,
            query_vector=vector, **filters), items=body.max_items, **filters)

    @app.get("/v1/memories/search", tags=["recall"])
    async def search_route(
        request: Request,
        query: QueryText,
        limit: int = Query(default=10, ge=1, le=100),
        scope: Label | None = None, team_id: Label | None = None, bucket: Label | None = None,
        path_filter: Label | None = None, memory_type: MemoryTypeName | None = None,
        min_score: float | None = Query(default=None, ge=0.0, le=1.0),
    ) -> dict[str, Any]:
        engine, principal = running_engine(), principal_of(request)
        filters: dict[str, Any] = {"scope": scope, "team_id": team_id, "bucket": bucket,
                                   "path_filter": path_filter, "memory_type": memory_type}
        found = await read_for_query(engine, principal, query, lambda vector: search_memory(
            engine, principal, query, limit=limit, min_score=min_score, query_vector=vector, **filters), **filters)
        return {"results": found["results"], "query": found["query"], "min_score": found["min_score"]}

    @app.post("/v1/projects/{project_id}/context", tags=["recall"])
    def project_context_route(
        project_id: Annotated[str, Path(min_length=1, max_length=MAX_PROJECT_ID, pattern=NON_BLANK_LABEL)],
        body: ProjectContextBody, request: Request,
    ) -> dict[str, Any]:
        return project_context(running_engine(), principal_of(request), project_id, team_id=body.team_id,
                               max_items=body.max_items, max_tokens=body.max_tokens, durable_query=body.durable_query)

    @app.post("/api/v1/remember", tags=["write"], status_code=201,
              responses={200: {"description": "unchanged (same semantic_key and content) or merged (dedupe)"}})
    def remember_route(body: RememberBody, request: Request) -> JSONResponse:
        principal = principal_of(request)
        require(principal, "memory:write")
        fields = body.model_dump()
        fields["expires_at"] = iso(body.expires_at)
        result = remember(running_engine(), principal, RememberRequest(**fields))
        return JSONResponse(result.to_dict(), status_code=201 if result.created else 200)

    @app.post("/api/v1/update_state", tags=["write"])
    def update_state_route(body: StateBody, request: Request) -> dict[str, Any]:
        principal = principal_of(request)
        require(principal, "memory:write")
        result = update_state(running_engine(), principal, **body.model_dump())
        return result.to_dict()

    @app.post("/api/v1/timeline/events", tags=["write"], status_code=201)
    def event_route(body: EventBody, request: Request) -> dict[str, Any]:
        principal = principal_of(request)
        require(principal, "memory:write")
        fields = body.model_dump()
        fields["occurred_at"] = iso(body.occurred_at)
        return add_event(running_engine(), principal, **fields).to_dict()

    @app.post("/api/v1/reflect", tags=["reflect"])
    def reflect_route(body: ReflectPlanBody, request: Request) -> dict[str, Any]:
        fields = body.model_dump()
        fields["since"], fields["until"] = iso(body.since), iso(body.until)
        expected_plan = fields.pop("expected_plan")
        return reflect(running_engine(), principal_of(request), ReflectRequest(**fields), settings.reflect,
                       expected_plan=expected_plan)

    @app.get("/api/v1/audit", tags=["reflect"])
    def audit_route(
        request: Request,
        since: Timestamp | None = None,
        until: Timestamp | None = None,
        action: ActionList | None = None,
        limit: int = Query(default=100, ge=1, le=MAX_AUDIT_LIMIT),
    ) -> dict[str, Any]:
        records = list_audit(running_engine(), principal_of(request), since=iso(since), until=iso(until),
                             action=action or None, limit=limit)
        return {"records": records}

    return app
