"""LongMemEval (Wu et al., ICLR 2025) through the production path, scored with its own retrieval metrics.

Each question hides its evidence among about 50 chat sessions (about 500 turns). Every question is
its own store: its haystack is imported one memory per turn (the role as the speaker, the session's
date as `occurred_at`, the session as `session_id`) and the question is asked as of its own date.
The turn ranking is scored at the turn level (the turns marked `has_answer`) and, mapped to the
sessions in the order they first appear, at the session level (`answer_session_ids`), as the
benchmark's retrieval evaluation does:

- session recall_any@5: some answer session in the top 5; recall_all@5: every one; ndcg_any@5: nDCG
  with each answer session relevant;
- turn recall_all@10: every evidence turn in the top 10; turn recall_any@5: some evidence turn in
  the top 5;
- pack coverage: the recall_context pack (10 items, 4,000 tokens, what an agent asks for) holds
  every evidence turn.

Each metric is also reported by question type. All questions share one owner, so the embedding
cache serves a haystack session that recurs across questions.
"""

from __future__ import annotations

import resource
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from retrieval import (
    MemoryEngine,
    Principal,
    RecallRequest,
    RetrievalSettings,
    prepare_read,
    read_filters,
    recall_context,
)
from retrieval.encoding import Embedder
from retrieval.usecases import CANDIDATE_DEPTH, hybrid_retrieve

from .datasets import Dataset, Doc, Query
from .metrics import HALVES, half_of, ndcg_at_k
from .runner import DEFAULT_CACHE, import_dataset

__all__ = ["PACK_ITEMS", "PACK_TOKENS", "evaluate_longmemeval", "question_scores"]

PACK_ITEMS = 10
PACK_TOKENS = 4000
OWNER = "longmemeval"


def _sessions(ranking: Sequence[str]) -> list[str]:
    """Sessions in the order their first turn appears (a turn id is `question/session/index`)."""
    return list(dict.fromkeys(doc.rsplit("/", 1)[0] for doc in ranking))


def question_scores(ranking: Sequence[str], query: Query) -> dict[str, float]:
    """LongMemEval's retrieval metrics of one question's turn ranking."""
    sessions = _sessions(ranking)
    answer = set(query.sessions)
    evidence = set(query.relevant)
    return {
        "session_recall_any@5": float(bool(answer & set(sessions[:5]))),
        "session_recall_all@5": float(answer <= set(sessions[:5])),
        "session_ndcg_any@5": ndcg_at_k(sessions, dict.fromkeys(answer, 1), 5),
        "turn_recall_all@10": float(evidence <= set(ranking[:10])),
        "turn_recall_any@5": float(bool(evidence & set(ranking[:5]))),
    }


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    names = rows[0].keys() if rows else ()
    means: dict[str, float] = {name: round(sum(r[name] for r in rows) / len(rows), 4) for name in names}
    means["queries"] = float(len(rows))
    return means


def _by_type(scores: dict[str, dict[str, float]], queries: Sequence[Query]) -> dict[str, dict[str, float]]:
    kinds = sorted({q.kind or "" for q in queries})
    return {kind: _mean([scores[q.id] for q in queries if (q.kind or "") == kind]) for kind in kinds}


def _halves(scores: dict[str, dict[str, float]], queries: Sequence[Query]) -> dict[str, dict[str, float]]:
    return {h: _mean([scores[q.id] for q in queries if half_of(q.id) == h]) for h in HALVES}


def _pack_scores(engine: MemoryEngine, query: Query, back: dict[str, str]) -> dict[str, float]:
    """What the agent receives for `query`: the pack of PACK_ITEMS items and PACK_TOKENS tokens, scored
    by the evidence turns and answer sessions it holds."""
    request = RecallRequest(query=query.text, max_items=PACK_ITEMS, max_tokens=PACK_TOKENS, as_of=query.as_of)
    packed = recall_context(engine, prepare_read(engine, Principal(owner_id=OWNER), request))
    held = {back[item.id] for item in packed.items}
    return {
        "all_evidence_in_pack": float(set(query.relevant) <= held),
        "evidence_recall": len(set(query.relevant) & held) / len(query.relevant),
        "answer_sessions_in_pack": float(set(query.sessions) <= {d.rsplit("/", 1)[0] for d in held}),
        "used_tokens": float(packed.budget.used_tokens),
    }


