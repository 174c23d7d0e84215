"""Hybrid retrieval: the ranking every read uses (both channels, union, fusion, blend), the records of
its top read back from SQL, and the checks a read makes before the model runs."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Literal

import numpy as np

from ..domain import (
    READ,
    Memory,
    MemoryStatus,
    Principal,
    ReadFilters,
    check_field,
    check_path_filter,
    check_query,
    format_time,
    member_team,
    memory_type_or_auto,
    require,
    tenant_of,
)
from ..engine import MemoryEngine
from ..index import IndexFilter, IndexHit
from ..ranking import (
    DATE_BOOST,
    KEY_BOOST,
    RRF_K,
    SPEAKER_PRIOR,
    W_IMPORTANCE,
    W_RECENCY,
    FusedCandidate,
    Ranked,
    addressed_speaker,
    fuse_convex,
    fuse_rrf,
    may_name_keys,
    names_key,
    query_terms,
    query_window,
    rank_candidates,
    with_priors,
)
from .results import Candidates, RetrievalPlan

__all__ = [
    "CANDIDATE_DEPTH",
    "FUSION",
    "IN_PROCESS_MAX_RECORDS",
    "MIN_DENSE_MATCH",
    "PACK_WINDOW",
    "Hydrated",
    "PreparedRead",
    "Retrieval",
    "Strategy",
    "hybrid_retrieve",
    "hydrate",
    "prepare_read",
    "read_filters",
]

# hybrid is the production ranking; the others are its channels alone, and plain equal-weight RRF
# (k=60) as the baseline the evaluation compares against.
Strategy = Literal["hybrid", "dense", "bm25", "rrf"]
# Each channel contributes its top CANDIDATE_DEPTH (or 3x the items asked for, if more) to the union.
CANDIDATE_DEPTH = 50
# A candidate only the dense channel found is a match when its cosine reaches this; all-MiniLM-L6-v2
# puts unrelated English sentences at about 0.0-0.15.
MIN_DENSE_MATCH = 0.15
# The packer reads at most this many times max_items records down the ranking to fill the pack.
PACK_WINDOW = 2
# The default fusion, chosen by measurement on SciFact and LoCoMo (docs/evaluation.md): a convex
# combination of theoretically normalised scores (TM2C2, Bruch et al. 2023), alpha on the dense side.
FUSION: dict[str, Any] = {"method": "convex", "normalisation": "tm2c2", "alpha": 0.7}


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Candidates ranked from the index alone; `hydrate` reads the records of the top of the list."""

    ranked: list[Ranked]
    plan: RetrievalPlan
    filters: ReadFilters


@dataclass(frozen=True, slots=True)
class Hydrated:
    ranked: Ranked
    memory: Memory


def hydrate(engine: MemoryEngine, retrieval: Retrieval, want: int) -> list[Hydrated]:
    """The first `want` ranked candidates whose records the filters admit, in rank order.

    The system of record is the authority: a candidate whose record is gone or no longer admitted
    (the index lagging a write), or past its `expires_at` (whether or not reflect has marked it
    expired yet), is passed over and the next one read instead.
    """
    now = format_time(engine.clock())
    found: list[Hydrated] = []
    position = 0
    while len(found) < want and position < len(retrieval.ranked):
        chunk = retrieval.ranked[position : position + max(want - len(found), 8)]
        position += len(chunk)
        records = engine.store.get_many([r.id for r in chunk])
        for r in chunk:
            memory = records.get(r.id)
            if memory is not None and retrieval.filters.admits(memory) and not expired(memory, now):
                found.append(Hydrated(r, memory))
    return found[:want]


def expired(memory: Memory, now: str) -> bool:
    """Past its expiry: stored times are one fixed-width UTC format, so text order is time order."""
    return memory.expires_at is not None and memory.expires_at <= now


