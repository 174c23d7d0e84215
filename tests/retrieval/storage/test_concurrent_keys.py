"""Concurrent `semantic_key` writers on replicas of one PostgreSQL store leave exactly one active version.

Each replica is a real engine with its own data dir and embedded index (its own write lock, so the
writers meet only in the database). Whatever the writers' contents and interleaving, the database's
partial unique index and the version checks leave one active memory per key, its content one that a
writer sent, and behind it one superseded record per supersede.
"""

from __future__ import annotations

import threading
import uuid

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from retrieval import MemoryStatus, Principal, RememberRequest, remember
from tests.support import FakeEmbedder, fresh_database

ALICE = Principal(owner_id="alice")


@pytest.fixture(scope="module")
def replicas(tmp_path_factory):  # type: ignore[no-untyped-def]
    from retrieval import MemoryEngine
    from tests.support import settings_for

    with fresh_database() as url:
        root = tmp_path_factory.mktemp("keys")
        engines = [MemoryEngine(settings_for(root / f"r{i}", "edge", url), embedder=FakeEmbedder()) for i in range(3)]
        yield engines
        for engine in engines:
            engine.close()


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    contents=st.lists(
        st.sampled_from(["ship on friday", "ship on monday", "ship when green", "freeze"]), min_size=2, max_size=8
    )
)
def test_concurrent_keyed_writers_leave_one_active_version(replicas, contents):
    key = f"release-{uuid.uuid4().hex}"
    start = threading.Barrier(len(contents))
    outcomes: list[str] = []
    errors: list[BaseException] = []

    def write(number: int, content: str) -> None:
        engine = replicas[number % len(replicas)]
        start.wait()
        try:
            result = remember(engine, ALICE, RememberRequest(content=content, path="p", semantic_key=key))
            outcomes.append(result.outcome)
        except BaseException as error:
            errors.append(error)

    threads = [threading.Thread(target=write, args=(i, c)) for i, c in enumerate(contents)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    with replicas[0].store.sql_engine.connect() as connection:
        rows = connection.execute(
            text("SELECT content, status, version FROM memories WHERE semantic_key = :k"), {"k": key}
        ).all()
    active = [row for row in rows if row.status == MemoryStatus.ACTIVE.value]
    assert len(active) == 1
    assert active[0].content in contents
    assert active[0].version == len(rows)  # each supersede made exactly one new version
    assert len(rows) == 1 + outcomes.count("superseded")
