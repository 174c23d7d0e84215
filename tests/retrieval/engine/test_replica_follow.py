"""The change sequence a replica's embedded index follows (retrieval/replica.py), with engines in process:
catching up at open (after a stop, after a forget, after the history was pruned), and tailing while open."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from retrieval import Principal, RememberRequest, remember
from retrieval.engine import MARK_LIFETIME_SECONDS
from retrieval.usecases import forget_memory
from tests.support import fresh_database

ALICE = Principal(owner_id="alice")


@pytest.fixture
def database():  # type: ignore[no-untyped-def]
    with fresh_database() as url:
        yield url


def _write(engine, count, word="apple"):  # type: ignore[no-untyped-def]
    return [
        remember(engine, ALICE, RememberRequest(content=f"{word} note {i}", path="p")).memory.id for i in range(count)
    ]


def test_a_running_replica_tails_another_ones_writes(make_engine, database):
    a, b = make_engine(name="a", database_url=database), make_engine(name="b", database_url=database)
    ids = _write(a, 5)
    deadline = time.monotonic() + 10
    while b.index.count() != 5:
        assert time.monotonic() < deadline, "replica b never took a's writes"
        time.sleep(0.05)
    assert sorted(b.index.iter_ids()) == sorted(ids)
    forget_memory(a, ALICE, ids[0])
    while b.index.count() != 4:
        assert time.monotonic() < deadline + 10, "replica b never dropped the forgotten memory"
        time.sleep(0.05)


def test_a_replica_catches_up_before_it_opens(make_engine, database):
    a, b = make_engine(name="a", database_url=database), make_engine(name="b", database_url=database)
    _write(a, 3)
    b.close()
    ids = _write(a, 6, word="pear")
    forget_memory(a, ALICE, ids[0])
    again = make_engine(name="b", database_url=database)  # no waiting: open means caught up
    assert sorted(again.index.iter_ids()) == sorted(m.id for m in again.store.iterate())
    assert again.index.count() == 8


@pytest.mark.parametrize("damage", ["pruned", "another store"])
def test_a_mark_that_cannot_be_followed_reindexes_the_record(make_engine, database, tmp_path, damage):
    a, b = make_engine(name="a", database_url=database), make_engine(name="b", database_url=database)
    _write(a, 2)
    b.close()
    _write(a, 4, word="plum")
    if damage == "pruned":  # the history b would need is gone
        with a.store.sql_engine.begin() as connection:
            connection.execute(text("DELETE FROM changes"))
        _write(a, 1, word="fig")
    else:
        mark = tmp_path / "b" / "follow.json"
        mark.write_text(mark.read_text().replace('"store_id": "', '"store_id": "x'))
    again = make_engine(name="b", database_url=database)
    assert sorted(again.index.iter_ids()) == sorted(m.id for m in again.store.iterate())


def _changes(engine) -> list[int]:  # type: ignore[no-untyped-def]
    with engine.store.sql_engine.connect() as connection:
        return [row[0] for row in connection.execute(text("SELECT seq FROM changes ORDER BY seq"))]


def _wait_for(engine, count: int) -> None:  # type: ignore[no-untyped-def]
    """Until the replica's index holds `count` memories and its follower has passed the newest change."""
    deadline = time.monotonic() + 10
    while engine.index.count() != count or engine.follower.seq < engine.store.changes.last():
        assert time.monotonic() < deadline, f"the replica holds {engine.index.count()} of {count}"
        time.sleep(0.05)
    engine.follower.checkpoint()


def test_changes_every_live_replica_passed_are_pruned(make_engine, database):
    """Review finding: `changes` grew by one row per write, forever. Each replica reports its saved mark;
    what every live one has passed goes (the newest change stays: it says how far the sequence went)."""
    a, b = make_engine(name="a", database_url=database), make_engine(name="b", database_url=database)
    _write(a, 6)
    _wait_for(b, 6)
    _wait_for(a, 6)
    assert len(_changes(a)) == 6
    b.follower.report()
    assert a.follower.report() == 5 and _changes(a) == [a.store.changes.last()]
    assert a.follower.replica_id != b.follower.replica_id
    # b stops but reported of late: the changes after its mark stay for it, and it replays them.
    b.close()
    ids = _write(a, 3, word="pear")
    forget_memory(a, ALICE, ids[0])
    _wait_for(a, 8)
    a.follower.report()
    assert len(_changes(a)) == 4 and _changes(a)[0] == b.follower.saved_seq + 1
    again = make_engine(name="b", database_url=database)
    assert again.follower.replica_id == b.follower.replica_id
    assert sorted(again.index.iter_ids()) == sorted(m.id for m in again.store.iterate())
    # Tailing goes on over the pruned sequence.
    _write(a, 2, word="plum")
    _wait_for(again, 10)
    again.follower.report()
    _wait_for(a, 10)
    a.follower.report()
    assert _changes(a) == [a.store.changes.last()]


def test_a_replica_silent_past_the_lifetime_is_pruned_past_and_reindexes(make_engine, database):
    a, b = make_engine(name="a", database_url=database), make_engine(name="b", database_url=database)
    _write(a, 2)
    _wait_for(b, 2)
    b.close()
    _write(a, 4, word="plum")
    _wait_for(a, 6)
    a.follower.report()
    assert len(_changes(a)) == 4  # b's mark holds them
    with a.store.sql_engine.begin() as connection:  # b has not reported for longer than the lifetime
        connection.execute(
            text("UPDATE replica_marks SET seen_at = seen_at - :age WHERE replica_id = :id"),
            {"age": MARK_LIFETIME_SECONDS + 60, "id": b.follower.replica_id},
        )
    assert a.follower.report() == 3 and len(_changes(a)) == 1
    _write(a, 1, word="fig")
    again = make_engine(name="b", database_url=database)
    assert sorted(again.index.iter_ids()) == sorted(m.id for m in again.store.iterate())
    assert again.index.count() == 7
