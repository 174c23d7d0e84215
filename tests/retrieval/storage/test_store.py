"""The system of record, on SQLite and on PostgreSQL alike: migrations recorded, records round-trip,
the unit of work's rules (versions, one active key), index repair after a lag."""

from __future__ import annotations

import dataclasses
import threading

import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import text

from retrieval import (
    ConflictError,
    Memory,
    MemoryStatus,
    MemoryType,
    Principal,
    RememberRequest,
    remember,
)
from retrieval.storage import MIGRATIONS, RECORD_FIELDS, STORE_ONLY, memories, memory_from_row, memory_to_row
from tests.support import pack_for

ALICE = Principal(owner_id="alice")


def test_migrations_are_named_and_recorded_once(make_engine, database_url):
    engine = make_engine(database_url=database_url)
    with engine.store.sql_engine.connect() as connection:
        names = [row[0] for row in connection.execute(text("SELECT name FROM schema_migrations ORDER BY name"))]
    assert names == [name for name, _ in MIGRATIONS]
    engine.close()
    again = make_engine(database_url=database_url)  # reopening applies nothing twice
    with again.store.sql_engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM schema_migrations")).scalar() == len(MIGRATIONS)


def test_sqlite_runs_in_wal_with_a_busy_timeout(make_engine):
    engine = make_engine()
    with engine.store.sql_engine.connect() as connection:
        mode = connection.execute(text("PRAGMA journal_mode")).scalar()
        timeout = connection.execute(text("PRAGMA busy_timeout")).scalar()
    assert mode == "wal" and timeout == 30000


texts = st.text(st.characters(blacklist_categories=("Cs",), blacklist_characters="\x00"), max_size=12)
optional_texts = st.none() | texts
records = st.builds(
    Memory,
    id=st.uuids().map(str),
    owner_id=texts,
    content=texts,
    path=texts,
    type=st.sampled_from(MemoryType),
    bucket=texts,
    scope=texts,
    team_id=optional_texts,
    semantic_key=optional_texts,
    state_key=optional_texts,
    event_type=optional_texts,
    importance=st.floats(0, 1),
    confidence=st.floats(0, 1),
    source=texts,
    session_id=optional_texts,
    metadata=st.dictionaries(texts, st.integers() | texts | st.lists(st.booleans()), max_size=3),
    created_at=texts,
    updated_at=texts,
    occurred_at=texts,
    last_accessed_at=optional_texts,
    access_count=st.integers(0, 2**31 - 1),
    expires_at=optional_texts,
    status=st.sampled_from(MemoryStatus),
    version=st.integers(1, 2**31 - 1),
    derived_from=st.lists(st.uuids().map(str), max_size=3).map(tuple),
    content_sha256=texts,
    context=optional_texts,
)


@hsettings(max_examples=200, deadline=None)
@given(memory=records)
def test_a_record_round_trips_through_its_row(memory):
    """Row and record mappings are derived from Memory's fields: every field goes out and comes back."""
    row = memory_to_row(memory)
    assert set(row) == set(RECORD_FIELDS)
    assert memory_from_row(row) == memory
    shown = memory.to_dict()
    assert set(shown) == set(RECORD_FIELDS) - {"content_sha256"}
    assert shown["type"] == memory.type.value and shown["derived_from"] == list(memory.derived_from)


def test_the_table_has_a_column_per_field_of_the_record():
    assert [c.name for c in memories.columns] == [*RECORD_FIELDS, *STORE_ONLY]
    assert {f.name for f in dataclasses.fields(Memory)} == set(RECORD_FIELDS)


def _keyed(content: str, key: str = "k") -> Memory:
    from retrieval.domain import text_sha256

    return Memory(
        id=__import__("uuid").uuid4().hex[:32],
        owner_id="alice",
        content=content,
        path="p",
        type=MemoryType.SEMANTIC,
        semantic_key=key,
        content_sha256=text_sha256(content),
        created_at="2026-11-29T12:00:00.000000Z",
        updated_at="2026-11-29T12:00:00.000000Z",
        occurred_at="2026-11-29T12:00:00.000000Z",
    )


def test_the_database_refuses_a_second_active_memory_of_one_key(make_engine, database_url):
    engine = make_engine(database_url=database_url)
    with engine.writing() as work:
        work.insert([_keyed("first")])
    with pytest.raises(ConflictError, match="same key"), engine.writing() as work:
        work.insert([_keyed("second")])
    assert engine.store.count() == 1 and engine.index.count() == 1
    with engine.writing() as work:  # another key, or a key no longer active, is fine
        work.insert(
            [_keyed("third", key="other"), dataclasses.replace(_keyed("fourth"), status=MemoryStatus.SUPERSEDED)]
        )
    assert engine.store.count() == 3


def test_a_write_on_a_stale_version_is_a_conflict_and_leaves_nothing(make_engine, database_url):
    engine = make_engine(database_url=database_url)
    stored = remember(engine, ALICE, RememberRequest(content="the deploy runs on fridays", path="p")).memory
    edited = dataclasses.replace(stored, content="the deploy runs on mondays", version=stored.version + 1)
    with engine.writing() as work:
        work.replace(edited, stored.version)
    with pytest.raises(ConflictError, match="changed since it was read"), engine.writing() as work:
        work.insert([_keyed("collateral", key="c")])
        work.replace(dataclasses.replace(stored, content="stale", version=stored.version + 1), stored.version)
    assert engine.store.get(stored.id) == edited and engine.store.count() == 1


