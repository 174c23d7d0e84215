"""What every router needs from the running app: the engine, the key store, settings, metrics, the caller."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
from anyio import to_thread
from fastapi import Request

from retrieval import AuthenticationError, MemoryEngine, Principal, query_vector_later

from ..keys import KeyStore
from ..middleware import Metrics
from ..settings import ServiceSettings

__all__ = ["AppContext", "context_of", "engine_of", "principal_of", "read_for_query"]

Result = TypeVar("Result")


@dataclass(frozen=True, slots=True)
class AppContext:
    """Kept on `app.state.xmemo` by create_app; `engine` is a getter since the stores open in the lifespan."""

    engine: Callable[[], MemoryEngine]
    keys: KeyStore
    settings: ServiceSettings
    metrics: Metrics


def context_of(request: Request) -> AppContext:
    context: AppContext = request.app.state.xmemo
    return context


def engine_of(request: Request) -> MemoryEngine:
    return context_of(request).engine()


def principal_of(request: Request) -> Principal:
    """The principal the edge middleware resolved from the bearer key (never from the request)."""
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise AuthenticationError("missing bearer API key")
    return principal


async def read_for_query(engine: MemoryEngine, principal: Principal, query: str,
                         read: Callable[[np.ndarray], Result]) -> Result:
    """Run a read that needs the vector of `query`.

    The vector is awaited on the event loop: the model's thread batches it with every other
    request's texts, and no thread is held waiting meanwhile. The read then runs here, on the event
    loop, when it touches only this process's files (MemoryEngine.reads_in_process), else on a
    worker thread. Under 16 clients the loop did the same reads with a third less CPU per request
    than 16 threads contending for the GIL did (docs/evaluation.md#load).
    """
    vector = await asyncio.wrap_future(query_vector_later(engine, principal, query))
    if engine.reads_in_process:
        return read(vector)
    return await to_thread.run_sync(read, vector)
