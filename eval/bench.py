"""`xmemo bench`: ingest throughput, recall_context latency and peak memory per index backend.

Each backend runs in its own child process (so peak RSS is its own) on a fresh data dir, against
the raw encoder throughput measured in the same child. Figures are reported with their ratios.
"""

from __future__ import annotations

import hashlib
import json
import os
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

__all__ = ["SampledDocuments", "format_report", "run_bench", "synthetic_memories", "synthetic_queries"]

SAMPLE_SIZE = 4096  # real embeddings behind synthesised document vectors
CHUNK = 50_000  # lines generated and imported at a time

_SUBJECTS = [
    "deploy",
    "billing service",
    "login flow",
    "search index",
    "nightly backup",
    "release 4.2",
    "payment gateway",
    "user onboarding",
    "cache layer",
    "mobile app",
    "data pipeline",
    "auth tokens",
    "dashboard",
    "email digest",
    "rate limiter",
    "feature flag",
    "CI runner",
    "database migration",
]
_EVENTS = [
    "failed because",
    "was fixed after",
    "slowed down when",
    "was rolled back since",
    "passed once",
    "needs review because",
    "was approved although",
    "broke again after",
    "improved after",
]
_CAUSES = [
    "a config key was missing",
    "the TLS certificate expired",
    "a flaky test timed out",
    "the queue filled up",
    "a schema change dropped a column",
    "memory use doubled",
    "the vendor API changed",
    "a retry loop never ended",
    "disk space ran out",
    "a lock was never released",
    "the customer asked for it",
    "latency crossed 300 ms",
    "a dependency was pinned too loosely",
]
_PEOPLE = ["Ana", "Bo", "Chen", "Dara", "Eli", "Fay", "Gus", "Hana", "Ivo", "Jun", "Kai", "Lea"]


def synthetic_memories(count: int, seed: int = 7, start: int = 0) -> list[dict[str, Any]]:
    """Short agent notes (10-30 words), all distinct, with a ticket id for keyword hits; `start` numbers
    the lines from there, so that a long run can be made a chunk at a time."""
    rng = random.Random(f"{seed}:{start}")
    lines = []
    for i in range(start, start + count):
        text = (
            f"{rng.choice(_PEOPLE)} noted that the {rng.choice(_SUBJECTS)} {rng.choice(_EVENTS)} "
            f"{rng.choice(_CAUSES)}; tracked as ticket T-{seed}{i:06d}."
        )
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


class SampledDocuments:
    """An Embedder for benchmarks past what the machine can encode: documents get a vector synthesised
    from a sample of real embeddings (a sample vector, chosen and perturbed by the text's hash, then
    normalised), queries get the real model's. Index and recall costs are real; ranking quality is not."""

    def __init__(self, real: Any, sample: np.ndarray, noise: float = 0.15) -> None:
        self.real = real
        self.sample = sample
        self.noise = noise
        self.name = f"sampled:{real.name}"
        self.dimension = int(sample.shape[1])

    def embed(self, texts: Any) -> np.ndarray:
        out = np.empty((len(texts), self.dimension), dtype=np.float32)
        for row, text in enumerate(texts):
            seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
            rng = np.random.default_rng(seed)
            vector = self.sample[seed % len(self.sample)] + rng.normal(
                0.0, self.noise / np.sqrt(self.dimension), self.dimension
            )
            out[row] = vector / np.linalg.norm(vector)
        return out

    def embed_query(self, text: str) -> np.ndarray:
        return np.asarray(self.real.embed_query(text), dtype=np.float32)

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return self.real.embed_query_later(text)  # type: ignore[no-any-return]


def sample_cache() -> Path:
    """Where sampled real embeddings are kept: the evaluation cache (eval.runner.DEFAULT_CACHE's default)."""
    return Path(os.environ.get("XMEMO_EVAL_CACHE", ".cache/xmemo/eval-embeddings.sqlite"))


def _sample_vectors(real: Any, count: int, cache_path: Path) -> np.ndarray:
    """Real embeddings of `count` distinct synthetic notes, from the evaluation cache when it has them."""
    from retrieval.encoding import CachedEmbedder, EmbeddingCache

    cached = CachedEmbedder(real, EmbeddingCache(cache_path))
    try:
        return cached.embed([m["content"] for m in synthetic_memories(count, seed=5)])
    finally:
        cached.cache.close()


