"""Running a model on one thread and merging the texts of concurrent callers into batches."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections import deque
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from dataclasses import dataclass

import numpy as np

__all__ = ["BatchRecord", "BatchingEmbedder", "InferenceBatcher"]


@dataclass(frozen=True)
class BatchRecord:
    """One batch the model's thread took: its number (counting from 1 in this batcher), its lane,
    its texts, and how many texts of the other lane ran while its jobs waited for this turn (a
    query's wait for documents, a write's wait for queries, in texts)."""

    number: int
    queries: bool
    texts: int
    waited: int


@dataclass(eq=False)
class _Job:
    """A caller's texts: a batch takes them whole or, from a job larger than a batch, a slice of them."""

    texts: list[str]
    single: bool
    done: Future[np.ndarray]
    mark: int  # the other lane's texts run when this job was queued, or when its last slice ran
    order: list[int]  # the positions of `texts` in the order batches take them
    started: bool = False
    taken: int = 0
    vectors: np.ndarray | None = None
    filled: int = 0

    def fill(self, positions: list[int], vectors: np.ndarray) -> None:
        """Keep the vectors of one slice; the future gets the job's vectors once the last slice ran."""
        if self.single:
            self.done.set_result(np.array(vectors[0], dtype=np.float32))
            return
        if len(positions) == len(self.texts):  # the whole job in one batch (so in its own order)
            self.done.set_result(vectors)
            return
        if self.vectors is None:
            self.vectors = np.empty((len(self.texts), vectors.shape[1]), dtype=np.float32)
        self.vectors[positions] = vectors
        self.filled += len(positions)
        if self.filled == len(self.texts):
            self.done.set_result(self.vectors)


_Slice = tuple[_Job, list[int]]


