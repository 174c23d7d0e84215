"""Lifecycle formulas: expiry, importance decay and archiving, as pure functions of a memory and `now`.

    idle_days   = days since last access (or since creation, if never read)
    decayed     = max(floor, base * 2 ** (-idle_days / half_life))      base = importance before any decay
    decay       when decayed <= importance - min_change                 (never raises importance)
    archive     when decayed < archive_importance and idle_days >= archive_idle_days
    expire      when expires_at <= now

Pinned memories (metadata.pinned is true), memories with confidence >= protect_confidence and
`identity` memories are protected from decay and archive. The base importance is kept in
metadata.importance_base at the first decay, so that decay is a function of idleness alone: running
it twice at the same clock changes nothing, and it never falls as a memory is read again.
"""

from __future__ import annotations

from datetime import datetime

from retrieval import Memory, MemoryType
from retrieval.domain import parse_time

from .settings import ReflectSettings

__all__ = [
    "BASE_KEY",
    "base_importance",
    "decayed_importance",
    "idle_days",
    "is_expired",
    "is_protected",
    "should_archive",
]

BASE_KEY = "importance_base"
SECONDS_PER_DAY = 86_400.0


def idle_days(memory: Memory, now: datetime) -> float:
    """Days since the memory was last read, else since it was created; never negative."""
    since = parse_time(memory.last_accessed_at or memory.created_at)
    return max(0.0, (now - since).total_seconds() / SECONDS_PER_DAY)


def is_protected(memory: Memory, settings: ReflectSettings) -> bool:
    return (
        memory.metadata.get("pinned") is True
        or memory.confidence >= settings.protect_confidence
        or memory.type == MemoryType.IDENTITY
    )


def base_importance(memory: Memory) -> float:
    base = memory.metadata.get(BASE_KEY)
    if isinstance(base, (int, float)) and not isinstance(base, bool) and 0.0 <= base <= 1.0:
        return max(float(base), memory.importance)
    return memory.importance


def decayed_importance(memory: Memory, now: datetime, settings: ReflectSettings) -> float:
    """The importance idleness leaves: halves every half-life, bounded below by the floor (and by
    nothing above the current value's base). Rounded to 4 places so stored values stay readable."""
    base = base_importance(memory)
    lowest = min(settings.decay_floor, base)
    factor = 2.0 ** (-idle_days(memory, now) / settings.decay_half_life_days)
    return float(min(base, max(lowest, round(base * factor, 4))))


def is_expired(memory: Memory, now: datetime) -> bool:
    return memory.expires_at is not None and parse_time(memory.expires_at) <= now


def should_archive(memory: Memory, now: datetime, settings: ReflectSettings) -> bool:
    return (
        not is_protected(memory, settings)
        and decayed_importance(memory, now, settings) < settings.archive_importance
        and idle_days(memory, now) >= settings.archive_idle_days
    )
