"""The system of record: migrations recorded, WAL, records round-trip, index repair after a lag."""

from __future__ import annotations

from sqlalchemy import text

from retrieval import Principal, RememberRequest, recall_context, remember
from retrieval.schema import MIGRATIONS

ALICE = Principal(owner_id="alice")


def test_migrations_are_named_and_recorded_once(make_engine):
    engine = make_engine()
    with engine.store.engine.connect() as connection:
        names = [row[0] for row in connection.execute(text("SELECT name FROM schema_migrations ORDER BY name"))]
        mode = connection.execute(text("PRAGMA journal_mode")).scalar()
        timeout = connection.execute(text("PRAGMA busy_timeout")).scalar()
    assert names == [name for name, _ in MIGRATIONS]
    assert mode == "wal" and timeout == 30000
    engine.close()
    again = make_engine()  # reopening applies nothing twice
    with again.store.engine.connect() as connection:
        assert connection.execute(text("SELECT count(*) FROM schema_migrations")).scalar() == len(MIGRATIONS)


def test_a_store_of_the_first_release_is_migrated(tmp_path):
    """A data dir written before m002 gets the audit log's tenancy columns, and keeps its rows."""
    from retrieval.schema import open_engine, schema_migrations
    from retrieval.store import MemoryStore

    path = tmp_path / "memories.sqlite"
    old = open_engine(path)
    with old.begin() as connection:
        schema_migrations.create(connection)
        name, first = MIGRATIONS[0]
        first(connection)
        connection.execute(schema_migrations.insert().values(name=name, applied_at="2026-11-01T00:00:00.000000Z"))
        connection.execute(text("INSERT INTO audit_log VALUES ('a1', 't', 'x', 'archive', NULL, '[]', '{}', '{}', 'r')"))
    old.dispose()
    store = MemoryStore.open(path)
    with store.engine.connect() as connection:
        columns = [row[1] for row in connection.execute(text("PRAGMA table_info(audit_log)"))]
        kept = connection.execute(text("SELECT id, owner_id, team_id FROM audit_log")).all()
    store.close()
    assert columns[-2:] == ["owner_id", "team_id"] and kept == [("a1", "", None)]


def test_model_name_and_dimension_are_stored(make_engine):
    engine = make_engine()
    assert engine.store.get_meta("embedding_model") == "fake:hash-64"
    assert engine.store.get_meta("embedding_dimension") == "64"


def test_record_round_trip(make_engine):
    engine = make_engine()
    result = remember(engine, ALICE, RememberRequest(content="héllo wörld ✓", path="a/b", metadata={"k": [1, 2]},
                                                    importance=0.7, semantic_key="greeting"))
    stored = engine.store.get(result.memory.id)
    assert stored == result.memory
    assert stored.to_dict()["metadata"] == {"k": [1, 2]}


def test_startup_repairs_an_index_that_lags_sql(make_engine):
    engine = make_engine(name="lag")
    ids = [remember(engine, ALICE, RememberRequest(content=f"fact {i} about apples", path="p")).memory.id
           for i in range(5)]
    # What a crash between the SQL commit and the index write leaves: records the index lacks.
    engine.index.delete(ids[:3])
    with engine.store.engine.begin() as connection:
        connection.execute(text("UPDATE memories SET indexed_version = NULL WHERE id IN (:a, :b, :c)"),
                           {"a": ids[0], "b": ids[1], "c": ids[2]})
    engine.close()
    reopened = make_engine(name="lag")
    assert reopened.index.count() == 5
    assert reopened.store.count_indexed() == 5
    found = {i["id"] for i in recall_context(reopened, ALICE, "apples", max_items=10)["items"]}
    assert found == set(ids)


def test_startup_reconciles_strays_and_silent_losses(make_engine):
    engine = make_engine(name="rec")
    ids = [remember(engine, ALICE, RememberRequest(content=f"pear fact {i}", path="p")).memory.id for i in range(4)]
    engine.index.delete([ids[0]])  # lost from the index although SQL thinks it is there
    engine.close()
    reopened = make_engine(name="rec")
    assert sorted(reopened.index.iter_ids()) == sorted(ids)


def test_a_broken_edge_shard_is_rebuilt_from_sql(make_engine, tmp_path):
    engine = make_engine(name="broken")
    ids = [remember(engine, ALICE, RememberRequest(content=f"plum fact {i}", path="p")).memory.id for i in range(3)]
    engine.close()
    shard = tmp_path / "broken" / "index"
    for path in shard.rglob("*"):
        if path.is_file():
            path.write_bytes(b"garbage")
    reopened = make_engine(name="broken")
    assert sorted(reopened.index.iter_ids()) == sorted(ids)


def test_data_dir_is_locked_to_one_process(make_engine):
    import pytest

    from retrieval import StoreError

    make_engine(name="locked")
    with pytest.raises(StoreError, match="in use"):
        make_engine(name="locked")
