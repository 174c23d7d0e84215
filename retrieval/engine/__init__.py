"""The memory engine: the stores of one data dir kept in step, a replica's follower, read tracking."""

from .memory_engine import INDEX_BATCH, LAYOUT_KEY, MemoryEngine, index_layout
from .read_tracking import FLUSH_EVERY_READS, FLUSH_EVERY_SECONDS, ReadTracker
from .replica import MARK_LIFETIME_SECONDS, POLL_SECONDS, ChangeFollower, FollowedEngine, HeldVersions

__all__ = [
    "FLUSH_EVERY_READS",
    "FLUSH_EVERY_SECONDS",
    "INDEX_BATCH",
    "LAYOUT_KEY",
    "MARK_LIFETIME_SECONDS",
    "POLL_SECONDS",
    "ChangeFollower",
    "FollowedEngine",
    "HeldVersions",
    "MemoryEngine",
    "ReadTracker",
    "index_layout",
]
