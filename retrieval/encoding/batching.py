"""Running a model on one thread and merging the texts of concurrent callers into batches."""

from __future__ import annotations

import queue
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np

__all__ = ["BatchingEmbedder", "InferenceBatcher"]


class InferenceBatcher:
    """Runs the model on one thread and merges the texts of concurrent callers into one batch.

    Under concurrent load, callers that each ran the model at once oversubscribed the cores (every
    call used all of torch's threads); one inference thread with dynamic batching does the same work
    in fewer, larger forward passes. A caller alone pays one hand-off (tens of microseconds).
    """

    MAX_BATCH_TEXTS = 256

    def __init__(self, run: Callable[[list[str], bool], np.ndarray]) -> None:
        self._run = run
        self._queue: queue.Queue[tuple[list[str], bool, Future[np.ndarray]]] = queue.Queue()
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed_query_later(text).result()

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        """One text, marked single (a model may take a faster path for a lone unpadded text); the
        future holds its vector."""
        return self.submit([text], True)

    def embed(self, texts: Sequence[str], dimension: int) -> np.ndarray:
        if not texts:
            return np.zeros((0, dimension), dtype=np.float32)
        return self.submit(list(texts), False).result()

    def submit(self, texts: list[str], single: bool) -> Future[np.ndarray]:
        """Queue `texts` for the model's thread; the future holds their vectors (a single text's
        vector alone). A future cancelled before its batch runs (an MCP request cancelled, a server
        shutting down) is left out of the batch."""
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="xmemo-embedder", daemon=True)
                self._thread.start()
        done: Future[np.ndarray] = Future()
        self._queue.put((texts, single, done))
        return done

    def _serve(self) -> None:
        while True:
            jobs = [self._queue.get()]
            count = len(jobs[0][0])
            while count < self.MAX_BATCH_TEXTS:
                try:
                    job = self._queue.get_nowait()
                except queue.Empty:
                    break
                jobs.append(job)
                count += len(job[0])
            # A cancelled future (its caller went away) can no longer take a result: leave it out.
            jobs = [job for job in jobs if job[2].set_running_or_notify_cancel()]
            if not jobs:
                continue
            texts = [text for job in jobs for text in job[0]]
            try:
                vectors = self._run(texts, len(jobs) == 1 and jobs[0][1])
                if len(vectors) != len(texts):
                    raise RuntimeError(f"the model gave {len(vectors)} vectors for {len(texts)} texts")
                start = 0
                for job_texts, single, done in jobs:
                    done.set_result(
                        np.array(vectors[start], dtype=np.float32)
                        if single
                        else vectors[start : start + len(job_texts)]
                    )
                    start += len(job_texts)
            except BaseException as error:  # hand the failure to every caller still waiting; this thread lives on
                for _, _, done in jobs:
                    if not done.done():
                        done.set_exception(error)


class BatchingEmbedder(ABC):
    """The base of the encoders that run a model: every call goes through one InferenceBatcher, so
    concurrent callers share forward passes; a subclass says how a batch runs (`_infer`)."""

    def __init__(self, name: str) -> None:
        self._name = name
        self._batcher = InferenceBatcher(self._infer)

    @property
    def name(self) -> str:
        return self._name

    @property
    @abstractmethod
    def dimension(self) -> int:
        """The size of the vectors; `embed` asks for it on every call, so subclasses read it once."""

    def embed_query(self, text: str) -> np.ndarray:
        """One text on the latency path, batched with concurrent callers."""
        return self._batcher.embed_query(text)

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return self._batcher.embed_query_later(text)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        return self._batcher.embed(texts, self.dimension)

    @abstractmethod
    def _infer(self, texts: list[str], single: bool) -> np.ndarray:
        """Vectors of `texts` in their order; `single` marks one query alone (a model may take a
        faster path for a lone unpadded text)."""
