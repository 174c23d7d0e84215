"""Shared fixtures: real stores in temp dirs, the real model once per session, a fake embedder for unit tests."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from datetime import datetime, timezone
from pathlib import Path

import numpy as np
import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

from retrieval import MemoryEngine, RetrievalSettings  # noqa: E402
from retrieval.embedding import Embedder, completed, open_embedder  # noqa: E402

SHARED_DATA = Path(__file__).resolve().parents[1].parent / "shared" / "data"
BACKENDS = ["edge", "server"]


class FakeEmbedder:
    """Deterministic bag-of-words hashing embedder: same words, same direction. For fast unit tests."""

    name = "fake:hash-64"
    dimension = 64

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.zeros((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            for word in text.lower().split():
                digest = hashlib.sha256(word.strip(".,;:!?").encode()).digest()
                vectors[row, digest[0] % self.dimension] += 1.0 if digest[1] % 2 else -1.0
            vectors[row, 0] += 0.01  # never the zero vector
        return vectors / np.linalg.norm(vectors, axis=1, keepdims=True)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return completed(self.embed_query(text))


@pytest.fixture(scope="session")
def real_embedder() -> Embedder:
    """The packaged all-MiniLM-L6-v2 on the default backend of a new store, loaded once per session."""
    embedder = open_embedder(RetrievalSettings())
    embedder.embed(["warm up"])
    return embedder


@pytest.fixture
def fake_embedder() -> FakeEmbedder:
    return FakeEmbedder()


class FixedClock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@pytest.fixture
def clock() -> FixedClock:
    return FixedClock(datetime(2026, 11, 29, 12, 0, tzinfo=timezone.utc))


def settings_for(data_dir: Path, backend: str, database_url: str | None = None) -> RetrievalSettings:
    url = None if backend == "edge" else f"path:{data_dir / 'qdrant-local'}"
    return RetrievalSettings(data_dir=data_dir, qdrant_url=url, database_url=database_url)


@pytest.fixture(params=["sqlite", "postgresql"])
def database_url(request: pytest.FixtureRequest) -> Iterator[str | None]:
    """Each system of record in turn: SQLite in the data dir (None), then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        yield None
        return
    from .pg import fresh_database

    with fresh_database() as url:
        yield url


@pytest.fixture
def make_engine(tmp_path: Path) -> Iterator[Callable[..., MemoryEngine]]:
    """Open engines on real SQLite and a real index in tmp dirs; all are closed at teardown."""
    opened: list[MemoryEngine] = []

    def factory(embedder=None, backend: str = "edge", name: str = "data", database_url: str | None = None,  # type: ignore[no-untyped-def]
                **kwargs) -> MemoryEngine:
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
