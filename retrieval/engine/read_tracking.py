"""Batched read bookkeeping: `last_accessed_at` and `access_count` without a write per read.

Two kinds of read are told apart. A memory *seen* in a result (any item of a pack or a list) is
fresh: its `last_accessed_at` moves, so idleness (decay, archive) counts from then. A memory *used*
also adds one to `access_count`, which promotes at `promote_min_access`: fetched by id, or the first
item of a result. Counting every appearance in a pack made filler "durable facts" within minutes
(ten test questions, 12 reads); docs/reflect.md has the measurement behind this definition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime

from ..domain import StoreError, format_time
from ..storage import MemoryStore

__all__ = ["FLUSH_EVERY_READS", "FLUSH_EVERY_SECONDS", "ReadTracker"]

FLUSH_EVERY_READS = 256
FLUSH_EVERY_SECONDS = 5.0

log = logging.getLogger("xmemo.read_tracking")


class ReadTracker:
    """Counts reads in memory and writes them in one statement every few seconds or reads.

    The write runs on a thread of its own, never on the reading one: a read must not wait for the
    write lock (an import or reflect may hold it for seconds), and the service runs reads on its
    event loop (MemoryEngine.reads_in_process)."""

    def __init__(self, store: MemoryStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._writing = threading.Lock()  # one write at a time: `flush` waits for one under way
        self._behind: threading.Thread | None = None  # the background flush started and not yet done
        self._closed = False
        self._last_flush = time.monotonic()
        self._events = 0

    def record(self, seen: Iterable[str], *, used: Iterable[str] = ()) -> None:
        """`seen` were shown (freshness only); `used` were used (freshness and one count each)."""
        with self._lock:
            for memory_id in seen:
                self._pending[memory_id] += 0
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
                self._events = 0
                self._last_flush = time.monotonic()
            try:
                self._store.record_access(pending, format_time(self._clock()))
            except Exception as error:
                with self._lock:
                    self._pending.update(pending)
                if not isinstance(error, StoreError):
                    raise
                log.warning("read bookkeeping deferred (%d memories): %s", len(pending), error.message)
