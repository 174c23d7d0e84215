"""Under umask 022 the data dir is still 0700 and its files 0600, and a looser dir is tightened at start."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from click.testing import CliRunner

from retrieval.storage import secure_data_dir
from service.cli import cli
from tests.support import RunningServer, in_process


@pytest.fixture(autouse=True)
def loose_umask() -> Iterator[None]:
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def modes(data_dir: Path) -> dict[str, int]:
    """The permission bits of the data dir ("."), and of everything under it by relative path."""
    found = {".": stat.S_IMODE(data_dir.stat().st_mode)}
    for path in data_dir.rglob("*"):
        if not path.is_symlink():
            found[str(path.relative_to(data_dir))] = stat.S_IMODE(path.stat().st_mode)
    return found


def assert_private(data_dir: Path, expected_files: set[str]) -> None:
    found = modes(data_dir)
    assert expected_files <= set(found)
    loose = {
        name: oct(mode) for name, mode in found.items() if mode != (0o700 if (data_dir / name).is_dir() else 0o600)
    }
    assert loose == {}


def loosen(data_dir: Path) -> None:
    for path in [data_dir, *data_dir.rglob("*")]:
        os.chmod(path, 0o755 if path.is_dir() else 0o644)


def run(data_dir: Path, *args: str):  # type: ignore[no-untyped-def]
    return CliRunner().invoke(cli, ["--data-dir", str(data_dir), *args], catch_exceptions=False)


def test_a_new_data_dir_is_private(tmp_path, real_embedder):
    data = tmp_path / "data"
    assert run(data, "remember", "--owner", "alice", "--path", "p", "a private note").exit_code == 0
    assert run(data, "keys", "create", "--owner", "alice").exit_code == 0
    assert_private(data, {"memories.sqlite", "embeddings.sqlite", "keys.sqlite"})


@pytest.mark.parametrize(
    "command",
    [
        ("recall-context", "--owner", "alice", "note"),
        ("search", "--owner", "alice", "note"),
        ("keys", "list"),
        ("export", "OUT"),
        ("reindex",),
        ("reflect", "--owner", "alice", "--dry-run"),
    ],
)
def test_every_command_tightens_an_older_loose_data_dir(tmp_path, real_embedder, command):
    data = tmp_path / "data"
    assert run(data, "remember", "--owner", "alice", "--path", "p", "a private note").exit_code == 0
    (data / "admin.key").write_text("xmk_old_secret\n")
    loosen(data)
    assert modes(data)["admin.key"] == 0o644
    args = [str(tmp_path / "out.jsonl") if part == "OUT" else part for part in command]
    assert run(data, *args).exit_code == 0
    assert_private(data, {"memories.sqlite", "embeddings.sqlite", "admin.key"})


def test_an_export_is_readable_by_its_maker_only(tmp_path, real_embedder):
    data = tmp_path / "data"
    run(data, "remember", "--owner", "alice", "--path", "p", "a private note")
    assert run(data, "export", str(tmp_path / "backup.jsonl")).exit_code == 0
    assert stat.S_IMODE((tmp_path / "backup.jsonl").stat().st_mode) == 0o600


def test_an_export_never_writes_through_a_planted_symlink(tmp_path, real_embedder):
    """Before: `xmemo export FILE` opened FILE.partial with O_CREAT|O_TRUNC, following a symlink planted there."""
    data = tmp_path / "data"
    run(data, "remember", "--owner", "alice", "--path", "p", "a private note")
    victim = tmp_path / "victim.txt"
    victim.write_text("keep me\n")
    (tmp_path / "backup.jsonl.partial").symlink_to(victim)
    assert run(data, "export", str(tmp_path / "backup.jsonl")).exit_code == 0
    assert victim.read_text() == "keep me\n" and "a private note" in (tmp_path / "backup.jsonl").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".backup.jsonl.")]  # no temp file left


def test_serve_tightens_the_data_dir_and_an_existing_admin_key(tmp_path, real_embedder):
    data = tmp_path / "data"
    run(data, "remember", "--owner", "alice", "--path", "p", "a private note")
    run(data, "keys", "create", "--owner", "alice")
    (data / "admin.key").write_text("xmk_old_secret\n")
    loosen(data)
    server = RunningServer(data, extra_env={"XMEMO_REFLECT_INTERVAL_SECONDS": "0"})
    try:
        assert_private(data, {"memories.sqlite", "embeddings.sqlite", "keys.sqlite", "admin.key"})
    finally:
        server.stop()


def test_the_app_tightens_its_data_dir_through_the_key_store(tmp_path):
    data = tmp_path / "data"
    data.mkdir(mode=0o755)
    (data / "keys.sqlite").touch(mode=0o644)
    with in_process(data):
        assert modes(data)["."] == 0o700 and modes(data)["keys.sqlite"] == 0o600


def test_a_symlink_in_the_data_dir_is_left_alone(tmp_path):
    outside = tmp_path / "outside.txt"
    outside.write_text("not ours")
    outside.chmod(0o644)
    data = tmp_path / "data"
    data.mkdir()
    (data / "link").symlink_to(outside)
    secure_data_dir(data)
    assert stat.S_IMODE(outside.stat().st_mode) == 0o644 and modes(data)["."] == 0o700
