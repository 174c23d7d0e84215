"""A large write reaches the model a small batch at a time: a query waits for one such batch at most.

A `memories/batch` of 150 notes of 13 sentences went to the model as one job of some 2,000 texts, and
another tenant's recall waited 9.5 s of its 10.3 s behind it (issue 36). The batcher's own record of
what it ran says how many document texts each query waited for.
"""

from __future__ import annotations

import threading
import time
from concurrent.futures import Future
from pathlib import Path

import numpy as np
import pytest

from retrieval import MemoryEngine, Principal
from retrieval.encoding import BatchingEmbedder, InferenceBatcher
from retrieval.usecases import remember_batch
from tests.support import settings_for

SIZE = InferenceBatcher.DOCUMENT_BATCH_TEXTS


def _note(number: int) -> dict[str, str]:
    sentences = [f"Step {step} of rollout {number} moved shard {number * 13 + step} to rack B." for step in range(13)]
    return {"content": " ".join(sentences), "path": "ops/rollouts"}


def test_a_large_batch_write_runs_in_small_batches_and_a_query_waits_for_at_most_one(tmp_path: Path, real_embedder):
    assert isinstance(real_embedder, BatchingEmbedder)
    before = max((record.number for record in real_embedder.recent_batches()), default=0)
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=real_embedder) as engine:
        written: Future[int] = Future()

        def write() -> None:
            try:
                notes = [_note(n) for n in range(12)]
                written.set_result(len(remember_batch(engine, Principal(owner_id="bob"), notes)))
            except BaseException as error:
                written.set_exception(error)

        writer = threading.Thread(target=write)
        writer.start()
        deadline = time.monotonic() + 120  # a wait for the write's first batch, not a measure of time
        while not any(not r.queries and r.number > before for r in real_embedder.recent_batches()):
            assert time.monotonic() < deadline and not written.done()
            time.sleep(0.001)
        query = real_embedder.embed_query("which rack did shard 40 move to")
        assert written.result(120) == 12
        writer.join()
    ran = [record for record in real_embedder.recent_batches() if record.number > before]
    documents = [record.texts for record in ran if not record.queries]
    queries = [record for record in ran if record.queries]
    assert np.isclose(np.linalg.norm(query), 1.0, atol=1e-3)
    # the 12 notes' whole texts and their 13 sentences each, in batches of at most SIZE texts
    assert sum(documents) == 12 * 14 and max(documents) <= SIZE
    assert len(queries) == 1 and queries[0].texts == 1 and queries[0].waited <= SIZE


@pytest.mark.parametrize("fail_at", [0, 1])
def test_a_failed_slice_fails_its_job_once_and_the_rest_of_it_never_runs(fail_at: int):
    batches: list[list[str]] = []

    def model(texts: list[str], _queries: bool, _single: bool) -> np.ndarray:
        batches.append(texts)
        if len(batches) == fail_at + 1:
            raise RuntimeError("the model ran out of memory")
        return np.ones((len(texts), 2), dtype=np.float32)

    batcher = InferenceBatcher(model)
    with pytest.raises(RuntimeError, match="out of memory"):
        batcher.embed([f"text {i}" for i in range(3 * SIZE)], 2)
    assert batcher.embed(["after"], 2).tolist() == [[1.0, 1.0]]  # the model's thread lives on
    assert [len(batch) for batch in batches] == [SIZE] * (fail_at + 1) + [1]
