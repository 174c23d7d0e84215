"""The bilingual suite (tests/data/bilingual_suite.json) through the production path, by direction.

Agent and personal notes, some in Chinese and some in English, and three kinds of question: English
questions over Chinese memories (`en->zh`), Chinese questions over English memories (`zh->en`), and
Chinese paraphrases of Chinese memories that share none of their words (`zh~zh`). Each question has
one memory that answers it; the figure is how often that memory is in the top 3 (hit@3), by
direction, for the hybrid ranking and the dense channel alone.

    python -m eval.encoders.bilingual        # each encoder, one line each, with its misses
    python -m eval.encoders multilingual:bilingual
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from ..datasets import Dataset, Doc, Query
from ..metrics import recall_at_k
from ..runner import DEFAULT_CACHE, evaluate

__all__ = ["DIRECTIONS", "SUITE", "TOP", "evaluate_bilingual", "load_bilingual"]

SUITE = Path(__file__).resolve().parents[2] / "tests" / "data" / "bilingual_suite.json"
DIRECTIONS = ("en->zh", "zh->en", "zh~zh")
TOP = 3
_OWNER = "bilingual"


def load_bilingual(path: Path = SUITE) -> Dataset:
    """The suite's memories as documents of one owner, its questions as queries (`kind` the direction)."""
    suite = json.loads(path.read_text(encoding="utf-8"))
    docs = [Doc(id=m["id"], text=m["text"], group=_OWNER) for m in suite["memories"]]
    known = {doc.id for doc in docs}
    queries = []
    for q in suite["questions"]:
        if q["direction"] not in DIRECTIONS or q["answer"] not in known:
            raise ValueError(f"question {q['id']}: unknown direction or answer")
        queries.append(Query(id=q["id"], text=q["text"], group=_OWNER, relevant={q["answer"]: 1}, kind=q["direction"]))
    return Dataset(name="bilingual", kind="bilingual", docs=docs, queries=queries)


def evaluate_bilingual(
    path: Path = SUITE, settings: dict[str, Any] | None = None, cache_path: Path = DEFAULT_CACHE
) -> dict[str, Any]:
    """hit@3 by direction for the hybrid ranking and the dense channel; the misses, by question id."""
    dataset = load_bilingual(path)
    report = evaluate(dataset, ("hybrid", "dense"), (TOP,), cache_path=cache_path, settings=settings)
    runs = report.pop("runs")
    by_direction: dict[str, dict[str, float]] = {}
    misses: dict[str, list[str]] = {}
    for strategy, run in runs.items():
        misses[strategy] = []
        for direction in DIRECTIONS:
            asked = [q for q in dataset.queries if q.kind == direction]
            hits = [recall_at_k([doc for doc, _ in run[q.id]], q.relevant, TOP) for q in asked]
            by_direction.setdefault(direction, {})[strategy] = round(sum(hits) / len(asked), 4)
            misses[strategy] += [q.id for q, hit in zip(asked, hits, strict=True) if not hit]
    report["by_direction"] = by_direction
    report["misses"] = misses
    return report


if __name__ == "__main__":
    for name in sys.argv[1:] or ["minilm", "multilingual", "multilingual-e5"]:  # XMEMO_ENCODER values
        found = evaluate_bilingual(SUITE, {"encoder": name})
        print(name, json.dumps(found["by_direction"]), json.dumps(found["misses"]), flush=True)
