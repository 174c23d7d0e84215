"""A server that grows by `remember`: recall as it grows, against the same store after `reindex`, and
the longest any request waited while the index upkeep ran.

    python -m eval.edge_growth [--memories 30000] [--checkpoints 10000,20000] [--batch 100]
                               [--single-share 0.05] [--queries 200] [--data-dir DIR] [--json]

It starts `xmemo serve` (index upkeep on, as it ships: retrieval/engine/upkeep.py) on loopback in a
temporary data dir (or DIR, kept afterwards) and sends `--memories` synthetic notes, a share of them one
at a time by `remember` and the rest by the batch route, while a probe asks `/healthz` every 50 ms and
records how long each answer took. At each checkpoint, and at the end, it times `--queries`
recall_context calls; again once no rebuild has run for 3 s (the upkeep caught up, the second core
free). Then one hard forget (timed, with the probe running) and the wait until its
vectors have left the disk (the upkeep's next generation). Then it stops the server, runs `xmemo
reindex` on the data dir, starts it again and times the same queries: the ratio of the two p50s is
what the upkeep leaves on the table. The server's own log gives every rebuild it made.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np
import psutil

from .bench import synthetic_memories, synthetic_queries
from .serving import start_server, wait_ready

PROBE_SECONDS = 0.05


class _Probe:
    """GET /healthz every 50 ms on a thread of its own; keeps every answer's wait."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.waits: list[float] = []
        self.failures = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(base_url=self.url, timeout=30) as http:
            while not self._stop.is_set():
                started = time.perf_counter()
                try:
                    ok = http.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                self.waits.append(time.perf_counter() - started)
                self.failures += not ok
                self._stop.wait(PROBE_SECONDS)

    def __enter__(self) -> _Probe:
        self._thread.start()
        return self

    def __exit__(self, *_: object) -> None:
        self._stop.set()
        self._thread.join()

    def summary(self) -> dict[str, Any]:
        waits = np.asarray(self.waits or [0.0]) * 1000
        return {
            "probes": len(self.waits),
            "failures": self.failures,
            "p99_ms": round(float(np.percentile(waits, 99)), 1),
            "max_ms": round(float(waits.max()), 1),
            "over_1s": int((waits > 1000).sum()),
        }


WARM_QUERIES = synthetic_queries(50, seed=34)  # others than the timed ones: no cached query vector


def _recall(http: httpx.Client, queries: list[str]) -> dict[str, float]:
    for query in WARM_QUERIES:  # a server just started reads its pages in
        http.post("/v1/recall/context", json={"query": query, "max_items": 8}).raise_for_status()
    samples = []
    for query in queries:
        started = time.perf_counter()
        answer = http.post("/v1/recall/context", json={"query": query, "max_items": 8})
        samples.append(time.perf_counter() - started)
        answer.raise_for_status()
    values = np.asarray(samples) * 1000
    return {f"p{q}_ms": round(float(np.percentile(values, q)), 2) for q in (50, 95, 99)}


def _rebuilds(log: Path) -> list[dict[str, Any]]:
    """The `index_rebuilt` events of the server's log."""
    found = []
    for line in log.read_text(encoding="utf-8", errors="replace").splitlines():
        if '"index_rebuilt"' in line:
            event = json.loads(line)
            if event.get("event") == "index_rebuilt":
                found.append(event)
    return found


def _wait_idle(server: subprocess.Popen[bytes], quiet_seconds: float = 3.0, timeout: float = 3600.0) -> float:
    """Wait until the server has run no rebuild for `quiet_seconds` (the upkeep caught up); returns the wait."""
    started = time.monotonic()
    quiet_since = time.monotonic()
    while time.monotonic() - started < timeout:
        building = any(
            "retrieval.engine.rebuild" in " ".join(child.cmdline())
            for child in psutil.Process(server.pid).children(recursive=True)
        )
        if building:
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since >= quiet_seconds:
            break
        time.sleep(0.2)
    return time.monotonic() - started


def _serve(data_dir: Path, log: Path) -> tuple[subprocess.Popen[bytes], str, str]:
    process, url = start_server(data_dir, os.environ, log=log)
    try:
        wait_ready(url, process)
    except RuntimeError:
        process.kill()
        raise
    return process, url, (data_dir / "admin.key").read_text().strip()


def _stop(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=120)


