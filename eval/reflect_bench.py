"""`xmemo bench-reflect`: time a dry run and a real run of reflect on LoCoMo's conversation turns (one
episodic record a turn, session dates as times), show sample summaries, and compare clustering methods
on the same stored vectors."""

from __future__ import annotations

import itertools
import random
import tempfile
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Sequence
from dataclasses import replace
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from compactor.apply import apply_plan
from compactor.clustering import cluster_vectors, unit_rows
from compactor.options import ReflectRequest, resolve_options
from compactor.plan import plan_reflection
from compactor.reflect import default_summarizer
from compactor.selection import read_snapshot
from compactor.settings import ReflectSettings
from retrieval import MemoryEngine, Principal, RetrievalSettings, import_records
from retrieval.domain import format_time, parse_time, spoken
from retrieval.encoding import CachedEmbedder, Embedder, EmbeddingCache, SentenceTransformerEmbedder
from retrieval.storage import actor_of

from .datasets import SHARED_DATA, Dataset, load_dataset
from .runner import DEFAULT_CACHE

__all__ = ["clustering_inputs", "compare_clustering", "locomo_records", "run_reflect_bench"]

_NAMESPACE = uuid.UUID("0b7e3f7c-2d7a-4c1e-8f59-7d3a61c2b0a4")
COPY_SHIFT = timedelta(days=365)


def _dataset(spec: str, shared_data: Path | None) -> Dataset:
    dataset = load_dataset(spec, shared_data or SHARED_DATA)
    if dataset.kind != "locomo":
        raise ValueError(f"bench-reflect needs a LoCoMo file, not {spec}")
    return dataset


def locomo_records(spec: str = "locomo", copies: int = 1, shared_data: Path | None = None) -> list[dict[str, Any]]:
    """One episodic record per turn; each conversation in its own scope (its own memory boundary).

    Copy k (k >= 1) repeats every conversation k years later, in new sessions, so that a large
    store can be built from the 2,760 dev turns; created_at is the turn's time, as if written live.
    """
    docs = _dataset(spec, shared_data).docs
    records = []
    for copy in range(copies):
        shift = COPY_SHIFT * copy
        for doc in docs:
            when = format_time(parse_time(doc.occurred_at) + shift)
            suffix = f"#copy{copy}" if copy else ""
            records.append(
                {
                    "id": str(uuid.uuid5(_NAMESPACE, f"{doc.id}{suffix}")),
                    "content": doc.text,
                    "path": f"locomo/{doc.group}",
                    "scope": f"conversation:{doc.group}",
                    "type": "episodic",
                    "occurred_at": when,
                    "created_at": when,
                    "session_id": f"{doc.session_id}{suffix}",
                    "speaker": doc.speaker,
                }
            )
    return records


def clustering_inputs(
    spec: str = "locomo", shared_data: Path | None = None
) -> tuple[np.ndarray, list[str], list[tuple[int, int]]]:
    """Vectors of every turn (from the evaluation's embedding cache), each turn's conversation, and
    the pairs of turns that are evidence for the same question."""
    dataset = _dataset(spec, shared_data)
    settings = RetrievalSettings()
    embedder = CachedEmbedder(SentenceTransformerEmbedder(settings.embedding_model), EmbeddingCache(DEFAULT_CACHE))
    try:
        vectors = embedder.embed([spoken(doc.text, doc.speaker) for doc in dataset.docs])
    finally:
        embedder.cache.close()
    row = {doc.id: i for i, doc in enumerate(dataset.docs)}
    pairs = [
        pair
        for query in dataset.queries
        for pair in itertools.combinations(sorted(row[d] for d in query.relevant if d in row), 2)
    ]
    return vectors, [doc.group for doc in dataset.docs], pairs


SINCE_EVERYTHING = "1900-01-01T00:00:00Z"


