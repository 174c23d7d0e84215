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

from .errors import StoreError
from .records import format_time
from .store import MemoryStore

__all__ = ["AccessTracker"]

FLUSH_EVERY_READS = 256
FLUSH_EVERY_SECONDS = 5.0

log = logging.getLogger("xmemo.access")


class AccessTracker:
    """Counts reads in memory and writes them in one statement every few seconds or reads."""

    def __init__(self, store: MemoryStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()
        self._events = 0

    def record(self, seen: Iterable[str], *, used: Iterable[str] = ()) -> None:
        """`seen` were shown (freshness only); `used` were used (freshness and one count each)."""
        with self._lock:
            for memory_id in seen:
                self._pending[memory_id] += 0
            self._pending.update(used)
            self._events += 1
            due = self._events >= FLUSH_EVERY_READS or (
                time.monotonic() - self._last_flush >= FLUSH_EVERY_SECONDS
            )
        if due:
            self.flush()

    def flush(self) -> None:
        """Write the pending counts. A store that cannot take them (full disk, locked) must not fail
        the read that triggered the flush: the counts are kept for the next one and a warning logged."""
        with self._lock:
            pending, self._pending = dict(self._pending), Counter()
            self._events = 0
            self._last_flush = time.monotonic()
        try:
            self._store.record_access(pending, format_time(self._clock()))
        except StoreError as error:
            log.warning("read bookkeeping deferred (%d memories): %s", len(pending), error.message)
            with self._lock:
                self._pending.update(pending)