def _disk_bytes(path: Path) -> int:
    return sum(p.stat().st_size for p in path.rglob("*") if p.is_file())


def _worker(
    backend: str, encoder: str, memories: int, queries: int, qdrant_url: str | None, sampled: bool
) -> dict[str, Any]:
    """One backend and encoder, measured in this process: raw encoder, import, recall_context, RSS, disk."""
    from retrieval import (
        MemoryEngine,
        Principal,
        RecallRequest,
        RetrievalSettings,
        import_records,
        prepare_read,
        recall_context,
    )
    from retrieval.domain import ReadFilters
    from retrieval.encoding import open_embedder
    from retrieval.index import IndexFilter

    with tempfile.TemporaryDirectory(prefix=f"xmemo-bench-{backend}-") as tmp:
        url = None if backend == "edge" else (qdrant_url or ":memory:")
        settings = RetrievalSettings(data_dir=Path(tmp), qdrant_url=url, embedding_backend=encoder)  # type: ignore[arg-type]  # a CLI choice
        raw = open_embedder(settings)
        sample = [m["content"] for m in synthetic_memories(min(memories, 2000), seed=3)]
        raw.embed(sample[:64])  # warm up
        started = time.perf_counter()
        raw.embed(sample)
        raw_rate = len(sample) / (time.perf_counter() - started)
        one_query = []
        for text in synthetic_queries(100, seed=98):
            started = time.perf_counter()
            raw.embed_query(text)
            one_query.append(time.perf_counter() - started)

        embedder = raw
        if sampled:
            embedder = SampledDocuments(raw, _sample_vectors(raw, SAMPLE_SIZE, sample_cache()))
        engine = MemoryEngine(settings, embedder=embedder)
        principal = Principal.local("bench")
        done = [0]

        def report_progress(count: int) -> None:
            done[0] += count
            if done[0] % 100_000 < count:
                print(f"bench: {done[0]} memories in {time.perf_counter() - started:.0f} s", file=sys.stderr)

        lines = (
            line
            for offset in range(0, memories, CHUNK)  # a chunk at a time: 1M lines would hold GBs
            for line in synthetic_memories(min(CHUNK, memories - offset), start=offset)
        )
        started = time.perf_counter()
        import_records(engine, principal, lines, batch_size=256, progress=report_progress)  # one optimize, at the end
        ingest_seconds = time.perf_counter() - started

        texts = synthetic_queries(queries)
        for warm in synthetic_queries(10, seed=99):
            recall_context(engine, prepare_read(engine, principal, RecallRequest(query=warm)))
        latencies = []
        for query in texts:
            started = time.perf_counter()
            recall_context(engine, prepare_read(engine, principal, RecallRequest(query=query)))
            latencies.append(time.perf_counter() - started)
        search_latencies = []
        dense_query = raw.embed(["warm"])[0]
        flt = IndexFilter.from_read_filters(ReadFilters(owner_id="bench"))
        for query in texts:
            sparse = engine.sparse.query(query)
            started = time.perf_counter()
            engine.index.search(dense_query, sparse, flt, 50, 50)
            search_latencies.append(time.perf_counter() - started)
        engine.close()
        disk = _disk_bytes(Path(tmp))
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return {
        "backend": backend,
        "encoder": raw.name,
        "vectors": f"synthesised from {SAMPLE_SIZE} real embeddings (queries real)" if sampled else "real",
        "memories": memories,
        "queries": queries,
        "raw_encoder_per_s": round(raw_rate, 1),
        "one_query_embedding_ms": _percentiles(one_query),
        "ingest_per_s": round(memories / ingest_seconds, 1),
        "ingest_vs_raw_encoder": round(memories / ingest_seconds / raw_rate, 3),
        "recall_context_ms": _percentiles(latencies),
        "index_search_ms": _percentiles(search_latencies),
        "peak_rss_mb": round(peak_kib / 1024.0, 1),
        "disk_mb": round(disk / 2**20, 1),
    }


