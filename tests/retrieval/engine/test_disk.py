"""A full disk, on a real small filesystem: writes refuse with 503, reads go on, the process lives.

The tests run as root and mount a tmpfs; outside CI a host that forbids mounting skips them."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from retrieval import (
    MemoryEngine,
    Principal,
    RememberRequest,
    RetrievalSettings,
    get_memory,
    remember,
)
from retrieval.domain import StorageFullError
from tests.support import RunningServer, pack_for

ALICE = Principal.local("alice")


@pytest.fixture
def small_fs(tmp_path: Path) -> Iterator[Path]:
    """A fresh 88 MiB tmpfs (an empty store takes 16 MiB of it, the reserve 64) at tmp_path/data."""
    mount_point = tmp_path / "data"
    mount_point.mkdir()
    done = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=88m", "tmpfs", str(mount_point)], capture_output=True, text=True
    )
    if done.returncode != 0:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must be able to mount a tmpfs: {done.stderr.strip()}")
        pytest.skip(f"mounting a tmpfs is not permitted here: {done.stderr.strip()}")
    yield mount_point
    subprocess.run(["umount", "-l", str(mount_point)], check=False)


def _fill(path: Path) -> Path:
    """Write a file until the filesystem refuses another byte. Unbuffered: a buffered file would try the
    refused bytes again when it closes, and raise there."""
    filler = path / "filler.bin"
    with filler.open("wb", buffering=0) as handle:
        try:
            while True:
                handle.write(b"\0" * 65_536)
        except OSError:
            pass
    return filler


@pytest.mark.slow
def test_full_disk_refuses_writes_and_keeps_serving_reads(small_fs):
    server = RunningServer(small_fs)
    try:
        with server.client(server.key("alice")) as http:
            statuses: list[int] = []
            for i in range(2000):
                response = http.post(
                    "/api/v1/remember",
                    json={"content": f"note {i} " + "lorem ipsum " * 5000, "path": "notes", "source": "disk-test"},
                )
                statuses.append(response.status_code)
                if response.status_code != 201:
                    break
            assert set(statuses[:-1]) == {201} and len(statuses) > 10
            assert response.status_code == 503, response.text
            assert response.json()["error"]["code"] == "storage_full"
            assert http.post("/api/v1/update_state", json={"state_key": "s", "content": "x"}).status_code == 503
            for _ in range(20):  # reads go on (and the bookkeeping flushes every 5 s)
                assert http.post("/v1/recall/context", json={"query": "note 3 lorem"}).status_code == 200
            assert http.get("/v1/memories/search", params={"query": "lorem ipsum"}).status_code == 200
        assert server.process.poll() is None, "the server is alive"
    finally:
        server.stop()
    assert server.process.returncode != -7, "no SIGBUS"


def test_bookkeeping_on_a_full_disk_does_not_fail_reads(small_fs, fake_embedder):
    settings = RetrievalSettings(data_dir=small_fs, disk_reserve_bytes=8 * 2**20)
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        stored = remember(engine, ALICE, RememberRequest(content="the spare key is under the mat", path="home"))
        filler = _fill(small_fs)
        try:
            with pytest.raises(StorageFullError):
                remember(engine, ALICE, RememberRequest(content="another note", path="home"))
            for _ in range(150):  # the tracker flushes every 256 reads, into a database that cannot grow
                assert pack_for(engine, ALICE, "spare key").items[0].id == stored.memory.id
                assert get_memory(engine, ALICE, stored.memory.id).id == stored.memory.id  # a use: counted
            assert engine.store.get(stored.memory.id).access_count == 0  # type: ignore[union-attr]
        finally:
            filler.unlink()
        engine.read_tracker.flush()
        assert engine.store.get(stored.memory.id).access_count == 150  # type: ignore[union-attr]
        assert engine.store.questions_read([stored.memory.id]) == {stored.memory.id: 1}  # the question, once
