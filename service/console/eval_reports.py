"""The newest evaluation report for the status page: what `xmemo eval --out DIR` wrote (eval/report.py).

A report is a directory holding `report.json` (and usually `chart.png`): the reports directory itself
or one of its subdirectories, so that `xmemo eval --dataset scifact --out <reports>/scifact` and
runs of other data sets sit side by side. The newest is the one whose report.json was written last.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

__all__ = ["CHART", "REPORT", "EvalReport", "find_reports", "read_report"]

REPORT, CHART = "report.json", "chart.png"


@dataclass(frozen=True, slots=True)
class EvalReport:
    """One report as the status page shows it: a metrics table per strategy, the floor checks, the chart."""

    name: str  # the subdirectory's name; "" for a report in the reports directory itself
    written_at: str  # when report.json was written, UTC
    dataset: str
    queries: int
    metrics: list[str]
    strategies: list[tuple[str, list[float]]]
    checks: list[dict[str, Any]] = field(default_factory=list)
    summary: list[str] = field(default_factory=list)  # the pack line, time and memory, in words
    chart: Path | None = None


def find_reports(directory: Path) -> dict[str, Path]:
    """Report directories by name, newest first; empty when the directory does not exist."""
    if not directory.is_dir():
        return {}
    found = [(directory / REPORT, "")] + [
        (child / REPORT, child.name)
        for child in directory.iterdir()
        if child.is_dir() and not child.name.startswith(".")
    ]
    dated = [(path.stat().st_mtime, name, path.parent) for path, name in found if path.is_file()]
    return {name: parent for _, name, parent in sorted(dated, key=lambda d: (-d[0], d[1]))}


def read_report(name: str, directory: Path) -> EvalReport:
    """The report in `directory`; ValueError (saying what is wrong) when it is not one `xmemo eval` wrote."""
    path = directory / REPORT
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
        strategies: dict[str, dict[str, float]] = document["strategies"]
        metrics = [m for m in next(iter(strategies.values())) if m != "queries"]
        rows = [(strategy, [float(scores[m]) for m in metrics]) for strategy, scores in strategies.items()]
        dataset, queries = str(document["dataset"]), int(document["queries"])
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
        raise ValueError(f"{path} cannot be read: {error}") from error
    except RecursionError as error:  # nested deeper than the JSON parser goes
        raise ValueError(f"{path} cannot be read: it is nested too deeply to be a report") from error
    except (KeyError, TypeError, ValueError, StopIteration, AttributeError) as error:
        raise ValueError(f"{path} is not a report of `xmemo eval` (no strategies with their metrics)") from error
    written = datetime.fromtimestamp(path.stat().st_mtime, tz=UTC).strftime("%Y-%m-%d %H:%M UTC")
    chart = directory / CHART
    return EvalReport(
        name,
        written,
        dataset,
        queries,
        metrics,
        rows,
        _checks(document),
        _summary(document),
        chart if chart.is_file() else None,
    )


def _checks(document: dict[str, Any]) -> list[dict[str, Any]]:
    checks = document.get("checks")
    return [c for c in checks if isinstance(c, dict)] if isinstance(checks, list) else []


def _summary(document: dict[str, Any]) -> list[str]:
    try:
        return _summary_lines(document)
    except (TypeError, ValueError):  # a hand-edited report: its table still shows, without these lines
        return []


def _summary_lines(document: dict[str, Any]) -> list[str]:
    lines = []
    pack = document.get("pack")
    if isinstance(pack, dict) and {"max_tokens", "all_evidence_in_pack", "mean_used_tokens"} <= pack.keys():
        lines.append(
            f"Context pack (max_tokens {pack['max_tokens']}): all evidence in the pack for "
            f"{pack['all_evidence_in_pack']:.1%} of questions, {pack['mean_used_tokens']} tokens used on average."
        )
    timing = document.get("timing")
    if isinstance(timing, dict) and "total_s" in timing and "peak_rss_mb" in document:
        lines.append(f"Time {timing['total_s']} s, peak RSS {document['peak_rss_mb']} MB.")
    return lines
