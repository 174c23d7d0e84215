"""`xmemo eval`, `bench`, `bench-reflect` and `bench-cache`: the measurement commands, which run the
offline evaluation and the benchmarks of `eval/` (imported when run)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import click

from retrieval import ValidationError

from .common import EXIT_USER, emit

__all__ = ["bench_command", "eval_command"]


@click.command("bench-reflect")
@click.option("--dataset", default="locomo", show_default=True, help="locomo, or a LoCoMo JSON file.")
@click.option(
    "--copies",
    type=click.IntRange(1, 20),
    default=2,
    show_default=True,
    help="Load the conversations this many times (later copies a year apart) to reach the size wanted.",
)
@click.option("--limit", type=click.IntRange(1, 5000), default=5000, show_default=True)
@click.option(
    "--compare-clustering", "compare", is_flag=True, help="Also compare clustering methods on the same vectors."
)
@click.option(
    "--shared-data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="XMEMO_SHARED_DATA",
    help="Where `locomo` lives (default: ../shared/data beside the project).",
)
@click.option("--json", "as_json", is_flag=True)
def bench_reflect_command(
    dataset: str, copies: int, limit: int, compare: bool, shared_data: Path | None, as_json: bool
) -> None:
    """Time reflect (dry and real run) on LoCoMo turns as episodic memories; print sample summaries."""
    from eval.reflect_bench import clustering_inputs, compare_clustering, locomo_records, run_reflect_bench

    records = locomo_records(dataset, copies, shared_data)
    report = run_reflect_bench(records, limit=limit, progress=lambda line: click.echo(line, err=True))
    if compare:
        report["clustering"] = compare_clustering(*clustering_inputs(dataset, shared_data))
    if as_json:
        emit(report)
        return
    click.echo(json.dumps(report, ensure_ascii=False, indent=2))


@click.command("bench-cache")
@click.option("--dataset", default="locomo", show_default=True, help="locomo, or a LoCoMo JSON file.")
@click.option(
    "--common-docs",
    type=click.IntRange(0, 10_000),
    default=50,
    show_default=True,
    help="Documents every tenant stores alike (company boilerplate).",
)
@click.option(
    "--common-queries",
    type=click.IntRange(0, 10_000),
    default=20,
    show_default=True,
    help="Generic queries every tenant's agent asks alike.",
)
@click.option(
    "--shared-data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="XMEMO_SHARED_DATA",
    help="Where `locomo` lives (default: ../shared/data beside the project).",
)
@click.option("--json", "as_json", is_flag=True)
def bench_cache_command(
    dataset: str, common_docs: int, common_queries: int, shared_data: Path | None, as_json: bool
) -> None:
    """Count model encodes with per-tenant cache keys against one shared cache, on a multi-tenant mix."""
    from eval.cache_bench import run_cache_bench
    from eval.datasets import SHARED_DATA, load_dataset

    try:
        loaded = load_dataset(dataset, shared_data or SHARED_DATA)
    except (FileNotFoundError, ValueError, KeyError) as error:
        raise ValidationError(f"cannot load {dataset}: {error}") from error
    report = run_cache_bench(loaded, common_docs, common_queries)
    if as_json:
        emit(report)
        return
    for kind, one in (("documents", "document"), ("queries", "query")):
        click.echo(
            f"{kind:9s} shared {report['encodes']['shared'][kind]:6d}  per-tenant "
            f"{report['encodes']['per_tenant'][kind]:6d}  extra {report['extra'][kind]:5d}  "
            f"ratio {report['ratio'][kind]:.4f}  ({report['model_ms_per_text'][one]} ms each)"
        )
    click.echo(
        f"{report['tenants']} tenants, {report['stored']} texts stored, {report['asked']} queries asked; "
        f"extra model time {report['extra_model_seconds']} s"
    )


@click.command("bench")
@click.option("--memories", type=click.IntRange(10, 1_000_000), default=10_000, show_default=True)
@click.option("--queries", type=click.IntRange(1, 100_000), default=200, show_default=True)
@click.option(
    "--backend",
    "backends",
    default="edge,server",
    show_default=True,
    help="Comma list of edge (Qdrant Edge) and server (qdrant-client; local mode unless --qdrant-url).",
)
@click.option(
    "--encoder",
    "encoders",
    default="auto",
    show_default=True,
    help="Comma list of auto, onnx, onnx-int8 and torch; with torch among them, ratios against it.",
)
@click.option(
    "--synthetic-vectors",
    is_flag=True,
    help="Synthesise document vectors from a cached sample of real embeddings (queries stay real): "
    "for sizes this machine cannot encode in a run.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_command(
    ctx: click.Context,
    memories: int,
    queries: int,
    backends: str,
    encoders: str,
    synthetic_vectors: bool,
    as_json: bool,
) -> None:
    """Measure ingest throughput, recall_context latency, memory and disk, per backend and encoder, in one run."""
    from eval.bench import run_bench

    names = [b.strip() for b in backends.split(",") if b.strip()]
    unknown = set(names) - {"edge", "server"}
    if unknown or not names:
        raise ValidationError(f"unknown backend(s): {', '.join(sorted(unknown)) or '(none)'}")
    chosen = [e.strip() for e in encoders.split(",") if e.strip()]
    unknown = set(chosen) - {"auto", "onnx", "onnx-int8", "torch"}
    if unknown or not chosen:
        raise ValidationError(f"unknown encoder(s): {', '.join(sorted(unknown)) or '(none)'}")
    report = run_bench(
        memories=memories,
        queries=queries,
        backends=names,
        qdrant_url=ctx.find_root().params.get("qdrant_url"),
        encoders=chosen,
        sampled=synthetic_vectors,
    )
    if as_json:
        emit(report)
    else:
        from eval.bench import format_report

        click.echo(format_report(report))


@click.command("eval")
@click.option(
    "--dataset",
    "spec",
    required=True,
    help="scifact, locomo, longmemeval, a BEIR directory, a LoCoMo JSON file or a LongMemEval JSON lines file.",
)
@click.option("--strategy", "strategies", default="dense,bm25,rrf,hybrid", show_default=True)
@click.option("--k", "ks", default="5,10", show_default=True, help="Comma list of cut-offs.")
@click.option(
    "--slice",
    "slice_queries",
    type=click.IntRange(1, None),
    default=None,
    help="Evaluate the first N judged queries against a thinned corpus (the CI slice).",
)
@click.option(
    "--out",
    "out_dir",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    help="Write report.json, report.md, chart.png and TREC runs here.",
)
@click.option(
    "--shared-data",
    type=click.Path(file_okay=False, path_type=Path),
    default=None,
    envvar="XMEMO_SHARED_DATA",
    help="Where `scifact` and `locomo` live (default ../shared/data).",
)
@click.option(
    "--alpha",
    type=click.FloatRange(0.0, 1.0),
    default=None,
    help="Dense weight of the hybrid fusion, for sweeps (default: the production weight).",
)
@click.option("--pack-floors", default="", help="Comma list of relevance floors to sweep the pack over (0 to 1).")
@click.option(
    "--lifecycle",
    is_flag=True,
    help="Replay LoCoMo session by session with and without reflect, then compare recall_context.",
)
@click.option("--json", "as_json", is_flag=True)
def eval_command(
    spec: str,
    strategies: str,
    ks: str,
    slice_queries: int | None,
    out_dir: Path | None,
    shared_data: Path | None,
    alpha: float | None,
    pack_floors: str,
    lifecycle: bool,
    as_json: bool,
) -> None:
    """Score the production ranking against its channels on a judged data set; exit 1 below a floor."""
    from eval.datasets import SHARED_DATA, load_dataset, slice_dataset
    from eval.report import check_floors, write_outputs
    from eval.runner import STRATEGIES, evaluate

    names, cutoffs = _strategies(strategies, STRATEGIES), _cutoffs(ks)
    try:
        dataset = load_dataset(spec, shared_data or SHARED_DATA)
    except (FileNotFoundError, ValueError, KeyError) as error:
        raise ValidationError(f"cannot load {spec}: {error}") from error
    if slice_queries is not None:
        dataset = slice_dataset(dataset, slice_queries)
    if lifecycle:
        _eval_lifecycle(dataset, as_json)
        return
    if dataset.kind == "longmemeval":
        from eval.longmemeval import evaluate_longmemeval

        report = evaluate_longmemeval(dataset, names, alpha=alpha)
    else:
        report = evaluate(dataset, names, cutoffs, alpha=alpha, pack_floors=_floors(pack_floors))
    runs = report.pop("runs")
    report["checks"] = check_floors(report) if alpha is None else []  # floors hold for the production ranking
    if out_dir is not None:
        write_outputs(report, runs, out_dir)
    if as_json:
        emit(report)
    else:
        _print_scores(report)
    if any(check["status"] == "FAIL" for check in report["checks"]):
        sys.exit(EXIT_USER)


def _strategies(text: str, known: Sequence[str]) -> list[str]:
    names = [s.strip() for s in text.split(",") if s.strip()]
    if not names or set(names) - set(known):
        raise ValidationError(f"--strategy takes a comma list of {', '.join(known)}")
    return names


def _cutoffs(text: str) -> list[int]:
    try:
        cutoffs = sorted({int(k) for k in text.split(",") if k.strip()})
    except ValueError as error:
        raise ValidationError("--k takes a comma list of positive integers") from error
    if not cutoffs or cutoffs[0] < 1:
        raise ValidationError("--k takes a comma list of positive integers")
    return cutoffs


def _print_scores(report: dict[str, Any]) -> None:
    """An evaluation's scores as lines: each strategy, each part of the questions (type, category,
    conversation, half), the pack, each pack floor, each check."""
    for name, scores in report["strategies"].items():
        click.echo(f"{name:7s} " + "  ".join(f"{m} {v:.4f}" for m, v in scores.items() if m != "queries"))
    for key in ("by_type", "by_category", "by_conversation", "halves", "pack_halves"):
        for name, parts in report.get(key, {}).items():
            if key == "pack_halves":
                name, parts = "pack", {name: parts}
            for part, scores in parts.items():
                click.echo(f"{name:7s} {part:27s} " + "  ".join(f"{m} {v:.4f}" for m, v in scores.items()))
    if "pack" in report:
        click.echo("pack    " + "  ".join(f"{m} {v}" for m, v in report["pack"].items()))
    for row in report.get("pack_floors", []):
        click.echo("pack    " + "  ".join(f"{m} {v}" for m, v in row.items()))
    for check in report["checks"]:
        click.echo(
            f"{check['status']:4s} {check['strategy']} {check['metric']} {check['score']:.4f} "
            f"(floor {check['floor']:.4f})"
        )


def _floors(text: str) -> list[float]:
    try:
        floors = [float(f) for f in text.split(",") if f.strip()]
    except ValueError as error:
        raise ValidationError("--pack-floors takes a comma list of numbers from 0 to 1") from error
    if any(not 0.0 <= f <= 1.0 for f in floors):
        raise ValidationError("--pack-floors takes a comma list of numbers from 0 to 1")
    return floors


def _eval_lifecycle(dataset: Any, as_json: bool) -> None:
    """`xmemo eval --lifecycle`: both arms, reflect's totals and quality, and the checks (exit 1 on FAIL)."""
    from eval.lifecycle_replay import evaluate_lifecycle, lifecycle_checks

    if dataset.kind != "locomo":
        raise ValidationError("--lifecycle replays a LoCoMo file (its sessions and dates); give --dataset locomo")
    report = evaluate_lifecycle(dataset)
    checks = report["lifecycle"]["checks"] = lifecycle_checks(report["lifecycle"])
    if as_json:
        emit(report)
    else:
        found = report["lifecycle"]
        for arm in ("baseline", "reflected"):
            click.echo(f"{arm:9s} " + "  ".join(f"{m} {v}" for m, v in found[arm].items()))
        tight = found["tight"]
        for arm in ("baseline", "reflected"):
            scores = "  ".join(f"{m} {v}" for m, v in tight[arm].items())
            click.echo(f"{arm:9s} at {tight['max_tokens']} tokens: {scores}")
        click.echo("reflect   " + "  ".join(f"{m} {v}" for m, v in report["lifecycle"]["reflect_totals"].items()))
        for check in checks:
            click.echo(f"{check['status']:4s} {check['check']}")
    if any(check["status"] == "FAIL" for check in checks):
        sys.exit(EXIT_USER)
