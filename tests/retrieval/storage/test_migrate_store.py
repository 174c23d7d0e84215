"""`xmemo migrate-store`: a SQLite store moved into PostgreSQL with its ids, versions, audit and keys,
counts checked, safe to run again; the moved store then serves recall on PostgreSQL."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from retrieval import MemoryStatus, Principal, RememberRequest, remember
from retrieval.usecases import edit_memory, set_status
from service.api_keys import KeyStore
from service.cli import cli
from tests.support import fresh_database, pack_for

ALICE = Principal(owner_id="alice", agent_id="a1")


@pytest.fixture
def target():  # type: ignore[no-untyped-def]
    with fresh_database() as url:
        yield url


def _migrate(data_dir, url):  # type: ignore[no-untyped-def]
    result = CliRunner().invoke(cli, ["--data-dir", str(data_dir), "migrate-store", "--to", url, "--json"])
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


def test_a_sqlite_store_moves_into_postgresql_and_a_second_run_adds_nothing(make_engine, tmp_path, target):
    source = make_engine(name="source")
    written = [
        remember(source, ALICE, RememberRequest(content=f"the staging cluster runs kafka {i}", path="ops"))
        for i in range(7)
    ]
    keyed = remember(source, ALICE, RememberRequest(content="deploys on friday", path="ops", semantic_key="deploy"))
    remember(source, ALICE, RememberRequest(content="deploys on monday", path="ops", semantic_key="deploy"))
    set_status(source, ALICE, written[0].memory.id, MemoryStatus.ARCHIVED)
    edit_memory(source, ALICE, written[1].memory.id, 1, {"content": "the staging cluster runs redpanda"})
    issued = KeyStore.open(tmp_path / "source").create("alice", agent_id="a1")
    source.close()

    first = _migrate(tmp_path / "source", target)
    assert first["complete"] is True
    assert first["memories"] == {"inserted": 9, "updated": 0, "source": 9, "in_target": 9}
    # archive, edit, and the supersession's two (the old record's supersede, the new one's create)
    assert first["audit"] == {"copied": 4, "source": 4, "in_target": 4}
    assert first["keys"] == {"copied": 1, "source": 1, "in_target": 1}
    assert first["embeddings"]["copied"] >= 9

    again = _migrate(tmp_path / "source", target)
    assert again["memories"]["inserted"] == 0 and again["memories"]["updated"] == 0
    assert again["audit"]["copied"] == 0 and again["keys"]["copied"] == 0 and again["complete"] is True

    reopened = make_engine(name="source")  # the source changes; the next run brings the change along
    edit_memory(reopened, ALICE, written[2].memory.id, 1, {"importance": 0.9})
    reopened.close()
    third = _migrate(tmp_path / "source", target)
    assert third["memories"]["updated"] == 1 and third["audit"]["copied"] == 1 and third["complete"] is True

    moved = make_engine(name="replica", database_url=target)
    assert moved.store.count() == 9 and moved.index.count() == 9
    assert moved.store.get(written[1].memory.id).version == 2
    assert moved.store.get(keyed.memory.id).status == MemoryStatus.SUPERSEDED
    assert moved.store.get(written[2].memory.id).importance == 0.9
    found = {item.id for item in pack_for(moved, ALICE, "which streaming platform runs on staging").items}
    assert written[1].memory.id in found and written[0].memory.id not in found
    keys = KeyStore.open(tmp_path / "replica", target)
    assert keys.resolve(issued.key)[1].owner_id == "alice"
    keys.close()


def test_migrate_store_refuses_a_target_that_is_not_postgresql(tmp_path):
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path), "migrate-store", "--to", "mysql://x/y"])
    assert result.exit_code == 1 and "--to must start with" in result.output


def test_a_record_postgresql_cannot_hold_is_named_by_id_and_its_content_never_printed(make_engine, tmp_path, target):
    """Before: a NUL written through SQLite stopped migrate-store at its batch and printed the raw rows,
    other tenants' content included, to stderr."""
    source = make_engine(name="source")
    remember(source, ALICE, RememberRequest(content="the staging cluster runs kafka", path="ops"))
    bad = remember(source, ALICE, RememberRequest(content="secret-of-bob rotates weekly", path="ops")).memory.id
    with source.store.sql_engine.begin() as connection:  # written before writes refused the character
        connection.exec_driver_sql("UPDATE memories SET content = 'secret-of-bob' || char(0) WHERE id = ?", (bad,))
    source.close()
    result = CliRunner().invoke(cli, ["--data-dir", str(tmp_path / "source"), "migrate-store", "--to", target])
    assert result.exit_code != 0 and bad in result.output and "NUL" in result.output
    assert "secret-of-bob" not in result.output
