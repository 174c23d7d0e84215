"""Batched read bookkeeping: `last_accessed_at` and `access_count` without a write per read.

Two kinds of read are told apart. A memory *seen* in a result (any item of a pack or a list) is
fresh: its `last_accessed_at` moves, so idleness (decay, archive) counts from then, and the question
it was seen for is noted (a digest, in `read_questions`). A memory *used*, fetched by id, also adds
one to `access_count`. Promotion for use needs both: fetched, and seen for several distinct questions
(compactor/plan.py). Counting appearances, or being the first item of a result, made filler and
wrong answers "durable facts" (docs/reflect.md, "Promotion").
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime

from ..domain import StoreError, format_time, normalise, text_sha256
from ..storage import MemoryStore

__all__ = ["FLUSH_EVERY_READS", "FLUSH_EVERY_SECONDS", "ReadTracker", "question_digest"]

FLUSH_EVERY_READS = 256
FLUSH_EVERY_SECONDS = 5.0

log = logging.getLogger("xmemo.read_tracking")


def question_digest(question: str) -> str:
    """What identifies a question in `read_questions`: its words, case and spacing aside, hashed."""
    return text_sha256(normalise(question))[:32]


class ReadTracker:
    """Counts reads in memory and writes them in one statement every few seconds or reads.

    The write runs on a thread of its own, never on the reading one: a read must not wait for the
    write lock (an import or reflect may hold it for seconds), and the service runs reads on its
    event loop (MemoryEngine.reads_in_process)."""

    def __init__(self, store: MemoryStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._pending: Counter[str] = Counter()
        self._questions: set[tuple[str, str]] = set()
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one write at a time: `flush` waits for one under way
        self._behind: threading.Thread | None = None  # the background flush started and not yet done
        self._closed = False
        self._last_flush = time.monotonic()
        self._events = 0

    def record(self, seen: Iterable[str], *, used: Iterable[str] = (), question: str | None = None) -> None:
        """`seen` were shown for `question` (freshness, and the question noted); `used` were used
        (freshness and one count each)."""
        digest = question_digest(question) if question else None
        with self._lock:
            for memory_id in seen:
                self._pending[memory_id] += 0
                if digest:
                    self._questions.add((memory_id, digest))
            self._pending.update(used)
            self._events += 1
            due = self._events >= FLUSH_EVERY_READS or time.monotonic() - self._last_flush >= FLUSH_EVERY_SECONDS
            if not due or self._behind is not None or self._closed:
                return
            self._behind = threading.Thread(target=self._flush_behind, name="xmemo-read-tracking", daemon=True)
            try:
                self._behind.start()
            except RuntimeError:  # no thread to be had (interpreter shutdown): the next read tries again
                self._behind = None

    def _flush_behind(self) -> None:
        try:
            self.flush()
        except Exception:  # this thread's own edge: nobody else would see it
            log.exception("read bookkeeping failed; the counts are kept for the next flush")
        finally:
            with self._lock:
                self._behind = None

    def close(self) -> None:
        """Start no more background flushes, wait for one under way, and write what is pending."""
        with self._lock:
            self._closed = True
            behind = self._behind
        if behind is not None:
            behind.join()
        self.flush()

    def flush(self) -> None:
        """Write the pending counts now, after any write under way. A store that cannot take them
        (full disk, locked) keeps them for the next flush, with a warning logged."""
        with self._writing:
            with self._lock:
                pending, self._pending = dict(self._pending), Counter()
                questions, self._questions = self._questions, set()
                self._events = 0
                self._last_flush = time.monotonic()
            try:
                self._store.record_access(pending, format_time(self._clock()), questions)
            except Exception as error:
                with self._lock:
                    self._pending.update(pending)
                    self._questions |= questions
                if not isinstance(error, StoreError):
                    raise
                log.warning("read bookkeeping deferred (%d memories): %s", len(pending), error.message)
