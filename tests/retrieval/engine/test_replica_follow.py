"""The change sequence a replica's embedded index follows (retrieval/replica.py), with engines in process:
catching up at open (after a stop, after a forget, after the history was pruned), and tailing while open."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import text

from retrieval import Principal, RememberRequest, remember
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
