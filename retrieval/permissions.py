"""File permissions of a data dir: the directory 0700 and every file in it 0600, whatever the umask.

Every tenant's memories, the key digests and the cached vectors live in these files; under umask 022
they were 0755 and 0644, readable by any local user. The CLI entry points and the key store apply
this rule at start, which also tightens a data dir written by an older release; the CLI runs under
`private_umask`, so that what SQLite and Qdrant Edge create later (segments, WAL files) is private too.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from .errors import StoreError

__all__ = ["PRIVATE_DIR", "PRIVATE_FILE", "private_file", "private_umask", "secure_data_dir"]

PRIVATE_DIR = 0o700
PRIVATE_FILE = 0o600


def secure_data_dir(data_dir: Path) -> None:
    """Create `data_dir` private if absent; make it, its directories 0700 and its files 0600."""
    try:
        data_dir.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        for directory, _, files in os.walk(data_dir):
            os.chmod(directory, PRIVATE_DIR)
            for name in files:
                path = os.path.join(directory, name)
                if not os.path.islink(path):
                    os.chmod(path, PRIVATE_FILE)
    except OSError as error:
        raise StoreError(f"cannot make the data dir {data_dir} private: {error}") from error


@contextmanager
def private_umask() -> Iterator[None]:
    """Inside, new files are 0600 and new directories 0700 (umask 077), whatever the caller's umask."""
    previous = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(previous)


def private_file(path: Path) -> Path:
    """Create `path` empty and 0600 if absent, else make it 0600; SQLite then makes its -wal and -shm alike."""
    try:
        path.parent.mkdir(mode=PRIVATE_DIR, parents=True, exist_ok=True)
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT, PRIVATE_FILE))
        os.chmod(path, PRIVATE_FILE)
    except OSError as error:
        raise StoreError(f"cannot make {path} private: {error}") from error
    return path
