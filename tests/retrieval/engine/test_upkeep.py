"""The embedded index is rebuilt beside the one in use (engine/upkeep.py): a real child process builds
the next generation from the record while writes go on, `install` replays them, and a hard forget's
vectors leave the disk with the old generation."""

from __future__ import annotations

import os
import shutil
import signal
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, remember
from retrieval.domain import embed_digest, embedding_text
from retrieval.engine import MIN_FRESH, IndexUpkeep, allocated_bytes, index_layout
from retrieval.index import EdgeIndex
from retrieval.usecases import forget_memory
from tests.support import fresh_database, in_process

ALICE = Principal.local("alice")


def _remember(engine: MemoryEngine, text: str) -> str:
    return remember(engine, ALICE, RememberRequest(content=text, path="notes")).memory.id


def _upkeep(engine: MemoryEngine) -> IndexUpkeep:
    return IndexUpkeep(lambda: engine.index, engine.settings, engine.embedder.name, index_layout(engine.settings))


def _shard_bytes(data_dir: Path) -> bytes:
    return b"".join(p.read_bytes() for p in data_dir.glob("index*/**/*") if p.is_file())


def _wait_until_rebuilding(index: EdgeIndex, worker: threading.Thread) -> None:
    deadline = time.monotonic() + 30
    while not index.rebuilding and worker.is_alive():
        assert time.monotonic() < deadline, "the rebuild never started"
        time.sleep(0.005)


def test_writes_made_during_a_rebuild_reach_the_new_generation(tmp_path, fake_embedder):
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        before = [_remember(engine, f"note {n} about the harbour crane schedule") for n in range(60)]
        index = engine.index
        assert isinstance(index, EdgeIndex) and index.path == tmp_path / "index"
        upkeep = _upkeep(engine)
        reports: list[object] = []
        worker = threading.Thread(target=lambda: reports.append(upkeep.rebuild()))
        worker.start()
        _wait_until_rebuilding(index, worker)
        during = [_remember(engine, f"note {n} written while the child builds") for n in range(20)]
        forget_memory(engine, ALICE, before[0])
        worker.join()
        report = reports[0]
        assert isinstance(report, dict) and report["replayed"] >= 21, report
        assert index.path == tmp_path / "index.2" and not (tmp_path / "index").exists()
        assert (tmp_path / "index.current").read_text().strip() == "index.2"
        expected = set(before[1:]) | set(during)
        assert set(index.iter_ids()) == expected == {m.id for m in engine.store.iterate()}
        assert index.writes_since_build == 21  # the 20 upserts replayed and the delete
        vector = engine.vectors_for([engine.store.get(during[-1])])[0]
        assert during[-1] in index.dense_scores(vector, [during[-1]])
    with MemoryEngine(settings, embedder=fake_embedder) as engine:  # the next start opens the new generation
        assert engine.index.path == tmp_path / "index.2"
        assert set(engine.index.iter_ids()) == expected


def test_a_hard_forget_leaves_the_disk_with_the_old_generation(tmp_path, fake_embedder):
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        for n in range(30):
            _remember(engine, f"filler note {n} on the quarterly budget review")
        secret = _remember(engine, "the vault combination is kept under the blue lamp")
        vector = engine.vectors_for([engine.store.get(secret)])[0].astype(np.float16).tobytes()  # as the shard keeps it
        engine.index.flush()
        assert vector in _shard_bytes(tmp_path)  # what the check below could find
        engine.start_upkeep()
        forget_memory(engine, ALICE, secret)
        assert secret not in set(engine.index.iter_ids())  # out of every search at once
        assert engine.upkeep is not None
        deadline = time.monotonic() + 60
        while not engine.upkeep.builds:
            assert time.monotonic() < deadline, "no rebuild followed the forget"
            time.sleep(0.05)
        engine.index.sweep()
        assert vector not in _shard_bytes(tmp_path)


def test_a_killed_build_leaves_the_shard_in_use_serving(tmp_path, fake_embedder):
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        ids = [_remember(engine, f"note {n} on the night ferry timetable") for n in range(40)]
        index = engine.index
        assert isinstance(index, EdgeIndex)
        upkeep = _upkeep(engine)
        errors: list[BaseException] = []

        def run() -> None:
            try:
                upkeep.rebuild()
            except RuntimeError as error:
                errors.append(error)

        worker = threading.Thread(target=run)
        worker.start()
        _wait_until_rebuilding(index, worker)
        while upkeep.child_pid is None and worker.is_alive():
            time.sleep(0.005)
        os.kill(upkeep.child_pid, signal.SIGKILL)
        worker.join()
        assert errors and "exited with -9" in str(errors[0])
        assert not index.rebuilding and index.path == tmp_path / "index"
        assert not (tmp_path / "index.2").exists()
        late = _remember(engine, "written after the failed build")
        assert set(index.iter_ids()) == {*ids, late}


