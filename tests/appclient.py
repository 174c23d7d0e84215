"""An in-process app on real stores for HTTP tests: Starlette's TestClient as a context manager."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from retrieval import MemoryEngine
from retrieval.embedding import Embedder
from service.app import create_app
from service.keys import KeyStore
from service.settings import ServiceSettings

from .conftest import FakeEmbedder, settings_for

WRITER = ("memory:read", "memory:write")


@contextmanager
def app_client(data_dir: Path, backend: str = "edge", embedder: Embedder | None = None,
               **service: Any) -> Iterator[tuple[TestClient, MemoryEngine, str]]:
    """(client, engine, a read-write key for owner alice) on a fresh data dir; waits until ready."""
    retrieval = settings_for(data_dir, backend).model_copy(update=service.pop("retrieval", {}))
    settings = ServiceSettings(retrieval=retrieval, **service)
    engine = MemoryEngine(settings.retrieval, embedder=embedder or FakeEmbedder())
    keys = KeyStore.open(data_dir)
    key = keys.create("alice", agent_id="agent-a", scopes=WRITER).key
    keys.close()
    with TestClient(create_app(settings, engine=engine)) as client:
        for _ in range(1200):  # warm-up runs in the background; a bounded wait, not a timing assertion
            if client.get("/readyz").status_code == 200:
                break
            time.sleep(0.05)
        yield client, engine, key
