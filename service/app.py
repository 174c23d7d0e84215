"""The FastAPI application, assembled: the routers, MCP at /mcp, the console, the middleware and the
error handlers; the stores open in its lifespan."""

from __future__ import annotations

from fastapi import FastAPI

from retrieval import MemoryEngine
from retrieval.encoding import Embedder

from .api_docs import describe_openapi, name_operations
from .api_keys import KeyStore
from .console import ConsoleGate, console_pages, render_error_page
from .docs_pages import add_offline_docs
from .handlers import install_error_handlers
from .mcp_tools import build_mcp
from .middleware import EdgeMiddleware, Metrics
from .routes import memories, ops, recall, reflect, writes
from .routes.deps import AppContext
from .routes.responses import ERROR_RESPONSES
from .runtime import Runtime
from .settings import ServiceSettings

__all__ = ["create_app"]


def create_app(
    settings: ServiceSettings,
    *,
    embedder: Embedder | None = None,
    engine: MemoryEngine | None = None,
    local_token: str | None = None,
) -> FastAPI:
    """Build the app. The stores open in its lifespan, unless an opened `engine` is handed in
    (as `xmemo serve` does, so that a store that cannot open fails before the port is bound).
    `local_token` is the secret `xmemo serve` leaves in the data dir for the CLI (service/cli/remote.py)."""
    keys = KeyStore.open(settings.retrieval.data_dir, settings.retrieval.database_url)
    metrics = Metrics()
    runtime = Runtime(settings, keys, embedder=embedder, engine=engine)
    mcp = build_mcp(runtime.engine, settings.reflect)
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=settings.host
    )
    app = FastAPI(
        title="xmemo-server",
        version="0.1.0",
        lifespan=runtime.lifespan(mcp),
        responses=ERROR_RESPONSES,
        description="XMemo-compatible memory service: remember, recall_context, search, reflect.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.xmemo = AppContext(
        engine=runtime.engine, keys=keys, settings=settings, metrics=metrics, warmed=runtime.warmed
    )
    app.router.routes.extend(mcp_app.routes)  # POST /mcp, behind the same middleware as every route
    for area in (ops, recall, writes, reflect, memories):
        app.include_router(name_operations(area.router))
    app.include_router(console_pages)
    add_offline_docs(app)
    describe_openapi(app)
    app.add_middleware(
        EdgeMiddleware,
        keys=keys,
        metrics=metrics,
        max_body_bytes=settings.max_body_bytes,
        rate_limit=settings.rate_limit_per_minute,
        local_token=local_token,
    )
    app.add_middleware(
        ConsoleGate, keys=keys, max_body_bytes=settings.max_body_bytes, metrics=metrics
    )  # outermost: the console's session cookie to a bearer key
    install_error_handlers(app, render_error_page)
    return app
