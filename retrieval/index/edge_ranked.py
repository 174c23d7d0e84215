"""The ranking fields of an Edge shard's points, kept in memory (index/edge.py): a search asks Edge for
ids and scores only, and reads here what the ranking needs of each hit."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Sequence

from .base import IndexPoint, RankingFields, ranking_fields

__all__ = ["RANKED_LIMIT", "PointKey", "RankedFields", "hit_key", "point_key", "upserted"]

# The points whose ranking fields a shard keeps in memory, the longest kept going first: ~300 bytes
# each, 30 MB at the limit.
RANKED_LIMIT = 100_000

PointKey = int | str  # a point's id as a key: a UUID's 128-bit number (memory ids are UUIDs)


def point_key(point_id: str) -> int | None:
    """The key of the point `point_id` in `RankedFields`; None for an id that is not a UUID (never kept)."""
    try:
        return uuid.UUID(point_id).int
    except ValueError:
        return None


def hit_key(point_id: uuid.UUID | int | str) -> PointKey:
    """The key of a point as Edge returns it (a UUID, or an id that is not one, then never kept)."""
    return point_id.int if isinstance(point_id, uuid.UUID) else point_id


class RankedFields:
    """The ranking fields (base.py RANKING_FIELDS) of a shard's points, kept in memory so that a search
    reads no payload: Edge decodes a point's whole stored payload to hand back any field of it, ~4.5 us
    a hit, 0.45 of the 1.2 ms a two-channel search of 50 + 50 hits took in Edge at 10,000 memories
    (docs/evaluation.md, "Ranking fields in memory"). Keyed by the id as Edge returns it, the value
    is the id's text and the fields, as `IndexHit` takes them.

    One process owns a data dir (storage/data_dir.py) and every write to the shard passes through
    `EdgeIndex._write`, which tells this (`written`) after the shard has it: an upsert's fields are
    known, a payload change or a delete drops the point. A search that missed points reads their
    payloads from the shard and keeps them (`fill`) only if no write came after it started (`writes`):
    a payload read before a write must not outlive it."""

    __slots__ = ("_fields", "_lock", "writes")

    def __init__(self) -> None:
        self._fields: dict[PointKey, tuple[str, RankingFields]] = {}
        self._lock = threading.Lock()
        self.writes = 0

    def entries(self, keys: Iterable[PointKey]) -> dict[PointKey, tuple[str, RankingFields]]:
        """The entries this holds of `keys`."""
        fields = self._fields
        return {key: entry for key in keys if (entry := fields.get(key)) is not None}

    def written(self, known: Iterable[tuple[PointKey, tuple[str, RankingFields]]], dropped: Iterable[PointKey]) -> None:
        with self._lock:
            self.writes += 1
            for key in dropped:
                self._fields.pop(key, None)
            self._keep(known)

    def fill(self, found: Iterable[tuple[PointKey, tuple[str, RankingFields]]], since: int) -> None:
        with self._lock:
            if self.writes == since:
                self._keep(found)

    def _keep(self, entries: Iterable[tuple[PointKey, tuple[str, RankingFields]]]) -> None:
        fields = self._fields
        for key, entry in entries:
            fields.pop(key, None)  # to the back of the line
            fields[key] = entry
        while len(fields) > RANKED_LIMIT:
            del fields[next(iter(fields))]


def upserted(points: Sequence[IndexPoint]) -> list[tuple[PointKey, tuple[str, RankingFields]]]:
    """What an upsert of `points` tells `RankedFields`: each point's fields, its id spelled as a hit's."""
    return [
        (key, (str(uuid.UUID(int=key)), ranking_fields(p.payload)))
        for p in points
        if (key := point_key(p.id)) is not None
    ]
