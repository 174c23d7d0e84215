"""Reports of an evaluation: the JSON document, a Markdown page, a PNG chart, TREC runs, and the floors check."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .metrics import write_trec_run

__all__ = ["EXPECTED_SCORES", "check_floors", "write_outputs"]

EXPECTED_SCORES = Path(__file__).with_name("expected_scores.json")


def check_floors(report: dict[str, Any], expected_path: Path = EXPECTED_SCORES) -> list[dict[str, Any]]:
    """Compare each expected score of this data set with the report: OK within tolerance, FAIL below."""
    expected = json.loads(expected_path.read_text()).get(report["dataset"], {})
    expected = {name: rules for name, rules in expected.items() if not name.startswith("_")}
    checks = []
    for strategy, metrics in expected.items():
        scores = report["strategies"].get(strategy)
        if scores is None:
            continue
        for metric, rule in metrics.items():
            if metric not in scores:
                continue
            floor = round(rule["expected"] - rule["tolerance"], 4)
            checks.append(
                {
                    "strategy": strategy,
                    "metric": metric,
                    "score": scores[metric],
                    "expected": rule["expected"],
                    "floor": floor,
                    "status": "OK" if scores[metric] >= floor else "FAIL",
                }
            )
    return checks


# A report's parts: each strategy's scores over a part of the questions.
_PARTS = (
    ("by_type", "question type"),
    ("by_category", "category"),
    ("by_conversation", "conversation"),
    ("halves", "half of the questions (a: choose on it, b: report it)"),
)


def _part_table(title: str, parts: dict[str, dict[str, float]], metrics: list[str]) -> list[str]:
    lines = [
        "",
        f"{title}:",
        "",
        "| part | queries | " + " | ".join(metrics) + " |",
        "|---|---|" + "---|" * len(metrics),
    ]
    for part, scores in parts.items():
        row = " | ".join(f"{scores.get(m, 0.0):.4f}" for m in metrics)
        lines.append(f"| {part} | {int(scores['queries'])} | {row} |")
    return lines


def _markdown(report: dict[str, Any]) -> str:
    strategies = report["strategies"]
    metrics = [m for m in next(iter(strategies.values())) if m != "queries"]
    lines = [
        f"# {report['dataset']}: {report['queries']} judged queries",
        "",
        "| strategy | " + " | ".join(metrics) + " |",
        "|---|" + "---|" * len(metrics),
    ]
    for name, scores in strategies.items():
        lines.append(f"| {name} | " + " | ".join(f"{scores[m]:.4f}" for m in metrics) + " |")
    if "category_5" in report:
        lines += [
            "",
            "Category 5 (adversarial), reported apart:",
            "",
            "| strategy | recall@5 | recall@10 |",
            "|---|---|---|",
        ]
        lines += [
            f"| {n} | {s.get('recall@5', 0):.4f} | {s.get('recall@10', 0):.4f} |"
            for n, s in report["category_5"].items()
        ]
    for key, title in _PARTS:
        for name, parts in report.get(key, {}).items():
            lines += _part_table(f"{name} by {title}", parts, metrics)
    if "pack" in report:
        pack = report["pack"]
        used = pack.get("mean_used_tokens", pack.get("used_tokens"))
        lines += [
            "",
            f"Context pack (max_tokens {pack['max_tokens']}): all evidence in the pack for "
            f"{pack['all_evidence_in_pack']:.1%} of questions, {used} tokens used on average.",
        ]
    if report.get("checks"):
        lines += ["", "| check | score | floor | status |", "|---|---|---|---|"]
        lines += [
            f"| {c['strategy']} {c['metric']} | {c['score']:.4f} | {c['floor']:.4f} | {c['status']} |"
            for c in report["checks"]
        ]
    lines += ["", f"Time {report['timing']['total_s']} s, peak RSS {report['peak_rss_mb']} MB."]
    return "\n".join(lines) + "\n"


def _chart(report: dict[str, Any], path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    strategies = report["strategies"]
    first = next(iter(strategies.values()))
    families = [f for f in ("ndcg", "recall", "mrr") if any(m.startswith(f"{f}@") for m in first)]
    if not families:  # LongMemEval's own metrics: bars per metric and strategy
        _bars(report, path, plt)
        return
    ks = sorted({int(m.split("@")[1]) for m in first if "@" in m})
    figure, axes = plt.subplots(1, len(families), figsize=(4 * len(families), 3.4))
    for axis, family in zip(axes, families, strict=True):
        for name, scores in strategies.items():
            axis.plot(ks, [scores[f"{family}@{k}"] for k in ks], marker="o", label=name)
        axis.set_title(f"{family}@k")
        axis.set_xlabel("k")
        axis.set_xticks(ks)
        axis.grid(alpha=0.3)
    axes[0].legend()
    figure.suptitle(f"{report['dataset']} ({report['queries']} queries)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _bars(report: dict[str, Any], path: Path, plt: Any) -> None:
    strategies = report["strategies"]
    metrics = [m for m in next(iter(strategies.values())) if m != "queries"]
    figure, axis = plt.subplots(figsize=(2 + 1.6 * len(metrics), 3.4))
    width = 0.8 / len(strategies)
    for offset, (name, scores) in enumerate(strategies.items()):
        axis.bar([i + offset * width for i in range(len(metrics))], [scores[m] for m in metrics], width, label=name)
    axis.set_xticks([i + 0.4 - width / 2 for i in range(len(metrics))], metrics, rotation=20, fontsize=7)
    axis.set_ylim(0, 1)
    axis.legend(fontsize=7)
    figure.suptitle(f"{report['dataset']} ({report['queries']} queries)")
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def write_outputs(report: dict[str, Any], runs: dict[str, Any], directory: Path) -> list[Path]:
    """report.json, report.md, chart.png and one TREC run file per strategy."""
    directory.mkdir(parents=True, exist_ok=True)
    written = [directory / "report.json", directory / "report.md", directory / "chart.png"]
    written[0].write_text(json.dumps(report, indent=2) + "\n")
    written[1].write_text(_markdown(report))
    _chart(report, written[2])
    for strategy, run in runs.items():
        path = directory / f"run.{strategy}.trec"
        write_trec_run(path, run, f"xmemo-{strategy}")
        written.append(path)
    return written
