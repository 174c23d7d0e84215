"""Batched read bookkeeping: `last_accessed_at` and `access_count` without a write per read."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable
from datetime import datetime

from .records import format_time
from .store import MemoryStore

__all__ = ["AccessTracker"]

FLUSH_EVERY_READS = 256
FLUSH_EVERY_SECONDS = 5.0


class AccessTracker:
    """Counts reads in memory and writes them in one statement every few seconds or reads."""

    def __init__(self, store: MemoryStore, clock: Callable[[], datetime]) -> None:
        self._store = store
        self._clock = clock
        self._pending: Counter[str] = Counter()
        self._lock = threading.Lock()
        self._last_flush = time.monotonic()

    def record(self, ids: Iterable[str]) -> None:
        with self._lock:
            self._pending.update(ids)
            due = sum(self._pending.values()) >= FLUSH_EVERY_READS or (
                time.monotonic() - self._last_flush >= FLUSH_EVERY_SECONDS
            )
        if due:
            self.flush()

    def flush(self) -> None:
        with self._lock:
            pending, self._pending = dict(self._pending), Counter()
            self._last_flush = time.monotonic()
        self._store.record_access(pending, format_time(self._clock()))
