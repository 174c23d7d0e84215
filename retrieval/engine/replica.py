"""A replica's embedded index following the shared record through its change sequence (PostgreSQL).

Replicas of one PostgreSQL store, each with its own Qdrant Edge index, share nothing but the database.
Every write appends (seq, memory id) rows to `changes` in its own transaction, numbered in commit
order (storage/unit_of_work.py CHANGE_LOCK). A replica syncs its own writes to its index at once (readable on the
replica that acknowledged them), and a follower thread polls the sequence every POLL_SECONDS for the
others' changes: it reads each named memory's current row, upserts it (vector from the shared
embedding cache, so nothing is encoded again) or deletes a forgotten one, flushes the index, and only
then saves how far it got in `<data dir>/follow.json` (at most every FLUSH_SECONDS: a flush is a
sync to disk, and under load a poll finds changes every time). A crash anywhere leaves that mark at
or behind what the index holds, so the next start replays from it; replaying is idempotent.

Each replica also reports its saved mark to the database (`replica_marks`, under the id kept in
`<data dir>/replica.id`) at start and every REPORT_SECONDS, and then prunes the changes every replica
that reported within MARK_LIFETIME_SECONDS has passed. A replica stopped for longer than that finds its
mark behind the oldest change kept and reindexes from the record, as a replica with no mark does.
"""

from __future__ import annotations

import json
import logging
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

import numpy as np

from ..domain import Memory, XMemoError
from ..index import VectorIndex
from ..storage import MemoryStore, replace_private

__all__ = [
    "MARK_LIFETIME_SECONDS",
    "POLL_SECONDS",
    "REPORT_SECONDS",
    "ChangeFollower",
    "FollowedEngine",
    "HeldVersions",
]

log = logging.getLogger("xmemo.replica")

# 0.1 s between polls: a change another replica committed is searchable here within about
# POLL_SECONDS plus one index upsert (measured with eval/replicas.py: README, "Scaling out"); a poll
# that finds nothing is one indexed range query.
POLL_SECONDS = 0.1
BATCH = 512
STALE_AFTER_SECONDS = 5.0  # /readyz answers 503 when the last successful poll is older than this
FLUSH_SECONDS = 1.0
# A replica reports how far its index has followed, and prunes what all have passed, this often; one
# that has not reported for MARK_LIFETIME_SECONDS is taken as gone (a restart within it replays, one
# after it reindexes).
REPORT_SECONDS = 30.0
MARK_LIFETIME_SECONDS = 24 * 3600.0


class HeldVersions:
    """The version of each memory this replica's index was last given (bounded; a miss only costs
    one more upsert). The follower skips a change whose version the index already holds."""

    def __init__(self, size: int = 200_000) -> None:
        self._versions: OrderedDict[str, int] = OrderedDict()
        self._size = size
        self._lock = threading.Lock()

    def record(self, memories: Sequence[Memory]) -> None:
        with self._lock:
            for memory in memories:
                self._versions[memory.id] = memory.version
                self._versions.move_to_end(memory.id)
            while len(self._versions) > self._size:
                self._versions.popitem(last=False)

    def holds(self, memory: Memory) -> bool:
        with self._lock:
            return self._versions.get(memory.id) == memory.version

    def forget(self, ids: Sequence[str]) -> None:
        with self._lock:
            for memory_id in ids:
                self._versions.pop(memory_id, None)


class FollowedEngine(Protocol):
    """What the follower needs of the engine it keeps in step (engine/memory_engine.py MemoryEngine)."""

    store: MemoryStore
    index: VectorIndex
    held: HeldVersions

    def sync(self, memories: Sequence[Memory], vectors: np.ndarray | None = None) -> None: ...

    def reconcile_all(self) -> int: ...


def _replica_id(path: Path) -> str:
    """This data dir's name among the replicas, made once and kept beside the mark."""
    try:
        kept = path.read_text().strip()
    except OSError:
        kept = ""
    if len(kept) == 16 and all(ch in "0123456789abcdef" for ch in kept):
        return kept
    made = secrets.token_hex(8)
    replace_private(path, made)
    return made


