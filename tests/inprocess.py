"""The service in-process: Starlette's TestClient (its lifespan run) on real stores, with the fake embedder."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from fastapi.testclient import TestClient

from retrieval import RetrievalSettings
from service.app import create_app
from service.keys import KeyStore
from service.settings import ServiceSettings

from .conftest import FakeEmbedder


class InProcess:
    """A TestClient on the app of one data dir, and its key store for issuing keys."""

    def __init__(self, client: TestClient, keys: KeyStore) -> None:
        self.client = client
        self.keys = keys

    def key(self, owner: str, **kwargs: Any) -> dict[str, str]:
        """Authorization headers for a new key of `owner`."""
        return {"Authorization": f"Bearer {self.keys.create(owner, **kwargs).key}"}

    def mcp(self, headers: dict[str, str], tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """One MCP tools/call over the stateless JSON transport: (is_error, text)."""
        response = self.client.post(
            "/mcp", headers={**headers, "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        )
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        return bool(result.get("isError")), result["content"][0]["text"]


@contextmanager
def running_app(data_dir: Path) -> Iterator[InProcess]:
    settings = ServiceSettings(retrieval=RetrievalSettings(data_dir=data_dir))
    keys = KeyStore.open(data_dir)
    try:
        with TestClient(create_app(settings, embedder=FakeEmbedder()), base_url="http://127.0.0.1:8420") as client:
            yield InProcess(client, keys)
    finally:
        keys.close()
