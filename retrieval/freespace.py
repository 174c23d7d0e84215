"""The free-space reserve: writes are refused while the data dir's filesystem is short of space."""

from __future__ import annotations

import os
from pathlib import Path

from .errors import StorageFullError

__all__ = ["FreeSpace"]


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