def read_filters(
    principal: Principal,
    *,
    team_id: str | None = None,
    bucket: str | None = None,
    scope: str | None = None,
    path_filter: str | None = None,
    memory_type: str | None = None,
    statuses: tuple[MemoryStatus, ...] = (MemoryStatus.ACTIVE,),
) -> ReadFilters:
    """The caller's filters within what the principal may see; a foreign team is a 403."""
    require(principal, READ)
    team_id = member_team(principal, team_id, "read")
    path_pattern = check_path_filter(path_filter)
    return ReadFilters(
        owner_id=principal.owner_id,
        team_ids=principal.team_ids,
        team_id=team_id or None,
        bucket=check_field(bucket, "bucket") if bucket not in (None, "", "%") else None,
        scope=check_field(scope, "scope") if scope else None,
        path_pattern=path_pattern,
        memory_type=memory_type_or_auto(memory_type) if memory_type else None,
        statuses=statuses,
    )


def _fuse(
    dense: list[IndexHit], bm25: list[IndexHit], strategy: Strategy, dense_fill: dict[str, float], alpha: float
) -> list[FusedCandidate]:
    if strategy == "dense":
        return fuse_convex(dense, [], 1.0)
    if strategy == "bm25":
        return fuse_convex([], bm25, 0.0)
    if strategy == "rrf":
        return fuse_rrf(dense, bm25, 1.0, 1.0, RRF_K)
    return fuse_convex(dense, bm25, alpha, dense_fill)


def _dense_fill(
    engine: MemoryEngine, query: np.ndarray, dense: list[IndexHit], bm25: list[IndexHit]
) -> dict[str, float]:
    """Exact cosines of the candidates only BM25 found, scored by the index on the vectors it stores."""
    seen = {hit.id for hit in dense}
    return engine.index.dense_scores(query, [hit.id for hit in bm25 if hit.id not in seen])


def _keyed(engine: MemoryEngine, query: str, fused: list[FusedCandidate]) -> set[str]:
    """The candidates whose `semantic_key` the query names (ranking/keys.py), looked at only when the
    query holds an identifier. The index's payload carries the keys; the record is read only for
    points written before it did (reading them for every such query was 5 % of a loaded server's GIL)."""
    terms = query_terms(query)
    if not fused or not may_name_keys(terms):
        return set()
    keys = {c.id: c.semantic_key for c in fused if c.semantic_key}
    unknown = [c.id for c in fused if c.semantic_key is None]
    if unknown:
        keys.update(engine.store.semantic_keys(unknown))
    return {memory_id for memory_id, key in keys.items() if names_key(terms, key)}


