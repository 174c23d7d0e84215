"""The data dir on disk: private file modes, the one-process lock, and the free-space reserve.

File permissions: the directory 0700 and every file in it 0600, whatever the umask. Every tenant's
memories, the key digests and the cached vectors live in these files; under umask 022 they were 0755
and 0644, readable by any local user. The CLI entry points and the key store apply this rule at
start, which also tightens a data dir written by an older release; the CLI runs under
`private_umask`, so that what SQLite and Qdrant Edge create later (segments, WAL files) is private too.

One process owns a data dir at a time (an advisory lock on `xmemo.lock`): a second one gets a clear
error instead of a corrupted shard.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

from ..domain import StorageFullError, StoreError

__all__ = [
    "LOCK_FILE",
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "FreeSpace",
    "lock_data_dir",
    "lock_holder",
    "private_file",
    "private_umask",
    "replace_private",
    "secure_data_dir",
]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def secure_data_dir(data_dir: Path) -> None:
    """Create `data_dir` private if absent; make it, its directories 0700 and its files 0600."""
    try:
        data_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        for directory, _, files in os.walk(data_dir):
            os.chmod(directory, PRIVATE_DIR)
            for name in files:
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    os.chmod(path, PRIVATE_FILE)
    except OSError as error:
        raise StoreError(f"cannot make the data dir {data_dir} private: {error}") from error


@contextmanager
def private_umask() -> Iterator[None]:
    """Inside, new files are 0600 and new directories 0700 (umask 077), whatever the caller's umask."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if absent, else make it 0600; SQLite then makes its -wal and -shm alike."""
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        os.chmod(path, PRIVATE_FILE)
    except OSError as error:
        raise StoreError(f"cannot make {path} private: {error}") from error
    return path


def replace_private(path: Path, text: str) -> None:
    """Write `text` to `path` whole or not at all (a 0600 partial file beside it, then renamed over it):
    a reader, or a crash, never sees half of it."""
    partial = path.with_name(path.name + ".partial")
    descriptor = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
    with os.fdopen(descriptor, "w", encoding="utf-8") as handle:
        os.fchmod(handle.fileno(), PRIVATE_FILE)  # an older partial keeps its mode through O_CREAT
        handle.write(text)
        handle.flush()
        os.fsync(handle.fileno())  # on disk before the rename makes it the file: a power cut leaves old or new
    os.replace(partial, path)
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)  # and the rename itself
    finally:
        os.close(directory)


LOCK_FILE = "xmemo.lock"


def lock_data_dir(data_dir: Path) -> IO[str]:
    """Hold the data dir for this process (released when the returned file closes); StoreError if taken.
    The holder's pid is written into the lock file (`lock_holder` reads it)."""
    handle = open(data_dir / LOCK_FILE, "a+")  # noqa: SIM115 (held open: closing it releases the lock)
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError as error:
        handle.close()
        raise StoreError(
            f"the data dir {data_dir} is in use by another xmemo process; stop it or use its HTTP API"
        ) from error
    handle.seek(0)
    handle.truncate()
    handle.write(str(os.getpid()))
    handle.flush()
    return handle


def lock_holder(data_dir: Path) -> int | None:
    """The pid of the process holding the data dir (`lock_data_dir`), None while no process holds it (or
    the holder wrote no pid yet). Tried without waiting, and without keeping the lock."""
    try:
        handle = open(data_dir / LOCK_FILE, "a+")  # noqa: SIM115 (closed below)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            handle.seek(0)
            written = handle.read().strip()
            return int(written) if written.isdigit() else None
        return None  # taken here, so free (closing releases it)
    finally:
        handle.close()


class FreeSpace:
    """Checks, before a write reaches SQL or the index, that `reserve_bytes` stay free under `path`.

    Qdrant Edge maps sparse, pre-sized files (32 MiB WAL segments, 32 MiB vector chunks, payload
    pages) and fills their pages as points arrive. On a full filesystem, touching such a page is
    SIGBUS: the process dies and logs nothing (seen after 153 writes of 60 KB on a small tmpfs). So
    a write goes ahead only while the reserve is free; one write adds far less than the reserve
    (a request body is at most 1 MiB, an import batch 512 records), so the index never meets a full
    disk through us. Reads need no space and are never refused.
    """

    def __init__(self, path: Path, reserve_bytes: int) -> None:
        self.path = path
        self.reserve_bytes = reserve_bytes

    def free_bytes(self) -> int:
        """Bytes an unprivileged writer could still use on the filesystem of `path`."""
        stats = os.statvfs(self.path)
        return stats.f_bavail * stats.f_frsize

    def check(self) -> None:
        """Raise StorageFullError (503) when less than the reserve is free."""
        if self.reserve_bytes <= 0:
            return
        free = self.free_bytes()
        if free < self.reserve_bytes:
            raise StorageFullError(
                f"the data dir's filesystem has {free // 2**20} MiB free, under the reserve of "
                f"{self.reserve_bytes // 2**20} MiB (XMEMO_DISK_RESERVE_BYTES); writes are refused "
                "until space is freed, reads go on"
            )