def test_a_generation_left_by_a_crash_is_removed_at_the_next_start(tmp_path, fake_embedder):
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        kept = _remember(engine, "a note that survives")
    half_built = tmp_path / "index.2"
    (half_built / "segments").mkdir(parents=True)
    (half_built / "segments" / "partial").write_bytes(b"\0" * 64)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        assert engine.index.path == tmp_path / "index" and not half_built.exists()
        assert set(engine.index.iter_ids()) == {kept}


@pytest.mark.parametrize("pointer", ["index.9", "", "../elsewhere"])
def test_a_pointer_to_no_generation_opens_the_first(tmp_path, fake_embedder, pointer):
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        kept = _remember(engine, "a note in the first generation")
    (tmp_path / "index.current").write_text(pointer)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        assert engine.index.path == tmp_path / "index"
        assert set(engine.index.iter_ids()) == {kept}


def test_a_rebuild_is_due_past_two_thousand_new_points_and_a_tenth_of_the_shard(tmp_path, fake_embedder):
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        index = engine.index
        assert isinstance(index, EdgeIndex)
        upkeep = _upkeep(engine)
        assert not upkeep.due()
        points = engine.feed.points(
            [remember(engine, ALICE, RememberRequest(content=f"note {n}", path="n")).memory for n in range(3)]
        )
        index.writes_since_build = MIN_FRESH - 1
        assert not upkeep.due()
        index.writes_since_build = MIN_FRESH
        assert upkeep.due()  # 2,000 new of 3 points
        assert points and index.count() == 3
        upkeep.after_forget()
        index.writes_since_build = 0
        assert upkeep.due()  # a forget wants its vectors off the disk, however few points came


def test_the_build_encodes_what_the_cache_lacks_and_never_writes_the_cache(tmp_path):
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path)) as engine:  # the real model, in both processes
        ids = [_remember(engine, f"the {word} order shipped on monday") for word in ("red", "blue", "green")]
        lost = engine.store.get(ids[0])
        digest = embed_digest(lost)
        engine.embedder.cache.delete_many([digest])
        report = _upkeep(engine).rebuild()
        assert report is not None and report["points"] == 3
        assert engine.embedder.cached_vectors([digest]) == {}
        vector = engine.embedder.embed([embedding_text(lost)])[0]
        assert engine.index.dense_scores(vector, [ids[0]])[ids[0]] > 0.99


def test_xmemo_serve_runs_the_upkeep_unless_it_is_turned_off(tmp_path):
    with in_process(tmp_path / "on") as app:
        assert app.engine.upkeep is not None and app.engine.upkeep.running
    assert not app.engine.upkeep.running  # stopped with the engine
    with in_process(tmp_path / "off", index_upkeep=False) as app:
        assert app.engine.upkeep is None


def test_the_room_a_rebuild_needs_counts_the_blocks_the_shard_takes_not_its_sparse_size(tmp_path, fake_embedder):
    """Before: the check before a rebuild summed the apparent size of Edge's sparse files (245 MiB for
    79 points), and refused a rebuild the disk had room for."""
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        for n in range(20):
            _remember(engine, f"note {n} on the lighthouse keeper's log")
        engine.index.flush()
        shard = engine.index.path
        apparent = sum(f.stat().st_size for f in shard.rglob("*") if f.is_file())
        taken = allocated_bytes(shard)
        assert taken * 8 < apparent, (taken, apparent)  # the files are sparse: what this test is about
        # a reserve that leaves room for two shards of their blocks, not for two of their apparent size
        reserve = shutil.disk_usage(tmp_path).free - (apparent + taken)
        settings = engine.settings.model_copy(update={"disk_reserve_bytes": reserve})
        upkeep = IndexUpkeep(lambda: engine.index, settings, engine.embedder.name, index_layout(settings))
        report = upkeep.rebuild()
        assert report is not None and report["points"] == 20


