"""A light, typed Python client of an xmemo server: `XmemoClient(base_url, api_key)` and its async twin.
It needs only httpx: importing it loads neither the model, nor the index engine, nor the retrieval
layer (tests/service/client/test_client.py checks that in a fresh interpreter). `service.client.langgraph`
holds a LangGraph store over it."""

from .clients import AsyncXmemoClient, XmemoClient
from .errors import (
    AuthenticationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    RateLimitedError,
    ServerError,
    UnavailableError,
    ValidationError,
    XmemoClientError,
)
from .results import (
    Budget,
    ContextPack,
    MemoryPage,
    MemoryRecord,
    PackItem,
    ReflectReport,
    Remembered,
    SearchHit,
    SearchResults,
)

__all__ = [
    "AsyncXmemoClient",
    "AuthenticationError",
    "Budget",
    "ConflictError",
    "ContextPack",
    "ForbiddenError",
    "MemoryPage",
    "MemoryRecord",
    "NotFoundError",
    "PackItem",
    "RateLimitedError",
    "ReflectReport",
    "Remembered",
    "SearchHit",
    "SearchResults",
    "ServerError",
    "UnavailableError",
    "ValidationError",
    "XmemoClient",
    "XmemoClientError",
]
