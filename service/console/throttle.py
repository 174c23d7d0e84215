"""Failed console sign-ins, counted per client address: after a few, that address waits a minute."""

from __future__ import annotations

import math
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Callable

__all__ = ["FAILURES_PER_MINUTE", "SignInThrottle"]

FAILURES_PER_MINUTE = 10  # a person mistyping a key never gets near this; a key-guessing loop does at once
TRACKED_ADDRESSES = 10_000  # the oldest address is forgotten beyond this, so memory stays bounded


class SignInThrottle:
    """A sliding one-minute window of failed sign-ins per address."""

    def __init__(self, per_minute: int = FAILURES_PER_MINUTE, clock: Callable[[], float] = time.monotonic) -> None:
        self.per_minute = per_minute
        self._clock = clock
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()
        self._lock = threading.Lock()

    def wait(self, address: str) -> int:
        """Whole seconds this address must wait before its next sign-in (0: it may try now)."""
        now = self._now()
        with self._lock:
            failures = self._recent(address, now)
            if len(failures) < self.per_minute:
                return 0
            return max(1, math.ceil(60.0 - (now - failures[0])))

    def failed(self, address: str) -> None:
        now = self._now()
        with self._lock:
            self._recent(address, now).append(now)
            self._failures.move_to_end(address)
            while len(self._failures) > TRACKED_ADDRESSES:
                self._failures.popitem(last=False)

    def succeeded(self, address: str) -> None:
        with self._lock:
            self._failures.pop(address, None)

    def _recent(self, address: str, now: float) -> deque[float]:
        failures = self._failures.setdefault(address, deque())
        while failures and now - failures[0] > 60.0:
            failures.popleft()
        return failures

    def _now(self) -> float:
        return self._clock()
