"""Load: 16 concurrent clients against a real server for 60 s, mixed remember and recall_context.

    python -m eval.load [--url URL --key KEY] [--clients 16] [--seconds 60] [--write-share 0.3]
                        [--encoder auto|onnx|onnx-int8|torch] [--json]

Without --url it starts `xmemo serve` (with --encoder) on a free loopback port in a temporary data
dir, and also reports the server's CPU time per request. Reports throughput and p50/p95/p99 per
operation, counts errors, then reads back every acknowledged write.
Traffic goes only to the URL given or to 127.0.0.1.

The clients usually share the machine with the server, so they are kept light: one keep-alive
`http.client` connection each. With httpx they spent 3.6 ms of CPU per request (0.27 ms now), which
at 120 requests/s took almost half a core from the server under test on a 2-core machine. The report
gives the clients' own CPU per request (`client_cpu_ms_per_request`) beside the server's.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import httpx
import numpy as np
import psutil

from .bench import synthetic_memories, synthetic_queries
from .serving import start_server, wait_ready


def _start_server(data_dir: Path, encoder: str = "auto") -> tuple[subprocess.Popen[bytes], str, str]:
    process, url = start_server(data_dir, {**os.environ, "XMEMO_EMBEDDING_BACKEND": encoder})
    try:
        wait_ready(url, process)
    except RuntimeError:
        process.kill()
        raise
    return process, url, (data_dir / "admin.key").read_text().strip()


def run_load(
    urls: Sequence[str], key: str, clients: int, seconds: float, write_share: float, server_pid: int | None = None
) -> dict[str, Any]:
    """The mix from `clients` threads, client i on urls[i % len(urls)], then every acknowledged write
    read back from urls[0]; `server_pid` adds the server's CPU time per request."""
    notes = [m["content"] for m in synthetic_memories(20000, seed=21)]
    queries = synthetic_queries(5000, seed=22)
    latencies: dict[str, list[float]] = {"remember": [], "recall_context": []}
    errors: list[str] = []
    acknowledged: list[tuple[str, str]] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def client(number: int) -> None:
        rng = random.Random(number)
        connection = _Connection(urls[number % len(urls)], key)
        try:
            while time.monotonic() < stop_at:
                started = time.perf_counter()
                document: dict[str, Any]
                if rng.random() < write_share:
                    operation, path = "remember", "/api/v1/remember"
                    content = f"{rng.choice(notes)} (client {number}, {rng.random():.6f})"
                    document = {"content": content, "path": f"load/c{number}"}
                else:
                    operation, path = "recall_context", "/v1/recall/context"
                    document = {"query": rng.choice(queries), "max_items": 8}
                try:
                    status, body = connection.post(path, document)
                    written = json.loads(body)["id"] if operation == "remember" and status in (200, 201) else None
                except (OSError, http.client.HTTPException, ValueError, KeyError) as error:
                    # a failed request is an error, never retried: a retried remember could be applied twice
                    connection.close()
                    with lock:
                        errors.append(f"{operation} {type(error).__name__}: {error}")
                    continue
                elapsed = time.perf_counter() - started
                with lock:
                    if status in (200, 201):
                        latencies[operation].append(elapsed)
                        if written is not None:
                            acknowledged.append((written, content))
                    else:
                        errors.append(f"{operation} {status} {body[:200].decode(errors='replace')}")
        finally:
            connection.close()

    threads = [threading.Thread(target=client, args=(i,)) for i in range(clients)]
    server = psutil.Process(server_pid) if server_pid is not None else None
    cpu_before = sum(server.cpu_times()[:2]) if server is not None else 0.0
    client_before = time.process_time()
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    wall = time.perf_counter() - started
    client_cpu = time.process_time() - client_before
    server_cpu = sum(server.cpu_times()[:2]) - cpu_before if server is not None else None
    report: dict[str, Any] = {
        "clients": clients,
        "seconds": round(wall, 1),
        "errors": len(errors),
        "error_samples": errors[:5],
        "acknowledged_writes": len(acknowledged),
        "writes_not_readable": _unreadable(urls[0], key, acknowledged),
    }
    return report | _rates(latencies, wall, client_cpu, server_cpu)


def _unreadable(url: str, key: str, acknowledged: Sequence[tuple[str, str]]) -> int:
    """How many acknowledged writes (id, content) a fetch by id does not give back as written."""
    missing = 0
    with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=60) as http:
        for memory_id, content in acknowledged:
            response = http.get(f"/api/v1/memories/{memory_id}")
            if response.status_code != 200 or response.json()["content"] != content:
                missing += 1
    return missing


def _rates(
    latencies: dict[str, list[float]], wall: float, client_cpu: float, server_cpu: float | None
) -> dict[str, Any]:
    """Each operation's count, rate and latency percentiles; requests/s; CPU per request."""
    report: dict[str, Any] = {"operations": {}}
    total = 0
    for operation, samples in latencies.items():
        total += len(samples)
        values = np.asarray(samples) * 1000
        report["operations"][operation] = {
            "count": len(samples),
            "per_s": round(len(samples) / wall, 1),
            **({f"p{q}_ms": round(float(np.percentile(values, q)), 1) for q in (50, 95, 99)} if samples else {}),
        }
    report["throughput_per_s"] = round(total / wall, 1)
    if total:
        report["client_cpu_ms_per_request"] = round(client_cpu / total * 1000, 2)
    if server_cpu is not None and total:
        # The server's own CPU time (user + system, all its threads) per answered request: unlike
        # requests/s, it barely moves when other work shares the machine.
        report["server_cpu_ms_per_request"] = round(server_cpu / total * 1000, 2)
    return report


class _Connection:
    """One keep-alive HTTP/1.1 connection that posts JSON with the bearer key. After `close` (or a
    failure) the next request opens a new connection."""

    def __init__(self, url: str, key: str) -> None:
        parts = urlsplit(url)
        kind = http.client.HTTPSConnection if parts.scheme == "https" else http.client.HTTPConnection
        self._connection = kind(parts.hostname or "127.0.0.1", parts.port, timeout=60)
        self._prefix = parts.path.rstrip("/")
        self._headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}

    def post(self, path: str, document: dict[str, Any]) -> tuple[int, bytes]:
        self._connection.request("POST", self._prefix + path, json.dumps(document).encode(), self._headers)
        response = self._connection.getresponse()
        return response.status, response.read()

    def close(self) -> None:
        self._connection.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--url")
    parser.add_argument("--key", default=os.environ.get("XMEMO_API_KEY"))
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--write-share", type=float, default=0.3)
    parser.add_argument(
        "--encoder",
        default="auto",
        choices=["auto", "onnx", "onnx-int8", "torch"],
        help="the encoder of the server this command starts (without --url)",
    )
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    process = None
    with tempfile.TemporaryDirectory(prefix="xmemo-load-") as tmp:
        url, key = args.url, args.key
        if url is None:
            process, url, key = _start_server(Path(tmp), args.encoder)
        try:
            report = run_load(
                [url], key, args.clients, args.seconds, args.write_share, process.pid if process is not None else None
            )
        finally:
            if process is not None:
                process.terminate()
                process.wait(timeout=30)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"{report['clients']} clients, {report['seconds']} s: {report['throughput_per_s']} requests/s, "
            f"{report['errors']} errors, {report['acknowledged_writes']} writes acknowledged, "
            f"{report['writes_not_readable']} not readable afterwards"
        )
        for operation, figures in report["operations"].items():
            print(f"  {operation:15s} {figures}")
    sys.exit(1 if report["errors"] or report["writes_not_readable"] else 0)


if __name__ == "__main__":
    main()
