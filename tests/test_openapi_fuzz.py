"""schemathesis against the live OpenAPI schema of a real server: no 5xx, no schema violation."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from .server import RunningServer

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    running = RunningServer(tmp_path_factory.mktemp("fuzz") / "data")
    yield running
    running.stop()


def test_schemathesis_finds_nothing(server):
    binary = shutil.which("schemathesis", path=str(Path(sys.executable).parent))
    assert binary, "schemathesis is a test dependency"
    done = subprocess.run(
        [binary, "run", f"{server.url}/openapi.json", "-H", f"Authorization: Bearer {server.admin_key}",
         "--checks", "all", "--max-examples", "40", "--seed", "20261130", "--no-color"],
        capture_output=True, text=True, timeout=900,
    )
    assert done.returncode == 0, done.stdout[-6000:]
    log = (server.data_dir.parent / f"server-{server.port}.log").read_text()
    assert "Traceback" not in log