class ChangeFollower:
    """Catches a replica's index up with the change sequence, then tails it on a thread."""

    def __init__(
        self, engine: FollowedEngine, mark_path: Path, store_id: str, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.engine = engine
        self.mark_path = mark_path
        self.store_id = store_id
        self._clock = clock
        self.seq = 0
        self.saved_seq = 0
        self.last_saved = clock()
        self.last_ok = clock()
        self.last_report = clock()
        self.applied = 0
        self.replica_id = _replica_id(mark_path.with_name("replica.id"))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    # -- the mark -------------------------------------------------------------------------------

    def _load_mark(self) -> int | None:
        """The saved sequence number, or None when there is none for this store (a full resync)."""
        try:
            saved = json.loads(self.mark_path.read_text())
        except (OSError, ValueError):
            return None
        if (
            not isinstance(saved, dict)
            or saved.get("store_id") != self.store_id
            or not isinstance(saved.get("seq"), int)
        ):
            return None
        return int(saved["seq"])

    def save_mark(self) -> None:
        replace_private(self.mark_path, json.dumps({"store_id": self.store_id, "seq": self.seq}))

    def forget_mark(self) -> None:
        """The index was rebuilt or replaced: the next catch-up starts from the whole record."""
        self.mark_path.unlink(missing_ok=True)

    # -- catching up ------------------------------------------------------------------------------

    def catch_up(self) -> int:
        """Bring the index to the newest change; returns how many memories were synced or deleted."""
        saved = self._load_mark()
        # Take a place in the sequence first: no pruning passes it from here on.
        if saved is None or saved < self.engine.store.changes.hold(self.replica_id, saved) - 1:
            return self._resync()  # no mark, or one older than what is kept
        self.seq = saved
        done = 0
        self.saved_seq = saved
        while True:
            step = self.poll()
            done += step
            if step == 0 and self.seq >= self.engine.store.changes.last():
                self.checkpoint()
                self.report()
                return done

    def _resync(self) -> int:
        """No usable mark: index every record and drop strays, then follow from the sequence's end as it
        was before the scan (changes during the scan are replayed; replaying is idempotent)."""
        self.seq = self.engine.store.changes.last()
        self.engine.store.changes.hold(self.replica_id, self.seq)  # what is pruned from here on, the scan reads
        fixed = self.engine.reconcile_all()
        self.engine.index.flush()
        self.save_mark()
        self.saved_seq = self.seq
        self.last_ok = self._clock()
        self.report()
        return fixed

    def poll(self) -> int:
        """Apply the changes after the mark (one batch); returns how many memories it touched."""
        batch = self.engine.store.changes.after(self.seq, BATCH)
        if not batch:
            self.last_ok = self._clock()
            return 0
        ids = list(dict.fromkeys(memory_id for _, memory_id, _ in batch))
        current = self.engine.store.get_many(ids)
        forced = {memory_id for _, memory_id, version in batch if version is None}  # a context rewrite
        stale = [m for m in current.values() if m.id in forced or not self.engine.held.holds(m)]
        gone = [memory_id for memory_id in ids if memory_id not in current]
        if gone:
            self.engine.index.delete(gone)
            self.engine.held.forget(gone)
        if stale:
            self.engine.sync(stale)
        self.seq = batch[-1][0]
        self.applied += len(stale) + len(gone)
        self.last_ok = self._clock()
        if self.last_ok - self.last_saved >= FLUSH_SECONDS:
            self.checkpoint()
        return len(batch)

    def checkpoint(self) -> None:
        """Flush the index, then save the mark: the saved mark never runs ahead of what is on disk."""
        if self.saved_seq == self.seq:
            return
        self.engine.index.flush()
        self.save_mark()
        self.saved_seq = self.seq
        self.last_saved = self._clock()

    def report(self) -> int:
        """Tell the database how far this index has followed (the saved mark, which never runs ahead of the
        disk), then prune what every live replica has passed; returns the changes pruned."""
        self.engine.store.changes.save_mark(self.replica_id, self.saved_seq)
        self.last_report = self._clock()
        return self.engine.store.changes.prune(MARK_LIFETIME_SECONDS)

    # -- tailing ----------------------------------------------------------------------------------

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="xmemo-follower", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(POLL_SECONDS):
            try:
                while self.poll() == BATCH:  # a backlog: drain it before sleeping again
                    pass
                if self._clock() - self.last_saved >= FLUSH_SECONDS:
                    self.checkpoint()
                if self._clock() - self.last_report >= REPORT_SECONDS:
                    self.report()
            except XMemoError as error:  # the database or the index is down: retry, /readyz says so
                log.warning("following the change sequence failed: %s", error.message)

    def healthy(self) -> bool:
        """Caught up at start (the engine does that before serving) and polled successfully of late."""
        return self._clock() - self.last_ok < STALE_AFTER_SECONDS

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:
            self.checkpoint()
            self.engine.store.changes.save_mark(self.replica_id, self.saved_seq)  # a restart replays from here
        except XMemoError as error:  # closing anyway: the next start replays from the older mark
            log.warning("could not save the follower's mark: %s", error.message)