def run_growth(
    data_dir: Path, memories: int, checkpoints: list[int], batch: int, single_share: float, queries: int
) -> dict[str, Any]:
    log = data_dir.parent / f"{data_dir.name}-server.log"
    notes = synthetic_memories(memories, seed=31)
    asked = synthetic_queries(queries, seed=32)
    rng = random.Random(33)
    process, url, key = _serve(data_dir, log)
    headers = {"Authorization": f"Bearer {key}"}
    steps: list[dict[str, Any]] = []
    ids: list[str] = []
    try:
        with _Probe(url) as probe, httpx.Client(base_url=url, headers=headers, timeout=120) as http:
            fed, started = 0, time.perf_counter()
            for target in [*checkpoints, memories]:
                while fed < target:
                    if rng.random() < single_share:
                        answer = http.post("/api/v1/remember", json={**notes[fed], "path": "growth/single"})
                        answer.raise_for_status()
                        ids.append(answer.json()["id"])
                        fed += 1
                        continue
                    chunk = [{**note, "path": "growth/batch"} for note in notes[fed : min(target, fed + batch)]]
                    answer = http.post("/api/v1/memories/batch", json={"memories": chunk})
                    answer.raise_for_status()
                    ids.extend(item["id"] for item in answer.json()["results"])
                    fed += len(chunk)
                steps.append(
                    {"memories": fed, "feed_s": round(time.perf_counter() - started, 1), "recall": _recall(http, asked)}
                )
            # the same store once the upkeep has caught up, on a machine no build shares: what the
            # index's shape costs (the points written since the last build are scanned), apart from the CPU
            idle_wait_s = _wait_idle(process)
            settled = _recall(http, asked)
            forget_started, forgotten_at = time.perf_counter(), time.time()
            victim = rng.choice(ids)
            http.delete(f"/api/v1/memories/{victim}", params={"hard": "true"}).raise_for_status()
            forget_s = time.perf_counter() - forget_started
            deadline = time.monotonic() + 3600
            # off the disk once a generation built from a record read after the forget is installed
            while not any(b["began_at"] >= forgotten_at for b in _rebuilds(log)) and time.monotonic() < deadline:
                time.sleep(0.2)
            off_disk_s = time.perf_counter() - forget_started
            fed_probe = probe.summary()
    finally:
        _stop(process)
    rebuilds = _rebuilds(log)
    reindex_started = time.perf_counter()
    subprocess.run(
        [sys.executable, "-c", "from service.cli import main; main()", "--data-dir", str(data_dir), "reindex"],
        check=True,
        capture_output=True,
    )
    reindex_s = time.perf_counter() - reindex_started
    process, url, key = _serve(data_dir, log)
    try:
        with httpx.Client(base_url=url, headers={"Authorization": f"Bearer {key}"}, timeout=120) as http:
            reindexed = _recall(http, asked)
    finally:
        _stop(process)
    grown = steps[-1]["recall"]
    return {
        "settled_recall": settled,
        "idle_wait_s": round(idle_wait_s, 1),
        "p50_ratio_settled_to_reindexed": round(settled["p50_ms"] / reindexed["p50_ms"], 3),
        "memories": memories,
        "batch": batch,
        "single_share": single_share,
        "queries": queries,
        "steps": steps,
        "reindexed_recall": reindexed,
        "p50_ratio_grown_to_reindexed": round(grown["p50_ms"] / reindexed["p50_ms"], 3),
        "probe": fed_probe,
        "hard_forget_s": round(forget_s, 3),
        "forget_off_disk_s": round(off_disk_s, 1),
        "reindex_s": round(reindex_s, 1),
        "rebuilds": rebuilds,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = ["memories  fed after s  recall_context p50 / p95 / p99 ms"]
    for step in report["steps"]:
        r = step["recall"]
        lines.append(f"{step['memories']:>8}  {step['feed_s']:>10}  {r['p50_ms']} / {r['p95_ms']} / {r['p99_ms']}")
    r = report["settled_recall"]
    lines.append(f"upkeep caught up ({report['idle_wait_s']} s later)  {r['p50_ms']} / {r['p95_ms']} / {r['p99_ms']}")
    r = report["reindexed_recall"]
    lines.append(f"after reindex           {r['p50_ms']} / {r['p95_ms']} / {r['p99_ms']}")
    probe = report["probe"]
    lines += [
        f"p50 as fed / reindexed: {report['p50_ratio_grown_to_reindexed']}x; "
        f"caught up / reindexed: {report['p50_ratio_settled_to_reindexed']}x",
        f"/healthz every 50 ms: {probe['probes']} probes, longest wait {probe['max_ms']} ms, p99 {probe['p99_ms']} ms, "
        f"{probe['over_1s']} over 1 s, {probe['failures']} failed",
        f"hard forget answered in {report['hard_forget_s']} s; its vectors left the disk after "
        f"{report['forget_off_disk_s']} s",
        f"{len(report['rebuilds'])} rebuilds:",
    ]
    for build in report["rebuilds"]:
        lines.append(
            f"  {build['points']} points built in {build['build_s']} s, installed in {build['install_ms']} ms "
            f"({build['replayed']} writes replayed)"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--memories", type=int, default=30000)
    parser.add_argument("--checkpoints", default="10000,20000", help="store sizes to time recall at, increasing")
    parser.add_argument("--batch", type=int, default=100)
    parser.add_argument("--single-share", type=float, default=0.05, help="share of notes sent one at a time")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--data-dir", type=Path, help="keep the store here (must not exist yet)")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    checkpoints = [int(c) for c in args.checkpoints.split(",") if c.strip()]
    if checkpoints != sorted(set(checkpoints)) or any(c <= 0 or c >= args.memories for c in checkpoints):
        parser.error("--checkpoints must increase and lie between 0 and --memories")
    if not 0 <= args.single_share <= 1 or args.batch < 1 or args.memories < 1 or args.queries < 1:
        parser.error("--single-share lies in [0, 1]; --batch, --memories and --queries are positive")
    if args.data_dir is not None:
        if args.data_dir.exists():
            parser.error(f"--data-dir {args.data_dir} exists already")
        report = run_growth(args.data_dir, args.memories, checkpoints, args.batch, args.single_share, args.queries)
    else:
        with tempfile.TemporaryDirectory(prefix="xmemo-growth-") as tmp:
            report = run_growth(
                Path(tmp) / "data", args.memories, checkpoints, args.batch, args.single_share, args.queries
            )
    print(json.dumps(report, indent=2) if args.json else format_report(report))


if __name__ == "__main__":
    main()
