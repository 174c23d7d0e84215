"""Fixtures: real stores in temp dirs, the real model once per session, a fake embedder for unit tests,
a fixed clock, each system of record in turn, and the CLI through click's runner. Helpers live in
tests/support.py."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from retrieval import MemoryEngine, RetrievalSettings
from retrieval.encoding import Embedder, open_embedder
from service.cli import cli

from .support import FakeEmbedder, FixedClock, fresh_database, settings_for


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The packaged all-MiniLM-L6-v2 on the default backend of a new store, loaded once per session."""
    embedder = open_embedder(RetrievalSettings())
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Each system of record in turn: SQLite in the data dir (None), then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    with fresh_database() as url:
        yield url


@pytest.fixture
def make_engine(tmp_path: Path) -> Iterator[Callable[..., MemoryEngine]]:
    """Open engines on real SQLite and a real index in tmp dirs; all are closed at teardown."""
    opened: list[MemoryEngine] = []

    def factory(
        embedder: Any = None,
        backend: str = "edge",
        name: str = "data",
        database_url: str | None = None,
        **kwargs: Any,
    ) -> MemoryEngine:
        settings = settings_for(tmp_path / name, backend, database_url)
        engine = MemoryEngine(settings, embedder=embedder or FakeEmbedder(), **kwargs)
        opened.append(engine)
        return engine

    yield factory
    for engine in opened:
        try:
            engine.close()
        except Exception:
            pass


@pytest.fixture
def run(tmp_path: Path, real_embedder: Embedder) -> Callable[..., Result]:
    """`xmemo --data-dir <tmp>/<data> ARGS` through click's runner (the real model, loaded once)."""
    runner = CliRunner()

    def invoke(*args: str, data: str = "data") -> Result:
        return runner.invoke(cli, ["--data-dir", str(tmp_path / data), *args], catch_exceptions=False)

    return invoke


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Iterator[None]:
    """Under CI (XMEMO_REQUIRE_RESOURCES=1, set by .ci/run) a test that skips for want of a resource
    (PostgreSQL, Chromium, the shared data, tmpfs) fails instead: CI must not pass on less than it tests."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if os.environ.get("XMEMO_REQUIRE_RESOURCES") == "1" and report.skipped and not hasattr(report, "wasxfail"):
        report.outcome = "failed"
        report.longrepr = f"skipped under CI, where every resource must be present: {report.longrepr}"
