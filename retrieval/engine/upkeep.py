"""Index upkeep for a long-running server: the embedded shard is rebuilt beside the one in use.

Qdrant Edge runs no optimizer by itself, and its `optimize` holds the GIL from start to end (13 s at
30,000 points), so points that `remember` writes one at a time pile up in one segment every search
scans. This thread watches how many points no graph covers and, once they reach
max(MIN_FRESH, FRESH_FRACTION x the shard), starts engine/rebuild.py in another process, which builds
the next generation from the system of record; meanwhile the shard in use journals its writes, and
`EdgeIndex.install` replays them into the new shard and swaps it in. Writers wait for the replay and
the new shard's open; readers take no lock, but the open holds the GIL (0.18 s at 30,000 points
alone, up to 1.6 s beside a busy feed: docs/evaluation.md, "Index upkeep").

A hard forget asks for a rebuild at once (`after_forget`): the deleted point leaves every search at the
forget, and the disk once a generation built after it is installed (the old one is deleted). The forget
is also counted in the record (UnitOfWork.count_forget), so a rebuild that died or was refused, a
restart before it, and the other replicas of a PostgreSQL record, all rebuild their own index after it.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import shutil
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..domain import RetrievalSettings
from ..index import EdgeIndex, VectorIndex
from ..storage import replace_private

__all__ = ["FRESH_FRACTION", "MIN_FRESH", "IndexUpkeep", "allocated_bytes"]

log = logging.getLogger("xmemo.upkeep")

# A search scans the points no graph covers: 1.29 ms at 2,000 such points, against 2.02 ms for a graph
# search at 30,000 (docs/evaluation.md), so fewer than MIN_FRESH are not worth a rebuild. Past that, a
# rebuild once they reach a tenth of the shard keeps the scan to a tenth and costs each point about ten
# rebuilds over its life, whatever the size (the build cost grows with the shard, the interval too).
MIN_FRESH = 2_000
FRESH_FRACTION = 0.1
CHECK_SECONDS = 1.0
RETRY_SECONDS = 300.0  # after a failed build
# A build that runs longer than this is killed: 962 s of upserts and about 8 minutes of graph built
# 1,000,000 notes in one process (docs/evaluation.md), so 5 ms a point leaves it more than twice that.
TIMEOUT_BASE_SECONDS = 600.0
TIMEOUT_SECONDS_PER_POINT = 0.005
# Beside the generations: how many of the record's hard forgets the generation in use was built after.
# Fewer than the record counts: a forget's payload (path, semantic_key, speaker) may still be in the
# shard's files, so a rebuild is due, after a restart too, and on every replica of a shared record.
PURGED_FILE = "index.purged"


def allocated_bytes(path: Path) -> int:
    """What the files under `path` take on the disk: their allocated blocks, not their apparent size
    (Edge's files are sparse: 245 MiB apparent for 79 points)."""
    return sum(f.stat().st_blocks * 512 for f in path.rglob("*") if f.is_file())


class IndexUpkeep:
    """One thread per engine, started by a server (`MemoryEngine.start_upkeep`), stopped at close."""

    def __init__(
        self,
        index_of: Callable[[], VectorIndex],
        settings: RetrievalSettings,
        embedder_name: str,
        layout: str,
        check_seconds: float = CHECK_SECONDS,
        forgets_of: Callable[[], int] | None = None,
    ) -> None:
        self.index_of = index_of  # the engine's index of the moment: a reindex replaces it
        self.settings = settings
        self.embedder_name = embedder_name
        self.layout = layout  # the child refuses to build another (engine/memory_engine.py index_layout)
        self.check_seconds = check_seconds
        self.builds: list[dict[str, Any]] = []  # what each rebuild did, newest last
        self._stop = threading.Event()
        self._wake = threading.Event()
        self._forgets = 0  # hard forgets so far, and how many of them an installed generation covers
        self._forgets_covered = 0
        # the record's durable count of hard forgets (MemoryStore.forget_count), shared by every replica
        # of a PostgreSQL record; PURGED_FILE beside the generations says how many the one in use covers
        self.forgets_of = forgets_of
        self._retry_at = 0.0
        self._child_lock = threading.Lock()
        self._child: subprocess.Popen[str] | None = None
        self._thread = threading.Thread(target=self._run, name="xmemo-index-upkeep", daemon=True)

    @property
    def child_pid(self) -> int | None:
        """The build process's id while one runs."""
        child = self._child
        return child.pid if child is not None else None

    @property
    def running(self) -> bool:
        return self._thread.is_alive()

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        with self._child_lock:
            self._stop.set()
            if self._child is not None:
                with contextlib.suppress(ProcessLookupError):
                    self._child.kill()
        self._wake.set()
        if self._thread.is_alive():
            self._thread.join()

    def after_forget(self) -> None:
        """A hard forget committed: rebuild now, so that its vectors leave the disk."""
        self._forgets += 1
        self._retry_at = 0.0
        self._wake.set()

    def due(self) -> bool:
        index = self.index_of()
        if not isinstance(index, EdgeIndex) or time.monotonic() < self._retry_at:
            return False
        if self._forgets > self._forgets_covered or self._durable_forgets() > self.purged(index):
            return True
        fresh = index.writes_since_build
        return fresh >= MIN_FRESH and fresh >= FRESH_FRACTION * index.count()

    def _durable_forgets(self) -> int:
        return self.forgets_of() if self.forgets_of is not None else 0

    @staticmethod
    def purged(index: EdgeIndex) -> int:
        """How many of the record's hard forgets the generation in use was built after (0: none known)."""
        try:
            return int((index.path.parent / PURGED_FILE).read_text().strip() or 0)
        except (OSError, ValueError):
            return 0

    @staticmethod
    def note_purged(index: EdgeIndex, forgets: int) -> None:
        """Say that the generation in use was built after `forgets` of the record's hard forgets."""
        replace_private(index.path.parent / PURGED_FILE, f"{forgets}\n")

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self.check_seconds)
            self._wake.clear()
            try:
                index = self.index_of()
                if isinstance(index, EdgeIndex):
                    index.sweep()
                if not self._stop.is_set() and self.due():
                    self.rebuild()
            except Exception:  # the edge of a background thread: log, back off, go on serving
                log.exception("index rebuild failed; the shard in use goes on serving")
                self._retry_at = time.monotonic() + RETRY_SECONDS

    def _room_for(self, index: EdgeIndex) -> None:
        """A build writes a second shard, and its graph build a third copy for a while: refuse one that
        would eat into the disk reserve (a full disk under a mapped Edge file is SIGBUS)."""
        needed = 2 * allocated_bytes(index.path) + self.settings.disk_reserve_bytes
        free = shutil.disk_usage(self.settings.data_dir).free
        if free < needed:
            raise RuntimeError(f"{free} bytes free, a rebuild needs {needed}: the shard in use goes on serving")

    def rebuild(self) -> dict[str, Any] | None:
        """Build the next generation in another process and install it; returns what it did, or None
        when it was stopped or overtaken (a reindex replaced the index)."""
        index = self.index_of()
        if not isinstance(index, EdgeIndex):
            return None
        self._room_for(index)
        began, began_at = time.monotonic(), time.time()
        forgets, durable = self._forgets, self._durable_forgets()  # before the child reads the record
        target = index.begin_rebuild()
        installed = False
        try:
            report = self._build_and_install(index, target, began, began_at)
            installed = report is not None
        finally:
            if not installed:
                index.abandon_rebuild(target)
        if report is not None:
            self._forgets_covered = max(self._forgets_covered, forgets)
            if durable > self.purged(index):
                self.note_purged(index, durable)
            self.builds.append(report)
            log.info(json.dumps({"event": "index_rebuilt", **report}))
        return report

    def _build_and_install(
        self, index: EdgeIndex, target: Path, began: float, began_at: float
    ) -> dict[str, Any] | None:
        command = [
            sys.executable,
            "-m",
            "retrieval.engine.rebuild",
            str(target),
            str(index.dimension),
            self.embedder_name,
            self.layout,
            str(os.getpid()),
        ]
        timeout = TIMEOUT_BASE_SECONDS + TIMEOUT_SECONDS_PER_POINT * index.count()
        with self._child_lock:
            if self._stop.is_set():
                return None
            child = self._child = subprocess.Popen(
                command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
            )
        try:
            out, err = child.communicate(json.dumps(self.settings.model_dump(mode="json")), timeout=timeout)
        except subprocess.TimeoutExpired:
            child.kill()
            child.communicate()
            raise RuntimeError(f"the rebuild process ran past {timeout:.0f} s and was stopped") from None
        finally:
            with self._child_lock:
                self._child = None
        if self._stop.is_set() or self.index_of() is not index:
            return None
        if child.returncode != 0:
            raise RuntimeError(f"the rebuild process exited with {child.returncode}: {err.strip()[-2000:]}")
        built = json.loads(out.strip().splitlines()[-1])
        swap_started = time.perf_counter()
        replayed = index.install(target)
        if replayed is None:
            raise RuntimeError(
                "the rebuild fell too far behind the writes made meanwhile, or the index closed; it starts again later"
            )
        return {
            "points": built["points"],
            "build_s": built["seconds"],
            "install_ms": round((time.perf_counter() - swap_started) * 1000, 1),
            "replayed": replayed,
            "total_s": round(time.monotonic() - began, 3),
            "began_at": round(began_at, 3),  # what it holds: the record as of then, and every write since
            "generation": index.path.name,
        }