def run_reflect_bench(
    records: Sequence[dict[str, Any]],
    *,
    limit: int = 5000,
    now: datetime | None = None,
    embedder: Embedder | None = None,
    settings: ReflectSettings | None = None,
    examples: int = 3,
    progress: Callable[[str], None] | None = None,
) -> dict[str, Any]:
    """Import `records` for one owner into a fresh data dir, then dry run, real run, and a second dry run."""
    settings = settings or ReflectSettings()
    moment = now or max(parse_time(r["occurred_at"]) for r in records)
    say = progress or (lambda _: None)
    with tempfile.TemporaryDirectory(prefix="xmemo-reflect-bench-") as directory:
        engine = MemoryEngine(RetrievalSettings(data_dir=Path(directory)), embedder=embedder, clock=lambda: moment)
        try:
            principal = Principal.local("bench")
            started = time.perf_counter()
            say(f"importing {len(records)} memories")
            import_records(engine, principal, records)
            imported_s = time.perf_counter() - started
            request = ReflectRequest(since=SINCE_EVERYTHING, limit=limit, dry_run=True)
            dry, dry_plan = _timed_pass(engine, principal, request, settings, apply=False)
            say(f"dry run: {dry['seconds']} s")
            real, real_plan = _timed_pass(engine, principal, replace(request, dry_run=False), settings, apply=True)
            say(f"real run: {real['seconds']} s")
            again, _ = _timed_pass(engine, principal, request, settings, apply=False)
            summaries = [c.detail for c in real_plan.of("summarize")]
            promotions = [c.detail for c in real_plan.of("promote")]
            return {
                "memories": len(records),
                "limit": limit,
                "now": moment.isoformat(),
                "import_seconds": round(imported_s, 2),
                "dry_run": dry,
                "real_run": real,
                "dry_equals_real": _same_plan(dry_plan, real_plan),
                "second_dry_run": again,
                "cluster_sizes": _size_histogram(summaries + promotions),
                "example_summaries": _spread(summaries, examples),
                "example_promotions": _spread(promotions, examples),
            }
        finally:
            engine.close()


def _timed_pass(
    engine: MemoryEngine, principal: Principal, request: ReflectRequest, settings: ReflectSettings, *, apply: bool
) -> tuple[dict[str, Any], Any]:
    started = time.perf_counter()
    now = engine.clock()
    options = resolve_options(principal, request, now)
    snapshot = read_snapshot(engine, options, now, timedelta(days=settings.recurrence_lookback_days))
    read_s = time.perf_counter() - started
    plan = plan_reflection(snapshot, options, settings, default_summarizer(engine, settings), now)
    planned_s = time.perf_counter() - started
    audit_ids: list[str] = []
    encoded_s = planned_s
    if apply:
        # apply_plan encodes the new memories first; doing it here, into the same cache, splits the time
        engine.vectors_for([after for change in plan.changes for before, after in change.pairs if before is None])
        encoded_s = time.perf_counter() - started
        audit_ids = apply_plan(engine, plan, actor_of(principal))
    total_s = time.perf_counter() - started
    return {
        "seconds": round(total_s, 2),
        "read_seconds": round(read_s, 2),
        "plan_seconds": round(planned_s - read_s, 2),
        "encode_new_seconds": round(encoded_s - planned_s, 2),
        "apply_seconds": round(total_s - encoded_s, 2),
        "candidates": dict(plan.candidates),
        "counts": plan.counts(),
        "audit_records": len(audit_ids),
    }, plan


def _same_plan(first: Any, second: Any) -> bool:
    def shape(plan: Any) -> list[Any]:
        return [(c.action, c.reason, [(b, a) for b, a in c.pairs]) for c in plan.changes]

    return bool(first.plan_id == second.plan_id and shape(first) == shape(second))


def _size_histogram(details: Sequence[dict[str, Any]]) -> dict[str, int]:
    sizes = Counter(d["members"] for d in details)
    return {str(size): sizes[size] for size in sorted(sizes)}


def _spread(items: Sequence[Any], count: int) -> list[Any]:
    """`count` items spread evenly over the list (deterministic)."""
    if len(items) <= count:
        return list(items)
    step = len(items) / count
    return [items[int(i * step)] for i in range(count)]


# -- clustering comparison ----------------------------------------------------------------------


