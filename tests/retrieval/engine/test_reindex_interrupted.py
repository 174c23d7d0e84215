"""A reindex killed half way never leaves an index of two models to be read.

Before: a reindex with another model of the same dimension, killed after its first batch, left the
record naming the old model (written only when a reindex finishes); the next start with the old model
opened the half-rebuilt index, and exact-text searches missed their memories. Now the reindex notes the
model before it empties the index; an open refuses until a reindex finishes, which then serves every
memory again."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

import numpy as np
import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, SearchRequest, prepare_read, remember, search_memory
from retrieval.domain import ModelMismatchError
from retrieval.engine import INDEX_BATCH
from tests.support import BACKENDS, ROOT, FakeEmbedder, settings_for

MEMORIES = INDEX_BATCH + 40  # one whole batch in before the kill, the rest never
ALICE = Principal(owner_id="alice", scopes=("memory:read", "memory:write"))


class OtherModel(FakeEmbedder):
    """Another model of the same dimension: the same words point elsewhere."""

    name = "fake:other-64"

    def embed(self, texts: list[str]) -> np.ndarray:
        return np.roll(super().embed(texts), 17, axis=1)


# The reindex in a process of its own, which kills itself (SIGKILL: no cleanup runs) once the first
# batch is in the new index.
KILLED_REINDEX = textwrap.dedent(
    """
    import os, signal, sys
    from tests.retrieval.engine.test_reindex_interrupted import OtherModel
    from tests.support import settings_for
    from retrieval import MemoryEngine
    from pathlib import Path

    engine = MemoryEngine(settings_for(Path(sys.argv[1]), sys.argv[2]), embedder=OtherModel(), allow_model_change=True)

    def progress(done: int) -> None:
        engine.index.flush()
        os.kill(os.getpid(), signal.SIGKILL)

    engine.reindex(progress=progress)
    """
)


def _search(engine: MemoryEngine, text: str) -> list[str]:
    request = SearchRequest(query=text, limit=3, min_score=0.99)
    return [r.id for r in search_memory(engine, prepare_read(engine, ALICE, request)).results]


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_killed_reindex_is_refused_until_a_reindex_finishes(tmp_path, backend):
    data = tmp_path / "data"
    engine = MemoryEngine(settings_for(data, backend), embedder=FakeEmbedder())
    ids = {}
    for n in range(MEMORIES):
        text = f"note {n} about lane {n * 7919 % 1000} and crate {n * 104729 % 977}"
        ids[text] = remember(engine, ALICE, RememberRequest(content=text, path="notes")).id
    engine.close()

    killed = subprocess.run(
        [sys.executable, "-c", KILLED_REINDEX, str(data), backend],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert killed.returncode == -signal.SIGKILL, killed.stderr

    for model in (FakeEmbedder(), OtherModel()):  # neither model may read what the kill left
        with pytest.raises(ModelMismatchError, match="reindex with fake:other-64 stopped before it finished"):
            MemoryEngine(settings_for(data, backend), embedder=model)

    finishing = MemoryEngine(settings_for(data, backend), embedder=OtherModel(), allow_model_change=True)
    assert finishing.reindex() == MEMORIES
    finishing.close()

    engine = MemoryEngine(settings_for(data, backend), embedder=OtherModel())
    try:
        sample = list(ids.items())[:: MEMORIES // 30]
        assert all(_search(engine, text)[:1] == [memory_id] for text, memory_id in sample)
    finally:
        engine.close()
    with pytest.raises(ModelMismatchError, match="Run `xmemo reindex`"):  # the old model is the other one now
        MemoryEngine(settings_for(data, backend), embedder=FakeEmbedder())
