"""Run the production retrieval path over a judged data set and score it.

Documents are imported as memories (one owner per conversation or corpus) through the same import
path users take; queries go through `hybrid_retrieve`, the ranking `recall_context` uses, with the
strategy switched between dense only, BM25 only and the production hybrid. Embeddings come from a
persistent cache, so a second run encodes nothing.
"""

from __future__ import annotations

import os
import resource
import sys
import tempfile
import time
import uuid
from collections.abc import Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

from tqdm import tqdm

from retrieval import (
    MemoryEngine,
    Principal,
    RecallRequest,
    RetrievalSettings,
    import_records,
    prepare_read,
    read_filters,
    recall_context,
)
from retrieval.usecases import CANDIDATE_DEPTH, hybrid_retrieve

from .datasets import Dataset, Query
from .metrics import HALVES, half_of, mrr_at_k, ndcg_at_k, recall_at_k

__all__ = ["DEFAULT_CACHE", "STRATEGIES", "evaluate", "import_dataset"]

STRATEGIES = ("dense", "bm25", "rrf", "hybrid")
DEFAULT_CACHE = Path(os.environ.get("XMEMO_EVAL_CACHE", ".cache/xmemo/eval-embeddings.sqlite"))
_NAMESPACE = uuid.UUID("6f1c7c2e-5b8a-4f7e-9a51-2f0d3c1e9b77")
PACK_MAX_TOKENS = 1500


def _memory_id(dataset: Dataset, doc_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, f"{dataset.name}/{doc_id}"))


def import_dataset(engine: MemoryEngine, dataset: Dataset) -> dict[str, str]:
    """Import every document under its group's owner; returns memory id -> document id."""
    by_group: dict[str, list[dict[str, Any]]] = {}
    back = {}
    for doc in dataset.docs:
        memory_id = _memory_id(dataset, doc.id)
        back[memory_id] = doc.id
        by_group.setdefault(doc.group, []).append(
            {
                "id": memory_id,
                "content": doc.text,
                "path": f"eval/{dataset.name}",
                "occurred_at": doc.occurred_at,
                "session_id": doc.session_id,
                "speaker": doc.speaker,
                "type": "episodic",
            }
        )
    with tqdm(total=len(dataset.docs), desc="import", unit="doc", file=sys.stderr, disable=None) as bar:
        for group, lines in by_group.items():
            import_records(engine, Principal.local(group), lines, batch_size=256, progress=bar.update)
    return back


def _score(
    rankings: dict[str, list[str]], dataset: Dataset, ks: Sequence[int], categories: set[int] | None
) -> dict[str, float]:
    queries = [q for q in dataset.queries if q.relevant and (categories is None or q.category in categories)]
    return _score_of(rankings, queries, ks)


def _score_of(rankings: dict[str, list[str]], queries: Sequence[Query], ks: Sequence[int]) -> dict[str, float]:
    scores: dict[str, float] = {"queries": float(len(queries))}
    if not queries:
        return scores
    for k in ks:
        scores[f"ndcg@{k}"] = sum(ndcg_at_k(rankings[q.id], q.relevant, k) for q in queries) / len(queries)
        scores[f"recall@{k}"] = sum(recall_at_k(rankings[q.id], q.relevant, k) for q in queries) / len(queries)
        scores[f"mrr@{k}"] = sum(mrr_at_k(rankings[q.id], q.relevant, k) for q in queries) / len(queries)
    return {name: round(value, 4) for name, value in scores.items()}


