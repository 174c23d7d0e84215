"""`xmemo bench`: ingest throughput, recall_context latency and peak memory per index backend.

Each backend runs in its own child process (so peak RSS is its own) on a fresh data dir, against
the raw encoder throughput measured in the same child. Figures are reported with their ratios.
"""

from __future__ import annotations

import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["format_report", "run_bench", "synthetic_memories", "synthetic_queries"]

_SUBJECTS = ["deploy", "billing service", "login flow", "search index", "nightly backup", "release 4.2",
             "payment gateway", "user onboarding", "cache layer", "mobile app", "data pipeline", "auth tokens",
             "dashboard", "email digest", "rate limiter", "feature flag", "CI runner", "database migration"]
_EVENTS = ["failed because", "was fixed after", "slowed down when", "was rolled back since", "passed once",
           "needs review because", "was approved although", "broke again after", "improved after"]
_CAUSES = ["a config key was missing", "the TLS certificate expired", "a flaky test timed out",
           "the queue filled up", "a schema change dropped a column", "memory use doubled",
           "the vendor API changed", "a retry loop never ended", "disk space ran out", "a lock was never released",
           "the customer asked for it", "latency crossed 300 ms", "a dependency was pinned too loosely"]
_PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]


def synthetic_memories(count: int, seed: int = 7) -> list[dict[str, Any]]:
    """Short agent notes (10-30 words), all distinct, with a ticket id for keyword hits."""
    rng = random.Random(seed)
    lines = []
    for i in range(count):
        text = (f"{rng.choice(_PEOPLE)} noted that the {rng.choice(_SUBJECTS)} {rng.choice(_EVENTS)} "
                f"{rng.choice(_CAUSES)}; tracked as ticket T-{seed}{i:06d}.")
        lines.append({"content": text, "path": f"projects/p{i % 20}/notes", "occurred_at": "2026-11-01T12:00:00Z"})
    return lines


def synthetic_queries(count: int, seed: int = 11) -> list[str]:
    rng = random.Random(seed)
    queries = []
    for i in range(count):
        if i % 4 == 3:
            queries.append(f"ticket T-7{rng.randrange(0, 10000):06d}")
        else:
            queries.append(f"why did the {rng.choice(_SUBJECTS)} {rng.choice(_EVENTS).split()[0]} ({i})")
    return queries


def _percentiles(samples: list[float]) -> dict[str, float]:
    values = np.asarray(samples) * 1000.0
    return {f"p{q}": round(float(np.percentile(values, q)), 3) for q in (50, 95, 99)} | {
        "mean": round(float(values.mean()), 3)
    }


def _worker(backend: str, memories: int, queries: int, qdrant_url: str | None) -> dict[str, Any]:
    """One backend, measured in this process: raw encoder, import, recall_context latency, peak RSS."""
    from retrieval import MemoryEngine, Principal, RetrievalSettings, import_records, recall_context
    from retrieval.embedding import SentenceTransformerEmbedder

    with tempfile.TemporaryDirectory(prefix=f"xmemo-bench-{backend}-") as tmp:
        url = None if backend == "edge" else (qdrant_url or ":memory:")
        settings = RetrievalSettings(data_dir=Path(tmp), qdrant_url=url)
        raw = SentenceTransformerEmbedder(settings.embedding_model, settings.embedding_batch_size)
        sample = [m["content"] for m in synthetic_memories(min(memories, 2000), seed=3)]
        raw.embed(sample[:64])  # warm up
        started = time.perf_counter()
        raw.embed(sample)
        raw_rate = len(sample) / (time.perf_counter() - started)

        engine = MemoryEngine(settings, embedder=raw)
        principal = Principal.local("bench")
        lines = synthetic_memories(memories)
        started = time.perf_counter()
        import_records(engine, principal, lines, batch_size=256)
        ingest_seconds = time.perf_counter() - started

        texts = synthetic_queries(queries)
        for warm in synthetic_queries(10, seed=99):
            recall_context(engine, principal, warm)
        latencies = []
        for query in texts:
            started = time.perf_counter()
            recall_context(engine, principal, query)
            latencies.append(time.perf_counter() - started)
        search_latencies = []
        dense_query = raw.embed(["warm"])[0]
        from retrieval.index import IndexFilter
        from retrieval.records import ReadFilters

        flt = IndexFilter.from_read_filters(ReadFilters(owner_id="bench"))
        for query in texts:
            vector = dense_query
            sparse = engine.sparse.query(query)
            started = time.perf_counter()
            engine.index.search(vector, sparse, flt, 50, 50)
            search_latencies.append(time.perf_counter() - started)
        engine.close()
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "backend": backend,
        "memories": memories,
        "queries": queries,
        "raw_encoder_per_s": round(raw_rate, 1),
        "ingest_per_s": round(memories / ingest_seconds, 1),
        "ingest_vs_raw_encoder": round(memories / ingest_seconds / raw_rate, 3),
        "recall_context_ms": _percentiles(latencies),
        "index_search_ms": _percentiles(search_latencies),
        "peak_rss_mb": round(peak_kib / 1024.0, 1),
    }


def run_bench(memories: int, queries: int, backends: list[str], qdrant_url: str | None = None) -> dict[str, Any]:
    """Run each backend in a child process and put their figures and ratios side by side."""
    results: dict[str, Any] = {}
    for backend in backends:
        command = [sys.executable, "-m", "eval.bench", backend, str(memories), str(queries), qdrant_url or ""]
        print(f"bench: {backend} with {memories} memories, {queries} queries ...", file=sys.stderr)
        child = subprocess.run(command, capture_output=True, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"})
        if child.returncode != 0:
            raise RuntimeError(f"bench worker for {backend} failed:\n{child.stderr[-2000:]}")
        results[backend] = json.loads(child.stdout.strip().splitlines()[-1])
    report: dict[str, Any] = {"memories": memories, "queries": queries, "backends": results}
    if "edge" in results and "server" in results:
        edge, server = results["edge"], results["server"]
        report["ratios"] = {
            "server_over_edge_recall_p50": round(server["recall_context_ms"]["p50"] / edge["recall_context_ms"]["p50"], 2),
            "server_over_edge_index_search_p50": round(
                server["index_search_ms"]["p50"] / edge["index_search_ms"]["p50"], 2),
            "edge_over_server_ingest": round(edge["ingest_per_s"] / server["ingest_per_s"], 2),
        }
    return report


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{report['memories']} memories, {report['queries']} recall_context queries"]
    for name, r in report["backends"].items():
        lat = r["recall_context_ms"]
        lines.append(
            f"{name:7s} ingest {r['ingest_per_s']:8.1f}/s ({r['ingest_vs_raw_encoder']:.0%} of raw encoder "
            f"{r['raw_encoder_per_s']:.1f}/s)  recall_context p50 {lat['p50']:.2f} ms p95 {lat['p95']:.2f} "
            f"p99 {lat['p99']:.2f}  index search p50 {r['index_search_ms']['p50']:.2f} ms  peak RSS {r['peak_rss_mb']} MB"
        )
    for key, value in report.get("ratios", {}).items():
        lines.append(f"{key}: {value}")
    return "\n".join(lines)


if __name__ == "__main__":
    backend_name, count, query_count, url_arg = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    print(json.dumps(_worker(backend_name, count, query_count, url_arg or None)))
