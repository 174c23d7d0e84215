"""What tests share, in one module: a fake embedder, a fixed clock, settings for a data dir, a fresh
PostgreSQL database, the in-process app, a real server process, an MCP client, and small helpers.

PostgreSQL is the one `.ci/services` starts (127.0.0.1:5432, trust auth). Without it a test that needs
it fails under CI (`CI` set) and is skipped with the reason elsewhere.
"""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from contextlib import contextmanager
from datetime import datetime
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text

from eval.serving import free_port, wait_ready
from retrieval import (
    ContextPack,
    LightRecallRequest,
    MemoryEngine,
    Principal,
    RecallRequest,
    RetrievalSettings,
    SearchRequest,
    prepare_read,
    recall,
    recall_context,
    search_memory,
)
from retrieval.encoding import Embedder, completed
from retrieval.usecases import RecallResults, SearchResults
from service.api_keys import KeyStore
from service.app import create_app
from service.settings import ServiceSettings

ROOT = Path(__file__).resolve().parents[1]  # the repository
TEST_DATA = Path(__file__).resolve().parent / "data"  # the tests' own small fixtures
ARTIFACTS = Path(__file__).resolve().parent / "artifacts"  # what tests leave to look at (screenshots)
SHARED_DATA = ROOT.parent / "shared" / "data"
BACKENDS = ["edge", "server"]
WRITER = ("memory:read", "memory:write")
CSRF = re.compile(r'name="csrf" value="([^"]+)"')


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder: same words, same direction. For fast unit tests."""

    name = "fake:hash-64"
    dimension = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, words in enumerate(texts):
            for word in words.lower().split():
                digest = hashlib.sha256(word.strip(".,;:!?").encode()).digest()
                vectors[row, digest[0] % self.dimension] += 1.0 if digest[1] % 2 else -1.0
            vectors[row, 0] += 0.01  # never the zero vector
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return completed(self.embed_query(text))


class FixedClock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


def settings_for(data_dir: Path, backend: str, database_url: str | None = None) -> RetrievalSettings:
    url = None if backend == "edge" else f"path:{data_dir / 'qdrant-local'}"
    return RetrievalSettings(data_dir=data_dir, qdrant_url=url, database_url=database_url)


# -- PostgreSQL ---------------------------------------------------------------------------------------

SERVER = "postgresql://postgres@127.0.0.1:5432"
ADMIN_URL = f"{SERVER}/test"


def _admin():  # type: ignore[no-untyped-def]
    return create_engine(ADMIN_URL.replace("postgresql://", "postgresql+psycopg://"), isolation_level="AUTOCOMMIT")


def require_postgres() -> None:
    """Skip (fail under CI) when the server is not reachable."""
    try:
        engine = _admin()
        with engine.connect() as connection:
            connection.execute(text("select 1"))
        engine.dispose()
    except Exception as error:  # no driver or no server: skipped here, CI starts both (.ci/run)
        if os.environ.get("CI"):
            raise
        pytest.skip(f"PostgreSQL is not reachable at {ADMIN_URL}: {error}")


@contextmanager
def fresh_database() -> Iterator[str]:
    """A new, empty database; yields its `postgresql://` URL, as a user writes it, and drops it after."""
    require_postgres()
    name = f"xmemo_{uuid.uuid4().hex[:12]}"
    engine = _admin()
    with engine.connect() as connection:
        connection.execute(text(f"CREATE DATABASE {name}"))
    try:
        yield f"{SERVER}/{name}"
    finally:
        with engine.connect() as connection:
            connection.execute(text(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)"))
        engine.dispose()


# -- the app in this process ----------------------------------------------------------------------------


class InProcess:
    """A TestClient on the app of one data dir (its lifespan run, warmed), its engine and its key store."""

    def __init__(self, client: TestClient, engine: MemoryEngine, keys: KeyStore) -> None:
        self.client = client
        self.engine = engine
        self.keys = keys

    def key(self, owner: str, **kwargs: Any) -> str:
        """A new key of `owner` (read and write unless `scopes` says otherwise)."""
        return self.keys.create(owner, **kwargs).key

    def headers(self, owner: str, **kwargs: Any) -> dict[str, str]:
        """Authorization headers for a new key of `owner`."""
        return {"Authorization": f"Bearer {self.key(owner, **kwargs)}"}

    def mcp(self, headers: dict[str, str], tool: str, arguments: dict[str, Any]) -> tuple[bool, str]:
        """One MCP tools/call over the stateless JSON transport: (is_error, text)."""
        response = self.client.post(
            "/mcp",
            headers={**headers, "Accept": "application/json, text/event-stream"},
            json={"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": tool, "arguments": arguments}},
        )
        assert response.status_code == 200, response.text
        result = response.json()["result"]
        return bool(result.get("isError")), result["content"][0]["text"]


@contextmanager
def in_process(
    data_dir: Path,
    backend: str = "edge",
    embedder: Embedder | None = None,
    local_token: str | None = None,
    **service: Any,
) -> Iterator[InProcess]:
    """The service on a data dir in this process, ready (the fake embedder unless one is given).

    `service` takes ServiceSettings fields; `retrieval={...}` overrides retrieval settings; `local_token`
    is the secret `xmemo serve` leaves in server.json for the CLI (service/cli/remote.py)."""
    retrieval = settings_for(data_dir, backend).model_copy(update=service.pop("retrieval", {}))
    settings = ServiceSettings(retrieval=retrieval, **service)
    engine = MemoryEngine(settings.retrieval, embedder=embedder or FakeEmbedder())
    keys = KeyStore.open(data_dir)
    try:
        app = create_app(settings, engine=engine, local_token=local_token)
        with TestClient(app, base_url="http://127.0.0.1:8420") as client:
            for _ in range(1200):  # warm-up runs in the background; a bounded wait, not a timing assertion
                if client.get("/readyz").status_code == 200:
                    break
                time.sleep(0.05)
            yield InProcess(client, engine, keys)
    finally:
        keys.close()


@contextmanager
def served(data_dir: Path, embedder: Embedder | None = None, **service: Any) -> Iterator[tuple[str, InProcess]]:
    """The app of `in_process`, also listening on a free loopback port (uvicorn on a thread of this
    process), for a client that must speak real HTTP (a fuzzer, a browser): (its URL, the harness)."""
    import uvicorn

    port = free_port()
    with in_process(data_dir, embedder=embedder, **service) as app:
        server = uvicorn.Server(
            uvicorn.Config(app.client.app, host="127.0.0.1", port=port, log_level="warning", lifespan="off")
        )
        thread = threading.Thread(target=server.run, name="served-app", daemon=True)
        thread.start()
        url = f"http://127.0.0.1:{port}"
        for _ in range(600):  # bounded wait for the socket, not a timing assertion
            try:
                if httpx.get(f"{url}/healthz", timeout=5).status_code == 200:
                    break
            except httpx.HTTPError:
                time.sleep(0.05)
        try:
            yield url, app
        finally:
            server.should_exit = True
            thread.join(timeout=30)


def sign_in(client: Any, key: str) -> Any:
    """Sign in to the console with `key` through its login form; the response to the form's post."""
    form = client.get("/ui/login")
    return client.post("/ui/login", data={"api_key": key, "csrf": csrf_of(form.text)}, follow_redirects=False)


