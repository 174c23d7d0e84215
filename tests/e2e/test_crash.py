"""SIGKILL in the middle of an import or a reflect run loses nothing committed and leaves nothing
partial; restart repairs the index."""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import time
import uuid

import pytest

from eval.bench import synthetic_memories
from retrieval import MemoryEngine, Principal, RetrievalSettings, import_records
from tests.support import pack_for, search_for

TOTAL = 5000
KILL_AFTER = 1200
SINCE = "1900-01-01T00:00:00Z"


def _committed_ids(db_path) -> set[str]:  # type: ignore[no-untyped-def]
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return {row[0] for row in connection.execute("SELECT id FROM memories")}
    except sqlite3.OperationalError:  # the schema is not there yet
        return set()
    finally:
        connection.close()


@pytest.mark.slow
def test_sigkill_during_import_loses_nothing_committed(tmp_path, real_embedder):
    lines = synthetic_memories(TOTAL, seed=5)
    for i, line in enumerate(lines):
        line["id"] = str(uuid.UUID(int=i + 1))
    source = tmp_path / "memories.jsonl"
    source.write_text("".join(json.dumps(line) + "\n" for line in lines))
    data_dir = tmp_path / "data"
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "--data-dir",
            str(data_dir),
            "import",
            "--owner",
            "alice",
            "--batch-size",
            "128",
            str(source),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    db_path = data_dir / "memories.sqlite"
    deadline = time.monotonic() + 300
    committed: set[str] = set()
    while time.monotonic() < deadline and child.poll() is None:
        if db_path.exists():
            committed = _committed_ids(db_path)
            if len(committed) >= KILL_AFTER:
                break
        time.sleep(0.05)
    assert child.poll() is None, "the import finished before it could be killed"
    child.send_signal(signal.SIGKILL)
    child.wait()
    assert KILL_AFTER <= len(committed) < TOTAL

    engine = MemoryEngine(RetrievalSettings(data_dir=data_dir), embedder=real_embedder)
    try:
        in_sql = {m.id for m in engine.store.iterate()}
        assert committed <= in_sql, "every record committed before the kill is still there"
        assert set(engine.index.iter_ids()) == in_sql, "restart repaired the index"
        assert engine.store.count_indexed() == len(in_sql)
        alice = Principal(owner_id="alice")
        by_id = {line["id"]: line for line in lines}
        for memory_id in sorted(in_sql)[:: max(1, len(in_sql) // 40)]:
            ticket = by_id[memory_id]["content"].rsplit("ticket ", 1)[1].rstrip(".")
            found = [i.id for i in pack_for(engine, alice, ticket, max_items=3).items]
            assert found[0] == memory_id, f"{ticket} not recalled first"
    finally:
        engine.close()
    # the rest of the file imports cleanly afterwards, skipping what is there
    finished = subprocess.run(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "--data-dir",
            str(data_dir),
            "import",
            "--owner",
            "alice",
            "--json",
            str(source),
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert finished.returncode == 0, finished.stderr[-2000:]
    counts = json.loads(finished.stdout)
    assert counts["skipped"] == len(in_sql) and counts["imported"] == TOTAL - len(in_sql)


def _audit_count(db_path) -> int:  # type: ignore[no-untyped-def]
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return int(connection.execute("SELECT count(*) FROM audit_log").fetchone()[0])
    finally:
        connection.close()


def _records(db_path) -> list[tuple[str, int, str]]:  # type: ignore[no-untyped-def]
    connection = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True, timeout=30)
    try:
        return sorted(connection.execute("SELECT id, version, status FROM memories"))
    finally:
        connection.close()


@pytest.mark.slow
def test_sigkill_during_reflect_applies_all_or_nothing(tmp_path, real_embedder):
    """Killed before its commit, a real run leaves the store as it was; killed right after, the whole
    plan is there, and restarting brings the index up to the committed records."""
    from compactor import ReflectRequest, reflect
    from eval.reflect_bench import locomo_records

    data_dir = tmp_path / "data"
    engine = MemoryEngine(RetrievalSettings(data_dir=data_dir), embedder=real_embedder)
    try:
        import_records(engine, Principal.local("talker"), locomo_records("locomo", 1))
        planned = reflect(engine, Principal.local("talker"), ReflectRequest(since=SINCE, limit=5000, dry_run=True))
    finally:
        engine.close()
    expected = sum(planned.counts.values())
    assert planned.counts["summarized"] + planned.counts["promoted"] > 100
    db_path = data_dir / "memories.sqlite"
    before = _records(db_path)

    def run_and_kill(when_committed: bool) -> None:
        child = subprocess.Popen(
            [
                sys.executable,
                "-c",
                "from service.cli import main; main()",
                "--data-dir",
                str(data_dir),
                "reflect",
                "--owner",
                "talker",
                "--since",
                SINCE,
                "--limit",
                "5000",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started = time.monotonic()
        while child.poll() is None and time.monotonic() - started < 300:
            committed = _audit_count(db_path) > 0
            if committed if when_committed else time.monotonic() - started > 4.0:
                break
            time.sleep(0.02)
        assert child.poll() is None, "reflect finished before it could be killed"
        child.send_signal(signal.SIGKILL)
        child.wait()

    run_and_kill(when_committed=False)  # after start-up and planning, while it encodes or writes
    audits = _audit_count(db_path)
    assert audits in (0, expected)
    if audits == 0:
        assert _records(db_path) == before

    if audits == 0:
        run_and_kill(when_committed=True)  # the commit is visible: the index sync is under way
        assert _audit_count(db_path) == expected
    after = _records(db_path)
    assert len(after) == len(before) + planned.counts["summarized"] + planned.counts["promoted"]

    engine = MemoryEngine(RetrievalSettings(data_dir=data_dir), embedder=real_embedder)  # repairs on open
    try:
        assert engine.index.count() == engine.store.count() == len(after)
        assert engine.store.count_indexed() == len(after)
        summary = planned.summaries[0]  # indexed after the repair: found by its own words
        found = search_for(engine, Principal.local("talker"), summary["content"], limit=3)
        assert summary["id"] in [result.id for result in found.results]
    finally:
        engine.close()
