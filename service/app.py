"""The FastAPI application, assembled: the routers, MCP at /mcp, the console, the middleware and the
error handlers; the stores open in its lifespan."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator

from anyio import to_thread
from fastapi import FastAPI

from retrieval import MemoryEngine, StoreError
from retrieval.encoding import Embedder

from .console import ConsoleGate, console_pages
from .docs_pages import add_offline_docs
from .handlers import install_error_handlers
from .keys import KeyStore
from .maintenance import run_periodically
from .mcp_tools import build_mcp
from .middleware import EdgeMiddleware, Metrics
from .routes import memories, ops, recall, reflect, writes
from .routes.deps import AppContext
from .schemas import ERROR_RESPONSES
from .settings import ServiceSettings

__all__ = ["create_app"]

log = logging.getLogger("xmemo.service")


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
    mcp_app = mcp.streamable_http_app(
        streamable_http_path="/mcp", stateless_http=True, json_response=True, host=settings.host
    )

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

    app = FastAPI(
        title="xmemo-server",
        version="0.1.0",
        lifespan=lifespan,
        responses=ERROR_RESPONSES,
        description="XMemo-compatible memory service: remember, recall_context, search, reflect.",
        docs_url=None,
        redoc_url=None,
    )
    app.state.xmemo = AppContext(engine=running_engine, keys=keys, settings=settings, metrics=metrics, warmed=warmed)
    app.router.routes.extend(mcp_app.routes)  # POST /mcp, behind the same middleware as every route
    for area in (ops, recall, writes, reflect, memories):
        app.include_router(area.router)
    app.include_router(console_pages)
    add_offline_docs(app)
    app.add_middleware(
        EdgeMiddleware,
        keys=keys,
        metrics=metrics,
        max_body_bytes=settings.max_body_bytes,
        rate_limit=settings.rate_limit_per_minute,
    )
    app.add_middleware(ConsoleGate, keys=keys)  # outermost: the console's session cookie to a bearer key
    install_error_handlers(app)
    return app