def run_bench(
    memories: int,
    queries: int,
    backends: list[str],
    qdrant_url: str | None = None,
    encoders: Sequence[str] = ("auto",),
    sampled: bool = False,
) -> dict[str, Any]:
    """Run each backend and encoder in a child process and put their figures and ratios side by side."""
    results: dict[str, Any] = {}
    for backend in backends:
        for encoder in encoders:
            label = backend if len(encoders) == 1 else f"{backend}/{encoder}"
            command = [
                sys.executable,
                "-m",
                "eval.bench",
                backend,
                encoder,
                str(memories),
                str(queries),
                qdrant_url or "",
                "sampled" if sampled else "real",
            ]
            print(f"bench: {label} with {memories} memories, {queries} queries ...", file=sys.stderr)
            child = subprocess.run(
                command, stdout=subprocess.PIPE, text=True, env={**os.environ, "TOKENIZERS_PARALLELISM": "false"}
            )
            if child.returncode != 0:
                raise RuntimeError(f"bench worker for {label} failed (its stderr is above)")
            results[label] = json.loads(child.stdout.strip().splitlines()[-1])
    report: dict[str, Any] = {"memories": memories, "queries": queries, "backends": results, "ratios": {}}
    if "edge" in results and "server" in results:
        edge, server = results["edge"], results["server"]
        report["ratios"].update(
            {
                "server_over_edge_recall_p50": round(
                    server["recall_context_ms"]["p50"] / edge["recall_context_ms"]["p50"], 2
                ),
                "server_over_edge_index_search_p50": round(
                    server["index_search_ms"]["p50"] / edge["index_search_ms"]["p50"], 2
                ),
                "edge_over_server_ingest": round(edge["ingest_per_s"] / server["ingest_per_s"], 2),
            }
        )
    for backend in backends:
        torch = results.get(f"{backend}/torch")
        for encoder in encoders:
            other = results.get(f"{backend}/{encoder}")
            if torch is None or other is None or encoder == "torch":
                continue
            report["ratios"][f"{backend}: {encoder} over torch"] = {
                "recall_context_p50": round(other["recall_context_ms"]["p50"] / torch["recall_context_ms"]["p50"], 2),
                "one_query_embedding_p50": round(
                    other["one_query_embedding_ms"]["p50"] / torch["one_query_embedding_ms"]["p50"], 2
                ),
                "raw_encoder_per_s": round(other["raw_encoder_per_s"] / torch["raw_encoder_per_s"], 2),
                "ingest_per_s": round(other["ingest_per_s"] / torch["ingest_per_s"], 2),
                "peak_rss_mb": round(other["peak_rss_mb"] / torch["peak_rss_mb"], 2),
            }
    return report


def format_report(report: dict[str, Any]) -> str:
    lines = [f"{report['memories']} memories, {report['queries']} recall_context queries"]
    for name, r in report["backends"].items():
        lat = r["recall_context_ms"]
        lines.append(
            f"{name:14s} {r['encoder']}, vectors {r['vectors']}\n"
            f"{'':14s} ingest {r['ingest_per_s']:8.1f}/s ({r['ingest_vs_raw_encoder']:.0%} of raw encoder "
            f"{r['raw_encoder_per_s']:.1f}/s)  one query embedding p50 {r['one_query_embedding_ms']['p50']:.2f} ms\n"
            f"{'':14s} recall_context p50 {lat['p50']:.2f} ms p95 {lat['p95']:.2f} p99 {lat['p99']:.2f}  "
            f"index search p50 {r['index_search_ms']['p50']:.2f} ms  peak RSS {r['peak_rss_mb']} MB  "
            f"disk {r['disk_mb']} MB"
        )
    for key, value in report.get("ratios", {}).items():
        lines.append(f"{key}: {value}")
    return "\n".join(lines)


if __name__ == "__main__":
    backend_name = sys.argv[1]
    print(
        json.dumps(
            _worker(
                backend_name,
                sys.argv[2],
                int(sys.argv[3]),
                int(sys.argv[4]),
                sys.argv[5] or None,
                sys.argv[6] == "sampled",
            )
        )
    )