class InferenceBatcher:
    """Runs the model on one thread and merges the texts of concurrent callers into one batch.

    Under concurrent load, callers that each ran the model at once oversubscribed the cores (every
    call used all of torch's threads); one inference thread with dynamic batching does the same work
    in fewer, larger forward passes. A caller alone pays one hand-off (tens of microseconds).

    Queries (`embed_query_later`: a read waits on each) and documents (`embed`: a write's texts, an
    import's batch) wait in two lanes. When both hold work, the thread takes them in turn, so a query
    waits for at most one batch of documents, and writes still get every other turn however many
    reads come. In one lane, first come is first served. A batch of queries takes every query
    waiting; a batch of documents takes at most DOCUMENT_BATCH_TEXTS texts: whole jobs while they
    fit, and a job larger than that (a `memories/batch` of 150 notes of 13 sentences, an import's
    batch) a slice at a time, its texts taken shortest first so that a slice's texts pad little. A
    job that went to the model whole made another tenant's recall wait 9.5 s of its 10.3 s. With one
    queue, a recall's query waited behind the notes of every write before it: once writes stopped
    queueing on the write lock instead, a loaded server's recall p50 tripled (docs/evaluation.md,
    "Load").
    """

    MAX_BATCH_TEXTS = 256
    # On one core a note's text takes about 6.6 ms in a batch: 8 of them hold a query up about 50 ms.
    # Larger document batches save little (the model is bound by its matrix products) and made a
    # loaded server's recall p50 2x-3x; smaller ones cut the writes' throughput (measured there).
    DOCUMENT_BATCH_TEXTS = 8
    # How many of the latest batches `recent_batches` keeps.
    RECORD_BATCHES = 256

    def __init__(self, run: Callable[[list[str], bool, bool], np.ndarray]) -> None:
        self._run = run
        self._queries: deque[_Job] = deque()
        self._documents: deque[_Job] = deque()
        self._waiting = threading.Condition()
        self._documents_next = False
        self._thread: threading.Thread | None = None
        self._ran = {True: 0, False: 0}  # texts the model has run, by lane (True: queries)
        self._record: deque[BatchRecord] = deque(maxlen=self.RECORD_BATCHES)
        self._batches = 0

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
        their vectors (a single text's vector alone). A future cancelled before its first batch runs
        (an MCP request cancelled, a server shutting down) is left out."""
        done: Future[np.ndarray] = Future()
        positions = list(range(len(texts)))
        if not single and len(texts) > self.DOCUMENT_BATCH_TEXTS:
            positions.sort(key=lambda i: len(texts[i]))
        with self._waiting:
            if self._thread is None:
                self._thread = threading.Thread(target=self._serve, name="xmemo-embedder", daemon=True)
                self._thread.start()
            job = _Job(texts, single, done, self._ran[not single], positions)
            (self._queries if single else self._documents).append(job)
            self._waiting.notify()
        return done

    def recent_batches(self) -> list[BatchRecord]:
        """The latest batches the model's thread took, oldest first (RECORD_BATCHES of them)."""
        with self._waiting:
            return list(self._record)

    def _next_batch(self) -> list[_Slice]:
        """The slices of the next batch: from one lane, in turn when both wait, up to the lane's number
        of texts. A batch never mixes the lanes: every job of it is single (queries) or none is."""
        with self._waiting:
            while True:
                while not self._queries and not self._documents:
                    self._waiting.wait()
                queries = not (self._documents and (self._documents_next or not self._queries))
                taken = self._take(self._queries if queries else self._documents, queries)
                if taken:
                    self._documents_next = queries
                    return taken

    def _take(self, lane: deque[_Job], queries: bool) -> list[_Slice]:
        """Whole jobs while they fit, or a slice of a job larger than a batch; a job cancelled before
        its first batch, or failed in an earlier one, is dropped."""
        limit = self.MAX_BATCH_TEXTS if queries else self.DOCUMENT_BATCH_TEXTS
        taken: list[_Slice] = []
        count = waited = 0
        while lane and count < limit:
            job = lane[0]
            if not job.started:
                job.started = True
                if not job.done.set_running_or_notify_cancel():  # its caller went away
                    lane.popleft()
                    continue
            if job.done.done():  # an earlier slice failed: the caller has its error
                lane.popleft()
                continue
            left = len(job.texts) - job.taken
            if taken and left <= limit and count + left > limit:
                break  # a job that fits a batch is not split
            size = min(left, limit - count)
            taken.append((job, job.order[job.taken : job.taken + size]))
            waited = max(waited, self._ran[not queries] - job.mark)
            job.mark = self._ran[not queries]
            job.taken += size
            count += size
            if job.taken == len(job.texts):
                lane.popleft()
        if taken:
            self._batches += 1
            self._record.append(BatchRecord(self._batches, queries, count, waited))
        return taken

    def _serve(self) -> None:
        while True:
            batch = self._next_batch()
            texts = [batch_job.texts[i] for batch_job, positions in batch for i in positions]
            queries = batch[0][0].single
            try:
                vectors = self._run(texts, queries, queries and len(batch) == 1)
                if len(vectors) != len(texts):
                    raise RuntimeError(f"the model gave {len(vectors)} vectors for {len(texts)} texts")
                start = 0
                for job, positions in batch:
                    job.fill(positions, vectors[start : start + len(positions)])
                    start += len(positions)
            except BaseException as error:  # hand the failure to every caller still waiting; this thread lives on
                for job, _ in batch:
                    if not job.done.done():
                        job.done.set_exception(error)
            with self._waiting:
                self._ran[queries] += len(texts)


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

    def recent_batches(self) -> list[BatchRecord]:
        """The latest batches the model ran (InferenceBatcher.recent_batches)."""
        return self._batcher.recent_batches()

    @abstractmethod
    def _infer(self, texts: list[str], queries: bool, single: bool) -> np.ndarray:
        """Vectors of `texts` in their order; `queries` marks a batch of queries (a model trained
        with a query prefix adds it), `single` one query alone (a model may take a faster path for a
        lone unpadded text)."""
