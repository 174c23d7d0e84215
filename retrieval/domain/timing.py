"""Named phases of a slow start, timed and logged, so that `--verbose` shows where the seconds go."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Iterator

__all__ = ["Phases", "timed"]

log = logging.getLogger("xmemo.timing")


class Phases:
    """The wall time of each named phase, in the order they ran; each is logged at INFO as it ends."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextlib.contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        start = time.perf_counter()
        try:
            yield
        finally:
            elapsed = time.perf_counter() - start
            self.seconds[name] = self.seconds.get(name, 0.0) + elapsed
            log.info("%s: %.0f ms", name, elapsed * 1000)


timed = Phases()  # for phases outside an engine (loading a model); keeps the process's totals
