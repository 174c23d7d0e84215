"""What every router needs from the running app: the engine, the key store, settings, metrics, the caller."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from fastapi import Request

from retrieval import AuthenticationError, MemoryEngine, Principal

from ..keys import KeyStore
from ..middleware import Metrics
from ..settings import ServiceSettings

__all__ = ["AppContext", "context_of", "engine_of", "principal_of"]


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
