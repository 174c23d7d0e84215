"""How a Qdrant Edge shard fed by `remember` grows: search cost before and after `optimize`, and
how long `optimize` stops every Python thread.

    python -m eval.edge_growth [--steps 2000,10000,30000] [--then-add 3000] [--queries 200] [--json]

The shard is made as `retrieval.index.edge.EdgeIndex` makes it (one search thread, as `xmemo serve`
runs it) and fed one point per upsert, as `remember` feeds it. After each step of `--steps` it times
`--queries` two-channel searches with production's filter. Then it optimizes (the HNSW build and
segment merge that `xmemo import` and `reindex` ask for), timing the call while a Python thread
ticks every millisecond beside it: the longest gap between its ticks is how long the call held the
GIL. Then `--then-add` more points, a search, and a second optimize.

Dense vectors are random unit vectors: a search over points no HNSW graph covers scans them all,
and its time does not depend on where they lie. BM25 vectors come from synthetic notes.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import threading
import time
import uuid
from pathlib import Path
from typing import Any

import numpy as np

from retrieval.encoding import SparseEncoder
from retrieval.index import EdgeIndex, IndexFilter, IndexPoint

from .bench import _percentiles, synthetic_memories, synthetic_queries

DIMENSION = 384
OWNER = "owner:growth"


class _Shard:
    def __init__(self, path: Path, queries: int) -> None:
        self.index = EdgeIndex(path, DIMENSION, 1)
        self.sparse = SparseEncoder()
        self.rng = np.random.default_rng(3)
        self.notes = [m["content"] for m in synthetic_memories(5000, seed=21)]
        self.queries = [self.sparse.query(q) for q in synthetic_queries(queries, seed=22)]
        self.query_vectors = self._unit(queries)
        self.points = 0

    def _unit(self, count: int) -> np.ndarray:
        vectors = self.rng.standard_normal((count, DIMENSION)).astype(np.float32)
        return np.asarray(vectors / np.linalg.norm(vectors, axis=1, keepdims=True), dtype=np.float32)

    def add(self, count: int) -> None:
        """One upsert per point, as remember writes them."""
        for vector in self._unit(count):
            i = self.points
            payload = {
                "owner_id": "growth",
                "visibility": OWNER,
                "bucket": "personal",
                "scope": "",
                "path": f"load/c{i % 16}",
                "type": "episode",
                "status": "active",
                "version": 1,
                "importance": 0.5,
                "occurred_ts": 1.7e9 + i,
            }
            sparse = self.sparse.document(f"{self.notes[i % len(self.notes)]} {i}")
            self.index.upsert([IndexPoint(str(uuid.uuid4()), vector, sparse, payload)])
            self.points += 1

    def search(self, label: str) -> dict[str, Any]:
        flt = IndexFilter(visibility=(OWNER,))
        samples = []
        for vector, sparse in zip(self.query_vectors, self.queries, strict=True):
            started = time.perf_counter()
            self.index.search(vector, sparse, flt, 50, 50)
            samples.append(time.perf_counter() - started)
        return {
            "points": self.points,
            "state": label,
            "segments": self.index.segment_count(),
            "search_ms": _percentiles(samples),
        }

    def optimize(self) -> dict[str, Any]:
        gaps: list[float] = []
        stop = threading.Event()

        def tick() -> None:
            last = time.perf_counter()
            while not stop.is_set():
                time.sleep(0.001)
                now = time.perf_counter()
                gaps.append(now - last)
                last = now

        ticker = threading.Thread(target=tick, daemon=True)
        ticker.start()
        time.sleep(0.01)
        started = time.perf_counter()
        self.index.optimize()
        seconds = time.perf_counter() - started
        stop.set()
        ticker.join()
        return {
            "points": self.points,
            "optimize_s": round(seconds, 3),
            "longest_python_pause_ms": round(max(gaps, default=0.0) * 1000, 1),
        }


def run_study(steps: list[int], then_add: int, queries: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="xmemo-edge-growth-") as tmp:
        shard = _Shard(Path(tmp) / "edge", queries)
        searches, optimizes = [], []
        for target in steps:
            shard.add(target - shard.points)
            searches.append(shard.search("never optimized"))
        optimizes.append(shard.optimize())
        searches.append(shard.search("optimized"))
        if then_add:
            shard.add(then_add)
            searches.append(shard.search(f"{then_add} added since"))
            optimizes.append(shard.optimize())
            searches.append(shard.search("optimized again"))
        shard.index.close()
    return {"search_threads": 1, "queries": queries, "searches": searches, "optimizes": optimizes}


def format_report(report: dict[str, Any]) -> str:
    lines = ["points  state                  segments  search p50 / p95 ms"]
    for row in report["searches"]:
        ms = row["search_ms"]
        lines.append(f"{row['points']:>7}  {row['state']:22s} {row['segments']:>8}  {ms['p50']:.2f} / {ms['p95']:.2f}")
    for row in report["optimizes"]:
        lines.append(
            f"optimize at {row['points']} points: {row['optimize_s']} s, "
            f"a Python thread paused {row['longest_python_pause_ms']} ms"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", default="2000,10000,30000", help="store sizes to search at, increasing")
    parser.add_argument("--then-add", type=int, default=3000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    try:
        steps = [int(step) for step in args.steps.split(",")]
    except ValueError:
        parser.error("--steps takes increasing whole numbers, comma-separated")
    if not steps or any(s < 1 for s in steps) or steps != sorted(set(steps)) or args.then_add < 0 or args.queries < 1:
        parser.error("--steps takes increasing positive numbers; --then-add >= 0; --queries >= 1")
    report = run_study(steps, args.then_add, args.queries)
    print(json.dumps(report, indent=2) if args.json else format_report(report))


if __name__ == "__main__":
    main()
