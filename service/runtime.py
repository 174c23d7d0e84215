"""What the running service holds between start and stop: the engine (opened in the lifespan unless
one is handed in), the warm-up that /readyz waits for, the background reflect pass and MCP's session
manager; `lifespan` starts and stops them in order."""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
import time
from collections.abc import AsyncIterator, Callable

from anyio import to_thread
from fastapi import FastAPI
from mcp.server.mcpserver import MCPServer

from retrieval import MemoryEngine, StoreError
from retrieval.encoding import Embedder

from .api_keys import KeyStore
from .maintenance import run_periodically
from .settings import ServiceSettings

__all__ = ["Runtime"]

log = logging.getLogger("xmemo.service")


class Runtime:
    """The engine of one service and the tasks that run beside it."""

    def __init__(
        self,
        settings: ServiceSettings,
        keys: KeyStore,
        *,
        embedder: Embedder | None = None,
        engine: MemoryEngine | None = None,
    ) -> None:
        self.settings = settings
        self.keys = keys
        self._embedder = embedder
        self._given = engine
        self._engine: MemoryEngine | None = None
        self.warmed = asyncio.Event()

    def engine(self) -> MemoryEngine:
        """The open engine; StoreError before the lifespan opened it or after it closed it."""
        if self._engine is None:
            raise StoreError("the memory engine is not open")
        return self._engine

    async def _warm_up(self) -> None:
        """Ready only once the model and the index have served one real query (see MemoryEngine.warm)."""
        started = time.perf_counter()
        try:
            await to_thread.run_sync(self.engine().warm)
        except Exception:  # /readyz stays 503; say why, which a task's unretrieved exception never did
            log.exception(json.dumps({"event": "warm_up_failed"}))
            raise
        self.warmed.set()
        log.info(json.dumps({"event": "ready", "warm_ms": round((time.perf_counter() - started) * 1000, 1)}))

    def lifespan(self, mcp: MCPServer) -> Callable[[FastAPI], contextlib.AbstractAsyncContextManager[None]]:
        @contextlib.asynccontextmanager
        async def run(_: FastAPI) -> AsyncIterator[None]:
            if self._given is not None:
                self._engine = self._given
            else:
                settings = self.settings.retrieval
                self._engine = await to_thread.run_sync(lambda: MemoryEngine(settings, embedder=self._embedder))
            if self.settings.index_upkeep:
                self._engine.start_upkeep()
            tasks = [asyncio.create_task(self._warm_up())]
            if self.settings.reflect_interval_seconds > 0:
                tasks.append(asyncio.create_task(run_periodically(self.engine, self.settings)))
            log.info(json.dumps({"event": "listening", "url": f"http://{self.settings.host}:{self.settings.port}"}))
            try:
                async with mcp.session_manager.run():
                    yield
            finally:
                for task in tasks:
                    task.cancel()
                    with contextlib.suppress(asyncio.CancelledError):
                        await task
                engine, self._engine = self._engine, None
                await to_thread.run_sync(engine.close)
                self.keys.close()

        return run
