"""The encoder jobs of `python -m eval.encoders` (the package's docstring says what each measures)."""

from __future__ import annotations

import json
import resource
import statistics
import time
from pathlib import Path
from typing import Any

import psutil

from retrieval import RetrievalSettings
from retrieval.encoding import open_embedder

from ..ablations import per_conversation
from ..datasets import SHARED_DATA, load_dataset, load_locomo, slice_dataset
from ..longmemeval import evaluate_longmemeval
from ..runner import evaluate
from .bilingual import SUITE, evaluate_bilingual

__all__ = ["ENCODERS", "headline", "measure_batching", "measure_speed", "run"]

# name -> RetrievalSettings overrides
ENCODERS: dict[str, dict[str, Any]] = {
    "minilm": {"encoder": "minilm", "embedding_backend": "onnx"},
    "int8": {"encoder": "minilm", "embedding_backend": "onnx-int8"},
    "multilingual": {"encoder": "multilingual"},
    "use": {"encoder": "multilingual"},  # what `multilingual` runs
    "e5": {"encoder": "multilingual-e5"},
}
STRATEGIES = ("hybrid", "dense")
SPEED_TEXTS = 512  # LoCoMo turns encoded as one job: what an import hands the encoder
SPEED_QUERIES = 100
BATCHING_TEXTS = 2000
BATCH_SIZES = (8, 16, 32, 64, 128)


def _locomo(settings: dict[str, Any], _n: int | None) -> dict[str, Any]:
    dataset = load_dataset("locomo", SHARED_DATA)
    report = evaluate(dataset, STRATEGIES, (5, 10), settings=settings)
    runs = report.pop("runs")
    report["per_conversation"] = {s: per_conversation(dataset, runs[s]) for s in STRATEGIES}
    return report


def _scifact(settings: dict[str, Any], n: int | None) -> dict[str, Any]:
    dataset = load_dataset("scifact", SHARED_DATA)
    if n is not None:
        dataset = slice_dataset(dataset, n)
    report = evaluate(dataset, STRATEGIES, (10,), settings=settings)
    report.pop("runs")
    return report


def _longmemeval(settings: dict[str, Any], n: int | None) -> dict[str, Any]:
    report = evaluate_longmemeval(
        load_dataset("longmemeval", SHARED_DATA), STRATEGIES, query_limit=n, settings=settings
    )
    report.pop("runs")
    return report


def _bilingual(settings: dict[str, Any], _n: int | None) -> dict[str, Any]:
    return evaluate_bilingual(SUITE, settings)


def measure_speed(settings: dict[str, Any], _n: int | None = None) -> dict[str, Any]:
    """Texts/s on one job of LoCoMo turns (no cache), p50 of one warm query, RSS before and after load."""
    dataset = load_locomo(SHARED_DATA / "locomo" / "locomo-dev.json")
    texts = [f"{d.speaker}: {d.text}" if d.speaker else d.text for d in dataset.docs[:SPEED_TEXTS]]
    queries = [q.text for q in dataset.queries[:SPEED_QUERIES]]
    process = psutil.Process()
    before = process.memory_info().rss
    embedder = open_embedder(RetrievalSettings(**settings))
    embedder.embed(texts[:8])  # load and warm
    embedder.embed_query(queries[0])
    loaded = process.memory_info().rss
    started = time.perf_counter()
    embedder.embed(texts)
    encode_s = time.perf_counter() - started
    latencies = []
    for query in queries:
        started = time.perf_counter()
        embedder.embed_query(query)
        latencies.append(time.perf_counter() - started)
    return {
        "encoder": embedder.name,
        "threads": RetrievalSettings(**settings).encoder_threads,
        "texts": len(texts),
        "encode_texts_per_s": round(len(texts) / encode_s, 1),
        "query_p50_ms": round(1000 * statistics.median(latencies), 2),
        "query_p95_ms": round(1000 * statistics.quantiles(latencies, n=20)[18], 2),
        "rss_loaded_encoder_mb": round((loaded - before) / 2**20, 1),
        "rss_mb": round(process.memory_info().rss / 2**20, 1),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
    }


def measure_batching(settings: dict[str, Any], _n: int | None = None) -> dict[str, Any]:
    """Sentence units of LoCoMo turns (short texts, what `dense_units` adds) in batches as they come and
    in `length_groups`, at several batch sizes: padding (padded tokens per real token) and texts/s."""
    from retrieval.domain import SENTENCE_END
    from retrieval.encoding import OnnxEmbedder, length_groups

    dataset = load_locomo(SHARED_DATA / "locomo" / "locomo-dev.json")
    units = [f"{d.speaker}: {s}" for d in dataset.docs for s in SENTENCE_END.split(d.text) if s.strip()]
    units = units[:BATCHING_TEXTS]
    embedder = open_embedder(RetrievalSettings(**settings))
    if not isinstance(embedder, OnnxEmbedder):
        raise SystemExit("the batching job measures the ONNX encoder (minilm or int8)")
    token_ids = embedder.tokenized(units)
    real = sum(len(ids) for ids in token_ids)
    embedder.run_tokens(token_ids[:8])  # warm
    rows = []
    for size in BATCH_SIZES:
        orders = {
            "as they come": [list(range(i, min(i + size, len(units)))) for i in range(0, len(units), size)],
            "length_groups": length_groups([len(ids) for ids in token_ids], size),
        }
        for order, groups in orders.items():
            padded = sum(len(g) * max(len(token_ids[i]) for i in g) for g in groups)
            started = time.perf_counter()
            for group in groups:
                embedder.run_tokens([token_ids[i] for i in group])
            elapsed = time.perf_counter() - started
            rows.append(
                {
                    "batch_size": size,
                    "order": order,
                    "runs": len(groups),
                    "padding_per_token": round(padded / real - 1, 3),
                    "texts_per_s": round(len(units) / elapsed, 1),
                }
            )
    return {
        "encoder": embedder.name,
        "threads": embedder.threads,
        "units": len(units),
        "mean_tokens": round(real / len(units), 1),
        "rows": rows,
    }


_JOBS = {
    "batching": measure_batching,
    "locomo": _locomo,
    "scifact": _scifact,
    "lme": _longmemeval,
    "bilingual": _bilingual,
    "speed": measure_speed,
}


def run(job: str, out: Path = Path(".cache/xmemo/encoders")) -> dict[str, Any]:
    """`ENCODER:DATASET[:N]`, e.g. `multilingual:lme:28`; the report, also written under `out`."""
    encoder, dataset, *rest = job.split(":")
    n = int(rest[0]) if rest else None
    report = _JOBS[dataset](ENCODERS[encoder], n)
    report["job"] = job
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{job.replace(':', '-')}.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


def headline(report: dict[str, Any]) -> dict[str, Any]:
    if "strategies" not in report:  # speed and batching: small already
        return report
    keys = (
        "strategies",
        "category_5",
        "per_conversation",
        "by_direction",
        "encode_texts_per_s",
        "query_p50_ms",
        "rss_loaded_encoder_mb",
        "rows",
    )
    return {key: report[key] for key in keys if key in report} | {"timing": report.get("timing")}