def hybrid_retrieve(
    engine: MemoryEngine,
    filters: ReadFilters,
    query: str,
    *,
    depth: int = CANDIDATE_DEPTH,
    strategy: Strategy = "hybrid",
    alpha: float | None = None,
    query_vector: np.ndarray | None = None,
    as_of: datetime | None = None,
    speaker_prior: bool = True,
    date_window: bool = True,
) -> Retrieval:
    """Rank the memories `filters` admits for `query`: both channels, union, fuse, the priors of the
    speaker it asks about and the time it names, blend. Best first.

    `alpha` overrides the dense weight of the fusion (evaluation sweeps); None is the production one.
    `query_vector` is the query's dense vector when the caller already has it (`prepare_read`).
    `as_of` is when the question is asked (default now): "last Saturday" is the Saturday before it,
    and recency is counted back from it.
    `speaker_prior` and `date_window` switch those priors off for the evaluation's ablations.
    """
    alpha = FUSION["alpha"] if alpha is None else alpha
    ids = None
    if filters.path_pattern is not None and filters.path_pattern.exact is None:
        ids = engine.store.ids_matching(filters)
    channels: tuple[str, ...] = {
        "hybrid": ("dense", "bm25"),
        "rrf": ("dense", "bm25"),
        "dense": ("dense",),
        "bm25": ("bm25",),
    }[strategy]
    plan = RetrievalPlan(
        strategy=strategy,
        channels=channels,
        fusion={**FUSION, "alpha": alpha} if strategy == "hybrid" else {"method": strategy},
        ranking={
            "w_recency": W_RECENCY,
            "w_importance": W_IMPORTANCE,
            "recency_half_life_days": engine.settings.recency_half_life_days,
            "min_dense_match": MIN_DENSE_MATCH,
            "dense_units": engine.settings.dense_units,
            "speaker_prior": SPEAKER_PRIOR,
            "date_boost": DATE_BOOST,
            "key_boost": KEY_BOOST,
        },
    )
    if ids is not None and not ids:
        return Retrieval([], plan, filters)
    dense_query = None
    if "dense" in channels:
        dense_query = (
            query_vector
            if query_vector is not None
            else engine.embedder.embed_query(query, tenant=tenant_of(filters.owner_id, None))
        )
    sparse_query = engine.sparse.query(query) if "bm25" in channels else None
    flt = IndexFilter.from_read_filters(filters, ids)
    dense_hits, bm25_hits = engine.index.search(dense_query, sparse_query, flt, depth, depth)
    addressed = None
    if strategy == "hybrid" and speaker_prior:
        addressed = addressed_speaker(query, {h.speaker for h in (*dense_hits, *bm25_hits) if h.speaker})
        if addressed is not None and addressed.query != query:
            # Both channels again without the name: it is in every one of that speaker's memories, so it
            # only pulls in the others' mentions of them, and an adversarial question naming the wrong
            # person would otherwise match on the name alone. A second query vector: named queries only.
            dense_query = engine.embedder.embed_query(addressed.query, tenant=tenant_of(filters.owner_id, None))
            dense_hits, bm25_hits = engine.index.search(
                dense_query, engine.sparse.query(addressed.query), flt, depth, depth
            )
    moment = as_of or engine.clock()
    window = query_window(query, moment) if strategy == "hybrid" and date_window else None
    fill = (
        _dense_fill(engine, dense_query, dense_hits, bm25_hits)
        if strategy == "hybrid" and dense_query is not None
        else {}
    )
    fused = [
        c
        for c in _fuse(dense_hits, bm25_hits, strategy, fill, alpha)
        if c.bm25_rank is not None or (c.dense_score is not None and c.dense_score >= MIN_DENSE_MATCH)
    ]
    keyed = _keyed(engine, query, fused) if strategy == "hybrid" else set()
    fused = with_priors(fused, addressed.speaker if addressed else None, window, keyed)
    ranked = rank_candidates(fused, moment, engine.settings.recency_half_life_days)  # recent as of the question
    candidates = Candidates(
        dense=len(dense_hits),
        bm25=len(bm25_hits),
        union=len({h.id for h in dense_hits} | {h.id for h in bm25_hits}),
        matched=len(ranked),
    )
    about = {
        "as_of": moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "speaker": addressed.speaker if addressed else None,
        "time_window": None
        if window is None
        else {
            "phrase": window.phrase,
            "start": datetime.fromtimestamp(window.start, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "end": datetime.fromtimestamp(window.end, UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        },
    }
    return Retrieval(ranked, replace(plan, candidates=candidates, query=about), filters)


# A read that stays in the process is small enough to run on a service's event loop when it reads
# at most this many records: recall_context's default 8 items (a window of 16). A larger one, or a
# search (which reads every candidate), runs on a worker thread, where other requests interleave.
IN_PROCESS_MAX_RECORDS = 16


@dataclass(frozen=True, slots=True)
class PreparedRead:
    """A read of a query, checked and started: `vector` is the query's dense vector as a future that
    the model's thread completes (at once from the query cache); `in_process` says whether the read
    is small and touches only this process's files, waiting for nothing (MemoryEngine.reads_in_process,
    a pack window of at most IN_PROCESS_MAX_RECORDS, and no path filter with `%`, which is resolved
    by a scan in SQL)."""

    vector: Future[np.ndarray]
    in_process: bool


def prepare_read(
    engine: MemoryEngine, principal: Principal, query: str, *, items: Any = None, **filter_args: Any
) -> PreparedRead:
    """Check a read of `query` with these filters as the read will (the query, the principal's read
    scope and team, the filters: a refused request never runs the model), then start its vector.
    `items` is how many items a pack-windowed read (recall_context, recall) returns at most; None
    for a read of every candidate (search).

    A service awaits `vector` on its event loop and passes it to the read as `query_vector`, so that
    no thread is held waiting on the model."""
    query = check_query(query)
    filters = read_filters(principal, **filter_args)
    scans = filters.path_pattern is not None and filters.path_pattern.exact is None
    # A value that is not a count is left to the read, which refuses it.
    small = type(items) is int and PACK_WINDOW * items <= IN_PROCESS_MAX_RECORDS
    return PreparedRead(
        engine.embedder.embed_query_later(query, tenant=tenant_of(filters.owner_id, None)),
        engine.reads_in_process and small and not scans,
    )