def test_a_store_of_the_first_release_is_migrated(tmp_path):
    """A data dir written before m002 gets the audit log's tenancy columns, and keeps its rows."""
    from retrieval.storage import MemoryStore, open_engine, schema_migrations

    path = tmp_path / "memories.sqlite"
    old = open_engine(path)
    with old.begin() as connection:
        schema_migrations.create(connection)
        name, first = MIGRATIONS[0]
        first(connection)
        connection.execute(schema_migrations.insert().values(name=name, applied_at="2026-11-01T00:00:00.000000Z"))
        connection.execute(
            text("INSERT INTO audit_log VALUES ('a1', 't', 'x', 'archive', NULL, '[]', '{}', '{}', 'r')")
        )
    old.dispose()
    store = MemoryStore.open(path)
    with store.sql_engine.connect() as connection:
        columns = [row[1] for row in connection.execute(text("PRAGMA table_info(audit_log)"))]
        kept = connection.execute(text("SELECT id, owner_id, team_id FROM audit_log")).all()
    store.close()
    assert columns[-2:] == ["owner_id", "team_id"] and kept == [("a1", "", None)]


def test_model_name_and_dimension_are_stored(make_engine, database_url):
    engine = make_engine(database_url=database_url)
    assert engine.store.get_meta("embedding_model") == "fake:hash-64"
    assert engine.store.get_meta("embedding_dimension") == "64"


def test_stores_opened_at_once_on_a_new_record_agree_on_one_whole_model_group(tmp_path, database_url):
    """Replicas starting together on a new database each offer their model group; one wins whole, and every
    replica reads that group, never a model name without its sparse encoder (the replicas' start-up race)."""
    from retrieval.storage import MemoryStore

    target = database_url or tmp_path / "memory.db"
    stores = [MemoryStore.open(target) for _ in range(4)]
    for round_ in range(10):
        keys = [f"model{round_}", f"dimension{round_}", f"sparse{round_}"]
        start = threading.Barrier(len(stores))
        seen: list[dict[str, str]] = [{} for _ in stores]

        def offer(i: int, store: MemoryStore, start: threading.Barrier = start, keys: list[str] = keys) -> None:
            start.wait()
            seen[i] = store.ensure_metas({key: f"replica{i}" for key in keys})  # noqa: B023 (joined in this round)

        threads = [threading.Thread(target=offer, args=(i, store)) for i, store in enumerate(stores)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        winner = seen[0][keys[0]]
        assert all(group == {key: winner for key in keys} for group in seen), seen
    for store in stores:
        store.sql_engine.dispose()


def test_record_round_trip(make_engine, database_url):
    engine = make_engine(database_url=database_url)
    result = remember(
        engine,
        ALICE,
        RememberRequest(
            content="héllo wörld ✓", path="a/b", metadata={"k": [1, 2]}, importance=0.7, semantic_key="greeting"
        ),
    )
    stored = engine.store.get(result.memory.id)
    assert stored == result.memory
    assert stored.to_dict()["metadata"] == {"k": [1, 2]}


def test_startup_repairs_an_index_that_lags_sql(make_engine, database_url):
    engine = make_engine(name="lag", database_url=database_url)
    ids = [
        remember(engine, ALICE, RememberRequest(content=f"fact {i} about apples", path="p")).memory.id for i in range(5)
    ]
    # What a crash between the SQL commit and the index write leaves: records the index lacks.
    engine.index.delete(ids[:3])
    with engine.store.sql_engine.begin() as connection:
        connection.execute(
            text("UPDATE memories SET indexed_version = NULL WHERE id IN (:a, :b, :c)"),
            {"a": ids[0], "b": ids[1], "c": ids[2]},
        )
    engine.close()
    reopened = make_engine(name="lag", database_url=database_url)
    assert reopened.index.count() == 5
    if database_url is None:  # a replica of PostgreSQL keeps what its index holds beside it (follow.json)
        assert reopened.store.count_indexed() == 5
    found = {i.id for i in pack_for(reopened, ALICE, "apples", max_items=10).items}
    assert found == set(ids)


def test_startup_reconciles_strays_and_silent_losses(make_engine, database_url):
    engine = make_engine(name="rec", database_url=database_url)
    ids = [remember(engine, ALICE, RememberRequest(content=f"pear fact {i}", path="p")).memory.id for i in range(4)]
    engine.index.delete([ids[0]])  # lost from the index although SQL thinks it is there
    engine.close()
    reopened = make_engine(name="rec", database_url=database_url)
    assert sorted(reopened.index.iter_ids()) == sorted(ids)


def test_a_broken_edge_shard_is_rebuilt_from_sql(make_engine, database_url, tmp_path):
    engine = make_engine(name="broken", database_url=database_url)
    ids = [remember(engine, ALICE, RememberRequest(content=f"plum fact {i}", path="p")).memory.id for i in range(3)]
    engine.close()
    shard = tmp_path / "broken" / "index"
    for path in shard.rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    reopened = make_engine(name="broken", database_url=database_url)
    assert sorted(reopened.index.iter_ids()) == sorted(ids)


def test_data_dir_is_locked_to_one_process(make_engine):
    import pytest

    from retrieval import StoreError

    make_engine(name="locked")
    with pytest.raises(StoreError, match="in use"):
        make_engine(name="locked")
