"""The change sequence of a shared PostgreSQL record: every committed change numbered (the unit of work
appends it, storage/unit_of_work.py), each replica's mark of how far its index has followed, and the
pruning of what every replica has passed (engine/replica.py follows it)."""

from __future__ import annotations

from sqlalchemy import Engine, delete, func, select, text
from sqlalchemy.dialects.postgresql import insert as postgresql_insert
from sqlalchemy.engine import Connection

from .schema import changes, replica_marks

__all__ = ["PRUNE_LOCK", "ChangeFeed"]

# The advisory lock of pruning the change sequence and of a replica taking its place in it (ChangeFeed.hold).
PRUNE_LOCK = 0x786D656D6F02


def _save_mark(connection: Connection, replica_id: str, seq: int) -> None:
    statement = postgresql_insert(replica_marks).values(
        replica_id=replica_id, seq=seq, seen_at=func.extract("epoch", func.now())
    )
    connection.execute(
        statement.on_conflict_do_update(
            index_elements=[replica_marks.c.replica_id],
            set_={"seq": statement.excluded.seq, "seen_at": statement.excluded.seen_at},
        )
    )


class ChangeFeed:
    """The change sequence of one database (PostgreSQL only: an embedded store has one process)."""

    def __init__(self, sql_engine: Engine) -> None:
        self.sql_engine = sql_engine

    def after(self, seq: int, limit: int) -> list[tuple[int, str, int | None]]:
        """(seq, memory id, version) of the changes numbered after `seq`, in order; version None is a
        forget or a context rewrite (the index must take the row, or its absence, whatever it holds)."""
        c = changes.c
        with self.sql_engine.connect() as connection:
            rows = connection.execute(
                select(c.seq, c.memory_id, c.version).where(c.seq > seq).order_by(c.seq).limit(limit)
            )
            return [(int(row[0]), row[1], row[2]) for row in rows]

    def last(self) -> int:
        """The number of the newest change (0 when there is none)."""
        with self.sql_engine.connect() as connection:
            return int(connection.execute(select(func.coalesce(func.max(changes.c.seq), 0))).scalar_one())

    def hold(self, replica_id: str, seq: int) -> int:
        """Record that `replica_id` has followed the sequence to `seq`, and return the number of the oldest
        change kept, under the lock pruning takes: from here on, nothing after `seq` is pruned until the
        mark is older than a pruning's lifetime, and a return above `seq + 1` means changes it needs are gone."""
        with self.sql_engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PRUNE_LOCK})
            _save_mark(connection, replica_id, seq)
            return int(connection.execute(select(func.coalesce(func.min(changes.c.seq), 0))).scalar_one())

    def save_mark(self, replica_id: str, seq: int) -> None:
        """`replica_id`'s index holds every change up to `seq`; now, by the database's clock."""
        with self.sql_engine.begin() as connection:
            _save_mark(connection, replica_id, seq)

    def prune(self, lifetime_seconds: float) -> int:
        """Delete the changes every replica that reported within `lifetime_seconds` has passed, keeping the
        newest (it says how far the sequence went), and the marks older than that; returns the changes
        deleted. A replica silent for longer finds its mark behind the oldest change and reindexes."""
        m, c = replica_marks.c, changes.c
        live = m.seen_at > func.extract("epoch", func.now()) - lifetime_seconds
        with self.sql_engine.begin() as connection:
            connection.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": PRUNE_LOCK})
            passed = connection.execute(select(func.min(m.seq)).where(live)).scalar_one()
            if passed is None:
                return 0
            newest = select(func.max(c.seq)).scalar_subquery()
            deleted = connection.execute(delete(changes).where(c.seq <= passed, c.seq < newest)).rowcount
            connection.execute(delete(replica_marks).where(~live))
            return int(deleted)
