"""A light, typed Python client of an xmemo server: `XmemoClient(base_url, api_key)` and its async twin.
It is its own distribution (`pip install ./clients/python`, importable as `xmemo_client`) and needs only
httpx: installing or importing it brings neither the model, nor the index engine, nor the server
(tests/service/client/test_client.py installs it alone into a fresh venv and checks `sys.modules`).
`xmemo_client.langgraph` holds a LangGraph store over it (the `langgraph` extra)."""

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
    PackMember,
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
    "PackMember",
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
