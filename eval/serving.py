"""Real `xmemo serve` processes on loopback for the service-level measurements (load, start-up, replicas)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

import httpx

__all__ = ["free_port", "start_server", "wait_ready"]


def free_port() -> int:
    """A loopback port free at the time of asking."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def start_server(
    data_dir: Path, env: Mapping[str, str] | None = None, options: Sequence[str] = (), log: Path | None = None
) -> tuple[subprocess.Popen[bytes], str]:
    """Launch `xmemo [options] --data-dir DIR serve` on a free loopback port; returns it and its URL.
    Its log (stderr) goes to `log`, appended, when given."""
    port = free_port()
    stderr = log.open("ab") if log is not None else subprocess.DEVNULL
    process = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "from service.cli import main; main()",
            "--data-dir",
            str(data_dir),
            *options,
            "serve",
            "--port",
            str(port),
        ],
        stdout=subprocess.DEVNULL,
        stderr=stderr,
        env=dict(env) if env is not None else None,
    )
    if not isinstance(stderr, int):
        stderr.close()  # the child holds its own copy
    return process, f"http://127.0.0.1:{port}"


def wait_ready(url: str, process: subprocess.Popen[bytes] | None = None, timeout: float = 300.0) -> None:
    """Poll /readyz every 50 ms until it answers 200; RuntimeError if the process exits or time runs out."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process is not None and process.poll() is not None:
            raise RuntimeError(f"the server at {url} exited before it was ready")
        try:
            if httpx.get(f"{url}/readyz", timeout=1).status_code == 200:
                return
        except httpx.HTTPError:
            pass
        time.sleep(0.05)
    raise RuntimeError(f"the server at {url} did not become ready")
