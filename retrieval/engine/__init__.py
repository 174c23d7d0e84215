"""The memory engine: the stores of one data dir kept in step, a replica's follower, read tracking,
and the index upkeep of a long-running server."""

from .memory_engine import INDEX_BATCH, LAYOUT_KEY, MemoryEngine, index_layout
from .read_tracking import FLUSH_EVERY_READS, FLUSH_EVERY_SECONDS, ReadTracker
from .replica import MARK_LIFETIME_SECONDS, POLL_SECONDS, ChangeFollower, FollowedEngine, HeldVersions
from .upkeep import FRESH_FRACTION, MIN_FRESH, IndexUpkeep, allocated_bytes

__all__ = [
    "FLUSH_EVERY_READS",
    "FLUSH_EVERY_SECONDS",
    "FRESH_FRACTION",
    "INDEX_BATCH",
    "LAYOUT_KEY",
    "MARK_LIFETIME_SECONDS",
    "MIN_FRESH",
    "POLL_SECONDS",
    "ChangeFollower",
    "FollowedEngine",
    "HeldVersions",
    "IndexUpkeep",
    "MemoryEngine",
    "ReadTracker",
    "allocated_bytes",
    "index_layout",
]
