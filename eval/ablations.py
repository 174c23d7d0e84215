"""The ablations of the conversational ranking (docs/evaluation.md, "Recall on conversations"), one
sitting: each piece switched off through RetrievalSettings and hybrid_retrieve's switches.

    python -m eval.ablations locomo:whole locomo:S locomo:production lme:whole lme:production scifact:S

prints one JSON line per job (hybrid scores; LoCoMo also per conversation, category 5 apart) and
writes each report to .cache/xmemo/ablations/<dataset>-<name>.json.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from .datasets import SHARED_DATA, Dataset, load_dataset
from .longmemeval import evaluate_longmemeval
from .metrics import recall_at_k
from .runner import evaluate

__all__ = ["CONFIGURATIONS", "per_conversation", "run"]

_OFF = {"speaker_prior": False, "date_window": False}
# name -> (RetrievalSettings overrides, hybrid_retrieve switches); B (speaker and month in BM25) is in all.
CONFIGURATIONS: dict[str, tuple[dict[str, Any], dict[str, Any]]] = {
    "whole": ({"dense_units": "whole"}, _OFF),
    "S": ({"dense_units": "sentences"}, _OFF),
    "S+D": ({"dense_units": "sentences"}, {"speaker_prior": False}),
    "S+P": ({"dense_units": "sentences"}, {"date_window": False}),
    "S+P+D": ({"dense_units": "sentences"}, {}),
    "production": ({}, {}),
}


def per_conversation(dataset: Dataset, runs: dict[str, list[tuple[str, float]]]) -> dict[str, dict[str, float]]:
    """Recall@5 and @10 of one strategy's runs by conversation, category 5 apart."""
    per: dict[str, list[tuple[float, float]]] = {}
    for query in dataset.queries:
        if query.relevant:
            ranking = [doc for doc, _ in runs[query.id]]
            key = query.group if query.category != 5 else f"{query.group}/category-5"
            per.setdefault(key, []).append(
                (recall_at_k(ranking, query.relevant, 5), recall_at_k(ranking, query.relevant, 10))
            )
    return {
        key: {
            "recall@5": round(sum(a for a, _ in rows) / len(rows), 4),
            "recall@10": round(sum(b for _, b in rows) / len(rows), 4),
        }
        for key, rows in sorted(per.items())
    }


def _locomo(settings: dict[str, Any], switches: dict[str, Any]) -> dict[str, Any]:
    dataset = load_dataset("locomo", SHARED_DATA)
    report = evaluate(dataset, ["hybrid"], (5, 10), settings=settings, retrieve=switches)
    report["per_conversation"] = per_conversation(dataset, report.pop("runs")["hybrid"])
    return report


def _longmemeval(settings: dict[str, Any], switches: dict[str, Any]) -> dict[str, Any]:
    dataset = load_dataset("longmemeval", SHARED_DATA)
    report = evaluate_longmemeval(dataset, ["hybrid"], settings=settings, retrieve=switches)
    report.pop("runs")
    return report


def _scifact(settings: dict[str, Any], switches: dict[str, Any]) -> dict[str, Any]:
    report = evaluate(load_dataset("scifact", SHARED_DATA), ["hybrid"], (10,), settings=settings, retrieve=switches)
    report.pop("runs")
    return report


def run(job: str, out: Path = Path(".cache/xmemo/ablations")) -> dict[str, Any]:
    """`dataset:configuration`, e.g. `locomo:S+P`; the report, also written under `out`."""
    dataset, _, name = job.partition(":")
    runner = {"locomo": _locomo, "lme": _longmemeval, "longmemeval": _longmemeval, "scifact": _scifact}[dataset]
    settings, switches = CONFIGURATIONS[name]
    report = runner(settings, switches)
    out.mkdir(parents=True, exist_ok=True)
    (out / f"{dataset}-{name}.json").write_text(json.dumps(report, indent=1) + "\n")
    return report


if __name__ == "__main__":
    for job in sys.argv[1:]:
        print(job, json.dumps(run(job)["strategies"]["hybrid"]), flush=True)
