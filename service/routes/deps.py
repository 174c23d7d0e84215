"""What every router needs from the running app, defined once: the engine, the key store, settings,
metrics, readiness, and the caller (as FastAPI dependencies: `Engine`, `Caller`).

The dependencies are `async def`: they only read what the app already holds, and FastAPI runs a plain
`def` dependency on a worker thread, one hand-off per dependency per request (3 % of a loaded
server's GIL went to those hand-offs)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Annotated

from fastapi import Depends, Request

from retrieval import AuthenticationError, MemoryEngine, Principal

from ..api_keys import KeyStore
from ..middleware import Metrics
from ..settings import ServiceSettings

__all__ = ["AppContext", "Caller", "Engine", "SettingsOf", "context_of", "engine_of", "principal_of", "settings_of"]


@dataclass(frozen=True, slots=True)
class AppContext:
    """Kept on `app.state.xmemo` by create_app; `engine` is a getter since the stores open in the lifespan.
    `warmed` is set once the model and the index have served one real query (MemoryEngine.warm)."""

    engine: Callable[[], MemoryEngine]
    keys: KeyStore
    settings: ServiceSettings
    metrics: Metrics
    warmed: asyncio.Event = field(default_factory=asyncio.Event)


def context_of(request: Request) -> AppContext:
    context: AppContext = request.app.state.xmemo
    return context


async def engine_of(request: Request) -> MemoryEngine:
    return context_of(request).engine()


async def principal_of(request: Request) -> Principal:
    """The principal the edge middleware resolved from the bearer key (never from the request)."""
    principal = getattr(request.state, "principal", None)
    if not isinstance(principal, Principal):
        raise AuthenticationError("missing bearer API key")
    return principal


async def settings_of(request: Request) -> ServiceSettings:
    return context_of(request).settings


Engine = Annotated[MemoryEngine, Depends(engine_of)]
SettingsOf = Annotated[ServiceSettings, Depends(settings_of)]
Caller = Annotated[Principal, Depends(principal_of)]