def evaluate(
    dataset: Dataset,
    strategies: Sequence[str] = STRATEGIES,
    ks: Sequence[int] = (5, 10),
    cache_path: Path = DEFAULT_CACHE,
    query_limit: int | None = None,
    alpha: float | None = None,
    pack_floors: Sequence[float] = (),
    settings: dict[str, Any] | None = None,
    retrieve: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """Score each strategy; for LoCoMo, categories 1-4 headline, category 5 apart, and pack coverage.

    `settings` and `retrieve` override RetrievalSettings fields and hybrid_retrieve's switches, for
    ablations (docs/evaluation.md)."""
    started = time.perf_counter()
    if query_limit is not None:
        dataset = Dataset(dataset.name, dataset.kind, dataset.docs, dataset.queries[:query_limit], dataset.meta)
    depth = max(CANDIDATE_DEPTH, max(ks))
    report: dict[str, Any] = {"dataset": dataset.name, "queries": len([q for q in dataset.queries if q.relevant])}
    if alpha is not None:
        report["alpha"] = alpha
    with tempfile.TemporaryDirectory(prefix="xmemo-eval-") as tmp:
        configured = RetrievalSettings(
            data_dir=Path(tmp), embedding_cache_path=cache_path.resolve(), **(settings or {})
        )
        with MemoryEngine(configured) as engine:
            load_started = time.perf_counter()
            back = import_dataset(engine, dataset)
            load_seconds = time.perf_counter() - load_started
            runs: dict[str, dict[str, list[tuple[str, float]]]] = {}
            query_seconds: dict[str, float] = {}
            for strategy in strategies:
                strategy_started = time.perf_counter()
                runs[strategy] = _ranked_run(engine, dataset, back, strategy, depth, alpha, retrieve or {})
                query_seconds[strategy] = time.perf_counter() - strategy_started
            rankings = {s: {q: [d for d, _ in ranked] for q, ranked in run.items()} for s, run in runs.items()}
            if dataset.kind == "locomo":
                report["strategies"] = {s: _score(rankings[s], dataset, ks, {1, 2, 3, 4}) for s in strategies}
                report["category_5"] = {s: _score(rankings[s], dataset, ks, {5}) for s in strategies}
                report.update(_locomo_parts(rankings, dataset, ks))
                report["pack"] = _pack_at_floor(engine, dataset, back, None)
            else:
                report["strategies"] = {s: _score(rankings[s], dataset, ks, None) for s in strategies}
            if pack_floors:
                report["pack_floors"] = [_pack_at_floor(engine, dataset, back, floor) for floor in pack_floors]
    report["timing"] = {
        "import_s": round(load_seconds, 2),
        "queries_s": {s: round(v, 2) for s, v in query_seconds.items()},
        "total_s": round(time.perf_counter() - started, 2),
    }
    report["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0, 1)
    report["runs"] = runs
    return report


def _locomo_parts(rankings: dict[str, dict[str, list[str]]], dataset: Dataset, ks: Sequence[int]) -> dict[str, Any]:
    """LoCoMo's scores by category (1-5), by conversation and by half of the questions (categories 1-4),
    so that a change shows where it helps and whether it holds on the half it was not chosen on."""
    judged = [q for q in dataset.queries if q.relevant]
    headline = [q for q in judged if q.category in (1, 2, 3, 4)]
    conversations = sorted({q.group for q in headline})
    return {
        "by_category": {
            s: {str(c): _score_of(r, [q for q in judged if q.category == c], ks) for c in range(1, 6)}
            for s, r in rankings.items()
        },
        "by_conversation": {
            s: {g: _score_of(r, [q for q in headline if q.group == g], ks) for g in conversations}
            for s, r in rankings.items()
        },
        "halves": {
            s: {h: _score_of(r, [q for q in headline if half_of(q.id) == h], ks) for h in HALVES}
            for s, r in rankings.items()
        },
    }


def _ranked_run(
    engine: MemoryEngine,
    dataset: Dataset,
    back: dict[str, str],
    strategy: str,
    depth: int,
    alpha: float | None,
    retrieve: dict[str, Any],
) -> dict[str, list[tuple[str, float]]]:
    """Each question's top `depth` documents and scores by `strategy`, each asked in its own group."""
    run: dict[str, list[tuple[str, float]]] = {}
    for query in tqdm(dataset.queries, desc=strategy, unit="q", file=sys.stderr, disable=None):
        retrieval = hybrid_retrieve(
            engine,
            read_filters(Principal(owner_id=query.group)),
            query.text,
            depth=depth,
            strategy=strategy,  # type: ignore[arg-type]
            alpha=alpha,
            as_of=_moment(query.as_of),
            **retrieve,
        )
        run[query.id] = [(back[r.id], r.score) for r in retrieval.ranked[:depth]]
    return run


def _moment(text: str | None) -> datetime | None:
    return datetime.fromisoformat(text.replace("Z", "+00:00")) if text else None


def _pack_at_floor(engine: MemoryEngine, dataset: Dataset, back: dict[str, str], floor: float | None) -> dict[str, Any]:
    """How often the recall_context pack (max_tokens 1500, max_items 50, so the token budget binds)
    holds all of a question's evidence, against the tokens it spends; under a relevance floor, or the
    production one (None). LoCoMo counts categories 1-4."""
    categories = {1, 2, 3, 4} if dataset.kind == "locomo" else None
    queries = [q for q in dataset.queries if q.relevant and (categories is None or q.category in categories)]
    complete = tokens = items = 0
    found = 0.0
    for query in tqdm(
        queries, desc="pack" if floor is None else f"floor {floor}", unit="q", file=sys.stderr, disable=None
    ):
        asked = RecallRequest(query=query.text, max_items=50, max_tokens=PACK_MAX_TOKENS, relevance_floor=floor)
        pack = recall_context(engine, prepare_read(engine, Principal(owner_id=query.group), asked))
        packed = {back[item.id] for item in pack.items}
        complete += set(query.relevant) <= packed
        found += len(set(query.relevant) & packed) / len(query.relevant)
        tokens += pack.budget.used_tokens
        items += len(pack.items)
    count = len(queries)
    return {
        "max_tokens": PACK_MAX_TOKENS,
        "floor": floor,
        "all_evidence_in_pack": round(complete / count, 4),
        "evidence_recall": round(found / count, 4),
        "mean_used_tokens": round(tokens / count, 1),
        "mean_items": round(items / count, 2),
    }
