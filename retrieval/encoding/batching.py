"""Running a model on one thread and merging the texts of concurrent callers into batches."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future

import numpy as np

__all__ = ["BatchingEmbedder", "InferenceBatcher"]


_Job = tuple[list[str], bool, Future[np.ndarray]]


class InferenceBatcher:
    """Runs the model on one thread and merges the texts of concurrent callers into one batch.

    Under concurrent load, callers that each ran the model at once oversubscribed the cores (every
    call used all of torch's threads); one inference thread with dynamic batching does the same work
    in fewer, larger forward passes. A caller alone pays one hand-off (tens of microseconds).

    Queries (`embed_query_later`: a read waits on each) and documents (`embed`: a write's texts, an
    import's batch) wait in two lanes. When both hold work, the thread takes them in turn, so a query
    waits for at most one batch of documents, and writes still get every other turn however many
    reads come. In one lane, first come is first served. A batch of queries takes every query
    waiting; a batch of documents takes at most DOCUMENT_BATCH_TEXTS texts (a larger job, such as an
    import's, goes alone). With one queue, a recall's query waited behind the notes of every write
    before it: once writes stopped queueing on the write lock instead, a loaded server's recall p50
    tripled (docs/evaluation.md, "Load").
    """

    MAX_BATCH_TEXTS = 256
    # On one core a note's text takes about 6.6 ms in a batch: 8 of them hold a query up about 50 ms.
    # Larger document batches save little (the model is bound by its matrix products) and made a
    # loaded server's recall p50 2x-3x; smaller ones cut the writes' throughput (measured there).
    DOCUMENT_BATCH_TEXTS = 8

    def __init__(self, run: Callable[[list[str], bool, bool], np.ndarray]) -> None:
        self._run = run
        self._queries: deque[_Job] = deque()
        self._documents: deque[_Job] = deque()
        self._waiting = threading.Condition()
        self._documents_next = False
        self._thread: threading.Thread | None = None

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
        """Queue `texts` for the model's thread (a single text in the queries' lane); the future holds
        their vectors (a single text's vector alone). A future cancelled before its batch runs (an
        MCP request cancelled, a server shutting down) is left out of the batch."""
        done: Future[np.ndarray] = Future()
        with self._waiting:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="xmemo-embedder", daemon=True)
                self._thread.start()
            (self._queries if single else self._documents).append((texts, single, done))
            self._waiting.notify()
        return done

    def _next_batch(self) -> list[_Job]:
        """The jobs of the next batch: from one lane, in turn when both wait, up to the lane's number of
        texts (a larger job goes alone). A batch never mixes the lanes: every job of it is single
        (queries) or none is (documents)."""
        with self._waiting:
            while not self._queries and not self._documents:
                self._waiting.wait()
            lane = self._documents if self._documents and (self._documents_next or not self._queries) else self._queries
            self._documents_next = lane is self._queries
            limit = self.MAX_BATCH_TEXTS if lane is self._queries else self.DOCUMENT_BATCH_TEXTS
            jobs = [lane.popleft()]
            count = len(jobs[0][0])
            while lane and count + len(lane[0][0]) <= limit:
                job = lane.popleft()
                jobs.append(job)
                count += len(job[0])
            return jobs

    def _serve(self) -> None:
        while True:
            # A cancelled future (its caller went away) can no longer take a result: leave it out.
            jobs = [job for job in self._next_batch() if job[2].set_running_or_notify_cancel()]
            if not jobs:
                continue
            texts = [text for job in jobs for text in job[0]]
            try:
                queries = jobs[0][1]
                vectors = self._run(texts, queries, queries and len(jobs) == 1)
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
    def _infer(self, texts: list[str], queries: bool, single: bool) -> np.ndarray:
        """Vectors of `texts` in their order; `queries` marks a batch of queries (a model trained
        with a query prefix adds it), `single` one query alone (a model may take a faster path for a
        lone unpadded text)."""