def evaluate_longmemeval(
    dataset: Dataset,
    strategies: Sequence[str],
    cache_path: Path = DEFAULT_CACHE,
    query_limit: int | None = None,
    alpha: float | None = None,
    settings: dict[str, Any] | None = None,
    retrieve: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score each strategy on each question's own store; the report of `xmemo eval` for LongMemEval."""
    started = time.perf_counter()
    queries = [q for q in dataset.queries if q.relevant][:query_limit]
    scores: dict[str, dict[str, dict[str, float]]] = {s: {} for s in strategies}
    pack: dict[str, dict[str, float]] = {}
    runs: dict[str, dict[str, list[tuple[str, float]]]] = {s: {} for s in strategies}
    import_seconds = 0.0
    query_seconds = dict.fromkeys(strategies, 0.0)
    inner: Embedder | None = None
    by_group: dict[str, list[Doc]] = {}
    for doc in dataset.docs:
        by_group.setdefault(doc.group, []).append(doc)
    for query in tqdm(queries, desc="questions", unit="q", file=sys.stderr, disable=None):
        # one store per question, every one under the same owner (so that the cache is shared)
        docs = [replace(doc, group=OWNER) for doc in by_group[query.group]]
        with tempfile.TemporaryDirectory(prefix="xmemo-lme-") as tmp:
            configured = RetrievalSettings(
                data_dir=Path(tmp), embedding_cache_path=cache_path.resolve(), **(settings or {})
            )
            with MemoryEngine(configured, embedder=inner) as engine:
                inner = engine.embedder.inner
                loading = time.perf_counter()
                back = import_dataset(engine, Dataset(dataset.name, dataset.kind, docs, []))
                import_seconds += time.perf_counter() - loading
                asked = datetime.fromisoformat(query.as_of.replace("Z", "+00:00")) if query.as_of else None
                for strategy in strategies:
                    timing = time.perf_counter()
                    retrieval = hybrid_retrieve(
                        engine,
                        read_filters(Principal(owner_id=OWNER)),
                        query.text,
                        depth=CANDIDATE_DEPTH,
                        strategy=strategy,  # type: ignore[arg-type]
                        alpha=alpha,
                        as_of=asked,
                        **(retrieve or {}),
                    )
                    query_seconds[strategy] += time.perf_counter() - timing
                    ranked = [(back[r.id], r.score) for r in retrieval.ranked]
                    runs[strategy][query.id] = ranked
                    scores[strategy][query.id] = question_scores([d for d, _ in ranked], query)
                pack[query.id] = _pack_scores(engine, query, back)
    report: dict[str, Any] = {
        "dataset": dataset.name,
        "queries": len(queries),
        "strategies": {s: _mean(list(scores[s].values())) for s in strategies},
        "by_type": {s: _by_type(scores[s], queries) for s in strategies},
        "halves": {s: _halves(scores[s], queries) for s in strategies},
        "pack": {"max_items": PACK_ITEMS, "max_tokens": PACK_TOKENS, **_mean(list(pack.values()))},
        "pack_by_type": _by_type(pack, queries),
        "pack_halves": _halves(pack, queries),
        "timing": {
            "import_s": round(import_seconds, 2),
            "queries_s": {s: round(v, 2) for s, v in query_seconds.items()},
            "total_s": round(time.perf_counter() - started, 2),
        },
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1),
        "runs": runs,
    }
    if alpha is not None:
        report["alpha"] = alpha
    return report
