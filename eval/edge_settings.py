"""What Qdrant Edge's settings change: HNSW shape, quantisation, storage types, on-disk placement.

    python -m eval.edge_settings [--points 200000] [--queries 200] [--settings default,...] [--json]

Each setting builds its own shard of `--points` dense vectors in a fresh process (so peak RSS is
that setting's own; a search-only setting, such as a larger `hnsw_ef`, builds the default shard),
with the payload and filter that production searches use, then answers the same real query
embeddings twice: approximately, as production does, and exactly (a full scan), which gives
recall@10 of the approximate answer, and the same at production's candidate depth (the dense list
the hybrid fusion ranks from, retrieval/usecases/retrieve.py CANDIDATE_DEPTH): recall of the exact
top 50 and the share of the exact top 10 that the approximate top 50 holds, so the fusion sees it.
Document vectors are synthesised from 4,096 real embeddings of synthetic notes (the benchmark's
method, eval/bench.py); queries are real embeddings. The dense channel alone is measured: the sparse
BM25 channel is not changed by these settings, and synthesised vectors have no text to match.

Reports, per setting: build seconds (upserts, then the HNSW build), search p50/p95/p99, recall@10
against exact search, the shard's resident memory (RSS growth over the build and the searches),
the process's peak RSS and disk, with ratios against `default` (Edge's defaults: float32 vectors and
the search's own `hnsw_ef`, production until float16 and SEARCH_EF 128 became its settings, the
`production` row).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import psutil

from retrieval import RetrievalSettings
from retrieval.index import EDGE_DATATYPES
from retrieval.index import SEARCH_EF as PRODUCTION_EF
from retrieval.usecases import CANDIDATE_DEPTH

from .bench import SAMPLE_SIZE, _percentiles, _sample_vectors, sample_cache, synthetic_queries

BATCH = 2048


def _settings() -> dict[str, Callable[[int], Any]]:
    """Each setting's EdgeConfig for `dimension`; `production` is what retrieval.index.edge creates.
    A setting that changes only the search (SEARCH_EF) builds the default shard."""
    import qdrant_edge as qe

    def config(hnsw: Any = None, quantization: Any = None, **vector: Any) -> Callable[[int], Any]:
        def build(dimension: int) -> Any:
            return qe.EdgeConfig(
                vectors={"dense": qe.EdgeVectorParams(size=dimension, distance=qe.Distance.Cosine, **vector)},
                hnsw_config=hnsw,
                quantization_config=quantization,
            )

        return build

    return {
        "default": config(),
        "float16": config(datatype=qe.VectorStorageDatatype.Float16),
        "int8-quantised": config(
            quantization=qe.ScalarQuantizationConfig(qe.ScalarType.Int8, quantile=0.99, always_ram=True)
        ),
        "vectors-on-disk": config(memory=qe.Memory.Cold),
        "hnsw-m32": config(hnsw=qe.HnswIndexConfig(m=32, ef_construct=200, full_scan_threshold=10_000)),
        "hnsw-m8": config(hnsw=qe.HnswIndexConfig(m=8, ef_construct=64, full_scan_threshold=10_000)),
        "search-ef128": config(),
        "production": config(datatype=EDGE_DATATYPES[RetrievalSettings.model_fields["index_vector_datatype"].default]),
    }


#: Settings that search with another `hnsw_ef` (candidates kept while searching) than Edge's default.
SEARCH_EF = {"search-ef128": 128, "production": PRODUCTION_EF}


def _vectors(points: int, dimension_source: np.ndarray, seed: int = 5) -> np.ndarray:
    """`points` unit vectors: a real sample vector each, perturbed as eval.bench.SampledDocuments does."""
    rng = np.random.default_rng(seed)
    dimension = dimension_source.shape[1]
    out = dimension_source[rng.integers(0, len(dimension_source), points)].astype(np.float32)
    out += rng.normal(0.0, 0.15 / np.sqrt(dimension), out.shape).astype(np.float32)
    out /= np.linalg.norm(out, axis=1, keepdims=True)
    return out


def _real_embeddings(queries: int) -> tuple[np.ndarray, np.ndarray]:
    """(sample of real note embeddings, real query embeddings), the notes from the evaluation cache."""
    from retrieval.encoding import open_embedder

    with tempfile.TemporaryDirectory(prefix="xmemo-edge-settings-") as tmp:
        encoder = open_embedder(RetrievalSettings(data_dir=Path(tmp)))
        sample = _sample_vectors(encoder, SAMPLE_SIZE, sample_cache())
        query_vectors = encoder.embed(synthetic_queries(queries, seed=31))
    return np.asarray(sample, dtype=np.float32), np.asarray(query_vectors, dtype=np.float32)


def measure(name: str, points: int, arrays: Path) -> dict[str, Any]:
    """Build one setting's shard and search it; runs in its own process (see main)."""
    import qdrant_edge as qe

    data = np.load(arrays)
    documents = _vectors(points, data["sample"])
    queries = data["queries"]
    flt = qe.Filter(
        must=[
            qe.FieldCondition("visibility", match=qe.MatchAny(["private", "team"])),
            qe.FieldCondition("status", match=qe.MatchAny(["active"])),
        ]
    )
    process = psutil.Process()
    with tempfile.TemporaryDirectory(prefix=f"xmemo-edge-{name}-") as tmp:
        before = process.memory_info().rss
        shard = qe.EdgeShard.create(tmp, _settings()[name](documents.shape[1]))
        for key in ("visibility", "status"):
            shard.update(qe.UpdateOperation.create_field_index(key, qe.PayloadSchemaType.Keyword))
        started = time.perf_counter()
        for offset in range(0, points, BATCH):
            shard.update(
                qe.UpdateOperation.upsert_points(
                    [
                        qe.Point(
                            offset + row,
                            {"dense": vector.tolist()},
                            {"status": "active", "visibility": "team" if (offset + row) % 3 else "private"},
                        )
                        for row, vector in enumerate(documents[offset : offset + BATCH])
                    ]
                )
            )
        upsert_seconds = time.perf_counter() - started
        shard.optimize()
        build_seconds = time.perf_counter() - started

        def search(vector: np.ndarray, exact: bool, limit: int = 10) -> list[int]:
            ef = SEARCH_EF.get(name)
            params = qe.SearchParams(exact=True) if exact else qe.SearchParams(hnsw_ef=ef and max(ef, limit))
            request = qe.QueryRequest(
                limit=limit, query=qe.Query.Nearest(vector.tolist(), using="dense"), filter=flt, params=params
            )
            return [int(point.id) for point in shard.query(request)]

        for vector in queries[:10]:  # warm
            search(vector, exact=False)
        latencies, found = [], []
        for vector in queries:
            started = time.perf_counter()
            found.append(search(vector, exact=False))
            latencies.append(time.perf_counter() - started)
        resident = process.memory_info().rss - before  # the shard's own, after its build and searches
        truth = [search(vector, exact=True) for vector in queries]
        deep = [search(vector, exact=False, limit=CANDIDATE_DEPTH) for vector in queries]
        deep_truth = [search(vector, exact=True, limit=CANDIDATE_DEPTH) for vector in queries]
        shard.flush()
        disk = sum(p.stat().st_size for p in Path(tmp).rglob("*") if p.is_file())
        shard.close()

    def recall_of(answers: list[list[int]], truths: list[list[int]]) -> float:
        shares = [len(set(a) & set(b)) / max(1, len(b)) for a, b in zip(answers, truths, strict=True)]
        return round(float(np.mean(shares)), 4)

    return {
        "setting": name,
        "points": points,
        "upsert_s": round(upsert_seconds, 3),
        "build_s": round(build_seconds, 3),
        "search_ms": _percentiles(latencies),
        "recall_at_10": recall_of(found, truth),
        f"recall_at_{CANDIDATE_DEPTH}": recall_of(deep, deep_truth),
        f"top10_in_{CANDIDATE_DEPTH}": recall_of(deep, truth),
        "shard_rss_mb": round(resident / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "disk_mb": round(disk / 2**20, 1),
    }


def _ratio(value: float, base: float) -> float | None:
    """value / base to two decimals; None when the base measured nothing (a tiny run)."""
    return round(value / base, 2) if base > 0 else None


def run_study(points: int, queries: int, names: list[str]) -> dict[str, Any]:
    unknown = sorted(set(names) - set(_settings()))
    if unknown:
        raise SystemExit(f"unknown setting(s): {', '.join(unknown)}; known: {', '.join(_settings())}")
    sample, query_vectors = _real_embeddings(queries)
    rows = []
    with tempfile.TemporaryDirectory(prefix="xmemo-edge-settings-") as tmp:
        arrays = Path(tmp) / "arrays.npz"
        np.savez(arrays, sample=sample, queries=query_vectors)
        for name in names:
            print(f"edge-settings: {name} with {points} points ...", file=sys.stderr)
            result = subprocess.run(
                [sys.executable, "-m", "eval.edge_settings", "--worker", name, str(points), str(arrays)],
                capture_output=True,
                text=True,
                check=False,
            )
            if result.returncode != 0:
                raise SystemExit(f"the {name} worker failed:\n{result.stderr[-2000:]}")
            rows.append(json.loads(result.stdout))
    base = next((row for row in rows if row["setting"] == "default"), None)
    if base is not None:
        for row in rows:
            row["vs_default"] = {
                "build": _ratio(row["build_s"], base["build_s"]),
                "search_p50": _ratio(row["search_ms"]["p50"], base["search_ms"]["p50"]),
                "shard_rss": _ratio(row["shard_rss_mb"], base["shard_rss_mb"]),
                "disk": _ratio(row["disk_mb"], base["disk_mb"]),
            }
    return {
        "points": points,
        "queries": queries,
        "vectors": f"synthesised from {SAMPLE_SIZE} real embeddings (queries real)",
        "settings": rows,
    }


def format_report(report: dict[str, Any]) -> str:
    lines = [
        f"Qdrant Edge settings, {report['points']} points, {report['queries']} queries ({report['vectors']})",
        f"| setting | build s | search p50 / p95 / p99 ms | recall@10 | recall@{CANDIDATE_DEPTH} | top 10 in "
        f"{CANDIDATE_DEPTH} | shard RSS MB | peak RSS MB | disk MB | vs default (build, p50, shard RSS, disk) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in report["settings"]:
        ratio = row.get("vs_default", {})
        search = row["search_ms"]
        lines.append(
            f"| {row['setting']} | {row['build_s']} | {search['p50']} / {search['p95']} / {search['p99']} | "
            f"{row['recall_at_10']} | {row[f'recall_at_{CANDIDATE_DEPTH}']} | {row[f'top10_in_{CANDIDATE_DEPTH}']} | "
            f"{row['shard_rss_mb']} | {row['peak_rss_mb']} | {row['disk_mb']} | "
            f"{ratio.get('build', '-')}, {ratio.get('search_p50', '-')}, {ratio.get('shard_rss', '-')}, "
            f"{ratio.get('disk', '-')} |"
        )
    return "\n".join(lines)


def main() -> None:
    if len(sys.argv) == 5 and sys.argv[1] == "--worker":
        print(json.dumps(measure(sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]))))
        return
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, default=200_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--settings", default=",".join(_settings()), help="comma list; default first gives the ratios")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if not 100 <= args.points <= 5_000_000 or not 1 <= args.queries <= 10_000:
        parser.error("--points must be 100..5,000,000 and --queries 1..10,000")
    report = run_study(args.points, args.queries, [name.strip() for name in args.settings.split(",") if name.strip()])
    print(json.dumps(report, indent=2) if args.json else format_report(report))


if __name__ == "__main__":
    main()