def compare_clustering(
    vectors: np.ndarray,
    groups: Sequence[str],
    evidence_pairs: Sequence[tuple[int, int]],
    min_size: int = 3,
    random_pairs: int = 5000,
) -> list[dict[str, Any]]:
    """Cluster each group's vectors with each method; report coverage, sizes and how often pairs of
    turns that answer the same question share a cluster, against random pairs of the same group."""
    rng = random.Random(0)
    members: dict[str, list[int]] = defaultdict(list)
    for row, group in enumerate(groups):
        members[group].append(row)
    eligible = [g for g in sorted(members) if len(members[g]) >= 2]
    chance = [tuple(rng.sample(members[g], 2)) for g in (rng.choice(eligible) for _ in range(random_pairs))]
    rows = []
    for name, method in _methods(min_size).items():
        started = time.perf_counter()
        labels = np.full(len(vectors), -1)
        next_label = 0
        for group in sorted(members):
            index = members[group]
            for cluster in method(vectors[index]):
                labels[[index[i] for i in cluster]] = next_label
                next_label += 1
        seconds = time.perf_counter() - started
        sizes = Counter(labels[labels >= 0].tolist())
        evidence, random_rate = _together(labels, evidence_pairs), _together(labels, chance)  # type: ignore[arg-type]
        rows.append(
            {
                "method": name,
                "clusters": len(sizes),
                "coverage": round(float((labels >= 0).mean()), 3),
                "max_size": max(sizes.values(), default=0),
                "evidence_together": round(evidence, 3),
                "random_together": round(random_rate, 3),
                "lift": round(evidence / random_rate, 1) if random_rate else None,
                "seconds": round(seconds, 2),
            }
        )
    return rows


def _together(labels: np.ndarray, pairs: Sequence[tuple[int, int]]) -> float:
    """The share of pairs whose two rows are in the same cluster."""
    return float(np.mean([labels[a] >= 0 and labels[a] == labels[b] for a, b in pairs])) if pairs else 0.0


def _methods(min_size: int) -> dict[str, Callable[[np.ndarray], list[list[int]]]]:
    def graph(threshold: float) -> Callable[[np.ndarray], list[list[int]]]:
        def run(matrix: np.ndarray) -> list[list[int]]:
            from scipy.sparse import csr_matrix
            from scipy.sparse.csgraph import connected_components

            unit = unit_rows(matrix)
            _, labels = connected_components(csr_matrix(unit @ unit.T >= threshold), directed=False)
            return _groups(labels, min_size)

        return run

    def agglomerative(linkage: str, distance: float) -> Callable[[np.ndarray], list[list[int]]]:
        def run(matrix: np.ndarray) -> list[list[int]]:
            if linkage == "complete":
                return cluster_vectors(matrix, distance, min_size)
            from sklearn.cluster import AgglomerativeClustering

            model = AgglomerativeClustering(
                n_clusters=None, metric="cosine", linkage=linkage, distance_threshold=distance
            )
            return _groups(model.fit_predict(matrix), min_size)

        return run

    def hdbscan(matrix: np.ndarray) -> list[list[int]]:
        from sklearn.cluster import HDBSCAN

        unit = unit_rows(matrix)
        return _groups(HDBSCAN(min_cluster_size=min_size, copy=True).fit_predict(unit), min_size)

    methods: dict[str, Callable[[np.ndarray], list[list[int]]]] = {}
    for threshold in (0.6, 0.7):
        methods[f"threshold graph, cos >= {threshold}"] = graph(threshold)
    for distance in (0.4, 0.5):
        methods[f"average linkage, d < {distance}"] = agglomerative("average", distance)
    for distance in (0.5, 0.6, 0.7):
        methods[f"complete linkage, d < {distance}"] = agglomerative("complete", distance)
    methods[f"HDBSCAN, min_cluster_size {min_size}"] = hdbscan
    return methods


def _groups(labels: Any, min_size: int) -> list[list[int]]:
    found: dict[int, list[int]] = defaultdict(list)
    for row, label in enumerate(labels):
        if label >= 0:
            found[int(label)].append(row)
    return [rows for rows in found.values() if len(rows) >= min_size]