def csrf_of(page: str) -> str:
    """The CSRF token of a console page's form."""
    found = CSRF.search(page)
    assert found is not None, "the page has no form token"
    return found.group(1)


def finishes(work: Callable[[], Any], seconds: float = 60.0) -> Any:
    """Run `work`, turning a hang into a failure (a guard against a stall, not a speed test)."""
    result: list[Any] = []
    worker = threading.Thread(target=lambda: result.append(work()), daemon=True)
    worker.start()
    worker.join(seconds)
    assert result, f"still running after {seconds} s"
    return result[0]


# -- a real server process ------------------------------------------------------------------------------


class RunningServer:
    """Starts the service as its own process and stops it; keys are issued straight into its data dir."""

    def __init__(
        self,
        data_dir: Path,
        extra_env: dict[str, str] | None = None,
        database_url: str | None = None,
        wait: bool = True,
    ) -> None:
        import os

        self.data_dir = data_dir
        self.database_url = database_url
        self._clients: list[httpx.Client] = []
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.log_path = data_dir.parent / f"server-{self.port}.log"
        self.log = self.log_path.open("w")
        database = ["--database-url", database_url] if database_url else []
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from service.cli import main; main()",
                "--data-dir",
                str(data_dir),
                *database,
                "serve",
                "--port",
                str(self.port),
            ],
            stdout=self.log,
            stderr=subprocess.STDOUT,
            env={**os.environ, **(extra_env or {})},
        )
        if wait:
            self.wait_ready()

    def wait_ready(self, seconds: float = 120) -> None:
        data_dir = self.data_dir
        try:
            wait_ready(self.url, self.process, timeout=seconds)
        except RuntimeError as error:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited: {self.log_path.read_text()}") from error
            self.stop()
            raise
        if not hasattr(self, "keys"):
            self.keys = KeyStore.open(data_dir, self.database_url)
        admin = data_dir / "admin.key"  # a replica that did not start first finds its key store filled
        self.admin_key = (
            admin.read_text().strip()
            if admin.exists()
            else self.key("admin", scopes=("memory:read", "memory:write", "memory:admin"))
        )

    def key(self, owner: str, **kwargs: Any) -> str:
        return self.keys.create(owner, **kwargs).key

    def client(self, key: str | None) -> httpx.Client:
        """An HTTP client with `key`; closed by `stop` if the caller did not close it."""
        headers = {"Authorization": f"Bearer {key}"} if key else {}
        client = httpx.Client(base_url=self.url, headers=headers, timeout=60)
        self._clients.append(client)
        return client

    def stop(self) -> None:
        for client in self._clients:
            client.close()
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
        self.log.close()
        if hasattr(self, "keys"):
            self.keys.close()


async def mcp_call(url: str, key: str, calls: list[tuple[str, dict[str, Any]]]) -> tuple[list[str], list[Any]]:
    """Open an MCP session with the SDK's client, list the tools and make the calls; returns both."""
    import httpx2
    from mcp.client.session import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=60) as http,
        streamable_http_client(f"{url}/mcp", http_client=http) as streams,
        ClientSession(streams[0], streams[1]) as session,
    ):
        await session.initialize()
        tools = [tool.name for tool in (await session.list_tools()).tools]
        results = [await session.call_tool(name, arguments) for name, arguments in calls]
    return tools, results


def pack_for(engine: MemoryEngine, principal: Principal, query: str, **fields: Any) -> ContextPack:
    """recall_context on a request of `query` and `fields`, prepared and run at once (as a command does)."""
    return recall_context(engine, prepare_read(engine, principal, RecallRequest(query=query, **fields)))


def search_for(engine: MemoryEngine, principal: Principal, query: str, **fields: Any) -> SearchResults:
    """search_memory on a request of `query` and `fields`, prepared and run at once."""
    return search_memory(engine, prepare_read(engine, principal, SearchRequest(query=query, **fields)))


def recall_for(engine: MemoryEngine, principal: Principal, query: str, **fields: Any) -> RecallResults:
    """The light recall on a request of `query` and `fields`, prepared and run at once."""
    return recall(engine, prepare_read(engine, principal, LightRecallRequest(query=query, **fields)))