def _payload_marks(data_dir: Path) -> list[str]:
    """Which of a forgotten memory's payload values (path, semantic_key, speaker) the shard files hold."""
    held = _shard_bytes(data_dir)
    return [mark for mark in ("vault-7731/blue", "combo-7731-key", "Quartermaster7731") if mark.encode() in held]


def _secret(engine: MemoryEngine) -> str:
    request = RememberRequest(
        content="the combination is under the lamp",
        path="vault-7731/blue",
        semantic_key="combo-7731-key",
        speaker="Quartermaster7731",
    )
    return remember(engine, ALICE, request).memory.id


def _wait_for_build(engine: MemoryEngine, what: str) -> None:
    assert engine.upkeep is not None
    deadline = time.monotonic() + 60
    while not engine.upkeep.builds:
        assert time.monotonic() < deadline, f"no rebuild {what}"
        time.sleep(0.05)
    engine.index.sweep()


def test_a_forget_whose_rebuild_never_finished_is_purged_after_a_restart(tmp_path, fake_embedder):
    """Before: the pending forget was held in memory only; the next server never rebuilt for it."""
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        for n in range(10):
            _remember(engine, f"filler note {n} on the harbour")
        secret = _secret(engine)
        engine.index.flush()
        assert len(_payload_marks(tmp_path)) == 3  # what the check below could find
        engine.start_upkeep()
        forget_memory(engine, ALICE, secret)
    # closed at once: the rebuild the forget asked for was stopped (its child killed) before it installed
    assert _payload_marks(tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        engine.start_upkeep()
        _wait_for_build(engine, "after the restart")
        assert _payload_marks(tmp_path) == []
    with MemoryEngine(settings, embedder=fake_embedder) as engine:  # covered now: no rebuild is due
        engine.start_upkeep()
        assert engine.upkeep is not None and not engine.upkeep.due()


def test_a_forget_whose_rebuild_was_refused_for_room_is_purged_after_a_restart(tmp_path, fake_embedder, caplog):
    """Before: a rebuild refused for want of room dropped the pending forget with the process."""
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        for n in range(10):
            _remember(engine, f"filler note {n} on the harbour")
        secret = _secret(engine)
        engine.index.flush()
        # the upkeep sees a disk whose reserve leaves no room for a second shard (writes keep theirs)
        engine.settings = settings.model_copy(update={"disk_reserve_bytes": shutil.disk_usage(tmp_path).free})
        engine.start_upkeep()
        forget_memory(engine, ALICE, secret)
        deadline = time.monotonic() + 60
        while "a rebuild needs" not in caplog.text:
            assert time.monotonic() < deadline, "the rebuild was never refused for room"
            time.sleep(0.05)
        assert engine.upkeep is not None and not engine.upkeep.builds
    assert _payload_marks(tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        engine.start_upkeep()
        _wait_for_build(engine, "after the restart")
        assert _payload_marks(tmp_path) == []


def test_a_forget_through_one_replica_purges_every_replicas_files(make_engine, tmp_path):
    """Before: on a shared PostgreSQL record only the replica that took the forget rebuilt its index; the
    other deleted the point and kept its payload in its files."""
    with fresh_database() as url:
        a, b = make_engine(name="a", database_url=url), make_engine(name="b", database_url=url)
        secret = _secret(a)
        deadline = time.monotonic() + 30
        while secret not in set(b.index.iter_ids()):
            assert time.monotonic() < deadline, "replica b never took a's write"
            time.sleep(0.05)
        b.index.flush()
        assert len(_payload_marks(tmp_path / "b")) == 3
        a.start_upkeep()
        b.start_upkeep()
        forget_memory(a, ALICE, secret)
        _wait_for_build(a, "on the replica that took the forget")
        _wait_for_build(b, "on the other replica")
        assert _payload_marks(tmp_path / "a") == [] and _payload_marks(tmp_path / "b") == []
        a.close()
        b.close()


def test_a_reindex_covers_the_forgets_before_it(tmp_path, fake_embedder):
    """Before: `xmemo reindex` left index.purged behind, so the next server rebuilt once more for
    forgets the reindexed generation never held."""
    settings = RetrievalSettings(data_dir=tmp_path)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        _remember(engine, "filler note on the harbour")
        forget_memory(engine, ALICE, _secret(engine))
        engine.reindex()
        assert isinstance(engine.index, EdgeIndex)
        assert IndexUpkeep.purged(engine.index) == engine.store.forget_count() == 1
        assert not _upkeep(engine).due()
