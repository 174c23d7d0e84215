"""Read use cases: hybrid retrieval, recall_context (the bounded pack), search_memory, recall, get."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, replace
from typing import Any, Literal

import numpy as np

from .embedding import tenant_of
from .engine import MemoryEngine
from .errors import ValidationError
from .fusion import RRF_K, FusedCandidate, fuse_convex, fuse_rrf
from .index import IndexFilter
from .packing import Pack, PackCandidate, pack_context
from .policy import READ, member_team, require
from .ranking import W_IMPORTANCE, W_RECENCY, Ranked, rank_candidates
from .records import Memory, MemoryStatus, MemoryType, Principal, ReadFilters
from .restatements import Collapsed, collapse_restatements
from .validation import check_field, check_path_filter, check_query, check_range, memory_type_or_auto
from .writes import visible_memory

__all__ = [
    "CANDIDATE_DEPTH",
    "FUSION",
    "PACK_VERSION",
    "PreparedRead",
    "Retrieval",
    "get_memory",
    "hybrid_retrieve",
    "hydrate",
    "prepare_read",
    "project_context",
    "read_filters",
    "recall",
    "recall_context",
    "search_memory",
]

# hybrid is the production ranking; the others are its channels alone, and plain equal-weight RRF
# (k=60) as the baseline the evaluation compares against.
Strategy = Literal["hybrid", "dense", "bm25", "rrf"]
PACK_VERSION = "1"
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
PROJECT_SCOPE_PREFIX = "tenant:project:"
MAX_PROJECT_ID = 512 - len(PROJECT_SCOPE_PREFIX)  # the scope it makes stays within a label's 512


@dataclass(frozen=True, slots=True)
class Retrieval:
    """Candidates ranked from the index alone; `hydrate` reads the records of the top of the list."""

    ranked: list[Ranked]
    plan: dict[str, Any]
    filters: ReadFilters


@dataclass(frozen=True, slots=True)
class Hydrated:
    ranked: Ranked
    memory: Memory


def hydrate(engine: MemoryEngine, retrieval: Retrieval, want: int) -> list[Hydrated]:
    """The first `want` ranked candidates whose records the filters admit, in rank order.

    The system of record is the authority: a candidate whose record is gone or no longer admitted
    (the index lagging a write) is passed over and the next one read instead.
    """
    found: list[Hydrated] = []
    position = 0
    while len(found) < want and position < len(retrieval.ranked):
        chunk = retrieval.ranked[position : position + max(want - len(found), 8)]
        position += len(chunk)
        records = engine.store.get_many([r.id for r in chunk])
        for r in chunk:
            memory = records.get(r.id)
            if memory is not None and retrieval.filters.admits(memory):
                found.append(Hydrated(r, memory))
    return found[:want]


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


def _fuse(dense: list, bm25: list, strategy: Strategy, dense_fill: dict[str, float], alpha: float) -> list[FusedCandidate]:  # type: ignore[type-arg]
    if strategy == "dense":
        return fuse_convex(dense, [], 1.0)
    if strategy == "bm25":
        return fuse_convex([], bm25, 0.0)
    if strategy == "rrf":
        return fuse_rrf(dense, bm25, 1.0, 1.0, RRF_K)
    return fuse_convex(dense, bm25, alpha, dense_fill)


def _dense_fill(engine: MemoryEngine, query: np.ndarray, dense: list, bm25: list) -> dict[str, float]:  # type: ignore[type-arg]
    """Exact cosines of the candidates only BM25 found, scored by the index on the vectors it stores."""
    seen = {hit.id for hit in dense}
    return engine.index.dense_scores(query, [hit.id for hit in bm25 if hit.id not in seen])


def hybrid_retrieve(
    engine: MemoryEngine,
    filters: ReadFilters,
    query: str,
    *,
    depth: int = CANDIDATE_DEPTH,
    strategy: Strategy = "hybrid",
    alpha: float | None = None,
    query_vector: np.ndarray | None = None,
) -> Retrieval:
    """Rank the memories `filters` admits for `query`: both channels, union, fuse, blend. Best first.

    `alpha` overrides the dense weight of the fusion (evaluation sweeps); None is the production one.
    `query_vector` is the query's dense vector when the caller already has it (`prepare_read`).
    """
    alpha = FUSION["alpha"] if alpha is None else alpha
    ids = None
    if filters.path_pattern is not None and filters.path_pattern.exact is None:
        ids = engine.store.ids_matching(filters)
    channels = {"hybrid": ("dense", "bm25"), "rrf": ("dense", "bm25"), "dense": ("dense",), "bm25": ("bm25",)}[strategy]
    plan: dict[str, Any] = {
        "strategy": strategy,
        "channels": list(channels),
        "fusion": {**FUSION, "alpha": alpha} if strategy == "hybrid" else {"method": strategy},
        "ranking": {
            "w_recency": W_RECENCY,
            "w_importance": W_IMPORTANCE,
            "recency_half_life_days": engine.settings.recency_half_life_days,
            "min_dense_match": MIN_DENSE_MATCH,
        },
        "candidates": {"dense": 0, "bm25": 0, "union": 0, "matched": 0},
    }
    if ids is not None and not ids:
        return Retrieval([], plan, filters)
    dense_query = None
    if "dense" in channels:
        dense_query = query_vector if query_vector is not None else engine.embedder.embed_query(
            query, tenant=tenant_of(filters.owner_id, None))
    sparse_query = engine.sparse.query(query) if "bm25" in channels else None
    flt = IndexFilter.from_read_filters(filters, ids)
    dense_hits, bm25_hits = engine.index.search(dense_query, sparse_query, flt, depth, depth)
    fill = _dense_fill(engine, dense_query, dense_hits, bm25_hits) if strategy == "hybrid" and dense_query is not None else {}
    fused = [
        c for c in _fuse(dense_hits, bm25_hits, strategy, fill, alpha)
        if c.bm25_rank is not None or (c.dense_score is not None and c.dense_score >= MIN_DENSE_MATCH)
    ]
    ranked = rank_candidates(fused, engine.clock(), engine.settings.recency_half_life_days)
    plan["candidates"] = {
        "dense": len(dense_hits),
        "bm25": len(bm25_hits),
        "union": len({h.id for h in dense_hits} | {h.id for h in bm25_hits}),
        "matched": len(ranked),
    }
    return Retrieval(ranked, plan, filters)


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


def prepare_read(engine: MemoryEngine, principal: Principal, query: str, *, items: Any = None,
                 **filter_args: Any) -> PreparedRead:
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
    return PreparedRead(engine.embedder.embed_query_later(query, tenant=tenant_of(filters.owner_id, None)),
                        engine.reads_in_process and small and not scans)


def _date(memory: Memory) -> str:
    return memory.occurred_at[:10]


def _without_restatements(engine: MemoryEngine, ranked: list[Hydrated]) -> tuple[list[Hydrated], list[Collapsed]]:
    """The ranking with restatements collapsed (retrieval.restatements), and what collapsed."""
    vectors = engine.index.dense_vectors([h.memory.id for h in ranked])
    kept, collapsed = collapse_restatements([h.memory for h in ranked], vectors, len(ranked))
    return [ranked[position] for position in kept], collapsed


def _above_floor(ranked: list[Hydrated], floor: float) -> list[Hydrated]:
    """The ranking without the memories scoring below `floor` times the top score."""
    if not ranked or floor <= 0.0:
        return ranked
    bar = floor * ranked[0].ranked.score
    return [h for h in ranked if h.ranked.score >= bar]


def _left_out(window: list[Hydrated], ranked: list[Hydrated], packed: set[str], max_items: int) -> list[dict[str, Any]]:
    """The memories read for a pack that it left out, best first, each with why.

    `floor`: below the relevance floor. `budget`: among the top `max_items` above it, kept out by the
    token budget (these are what `budget.dropped_items` counts). `item_limit`: further down, beyond
    what `max_items` would take even with tokens to spare.
    """
    position = {h.memory.id: rank for rank, h in enumerate(ranked)}
    left: list[dict[str, Any]] = []
    for h in window:
        rank = position.get(h.memory.id)
        if rank is None or h.memory.id not in packed:
            reason = "floor" if rank is None else "budget" if rank < max_items else "item_limit"
            left.append({"id": h.memory.id, "reason": reason, "score": round(h.ranked.score, 6)})
    return left


def recall_context(
    engine: MemoryEngine,
    principal: Principal,
    query: str,
    *,
    max_items: int = 8,
    max_tokens: int = 1500,
    scope: str | None = None,
    team_id: str | None = None,
    bucket: str | None = None,
    path_filter: str | None = None,
    memory_type: str | None = None,
    relevance_floor: float | None = None,
    query_vector: np.ndarray | None = None,
) -> dict[str, Any]:
    """The bounded context pack: ranked memories packed under `max_items` and exact `max_tokens`.

    `relevance_floor` overrides the settings' pack_relevance_floor (evaluation sweeps);
    `query_vector` is the query's vector from `prepare_read`, when the caller awaited it.
    """
    query = check_query(query)
    check_range(max_items, "max_items", 1, 50)
    check_range(max_tokens, "max_tokens", 1, 12000)
    filters = read_filters(
        principal, team_id=team_id, bucket=bucket, scope=scope, path_filter=path_filter, memory_type=memory_type
    )
    retrieval = hybrid_retrieve(engine, filters, query, depth=max(CANDIDATE_DEPTH, 3 * max_items),
                                query_vector=query_vector)
    window, collapsed = _without_restatements(engine, hydrate(engine, retrieval, PACK_WINDOW * max_items))
    floor = engine.settings.pack_relevance_floor if relevance_floor is None else relevance_floor
    ranked = _above_floor(window, floor)
    retrieval.plan["relevance_floor"] = floor
    candidates = [
        PackCandidate(h.memory.id, f"{_date(h.memory)} · {h.memory.type.value} · {h.memory.path}", h.memory.content)
        for h in ranked
    ]
    pack = pack_context(candidates, max_items, max_tokens, engine.tokens)
    engine.access.record([item.id for item in pack.items], used=[item.id for item in pack.items[:1]])
    items = []
    for item in pack.items:
        r = ranked[item.rank]
        items.append(
            {
                "id": r.memory.id,
                "type": r.memory.type.value,
                "path": r.memory.path,
                "score": round(r.ranked.score, 6),
                "tokens": item.tokens,
                "shortened": item.shortened,
                "created_at": r.memory.created_at,
                "occurred_at": r.memory.occurred_at,
            }
        )
    retrieval.plan["items"] = [{"id": ranked[i.rank].memory.id, **ranked[i.rank].ranked.components()} for i in pack.items]
    packed = {item.id for item in pack.items}
    retrieval.plan["collapsed"] = [c.to_dict() for c in collapsed if c.into in packed]
    retrieval.plan["dropped"] = _left_out(window, ranked, packed, max_items)
    return {
        "version": PACK_VERSION,
        "query": query,
        "retrieval_plan": retrieval.plan,
        "budget": _budget(pack, max_items, max_tokens),
        "items": items,
        "context_text": pack.context_text,
        "scope": scope or "",
    }


def search_memory(
    engine: MemoryEngine,
    principal: Principal,
    query: str,
    *,
    limit: int = 10,
    min_score: float | None = None,
    query_vector: np.ndarray | None = None,
    **filter_args: Any,
) -> dict[str, Any]:
    """Strict search: a result needs cosine >= min_score, or every query term present (score 1);
    `query_vector` as in recall_context."""
    query = check_query(query)
    check_range(limit, "limit", 1, 100)
    threshold = engine.settings.search_min_score if min_score is None else min_score
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float)) or not 0.0 <= threshold <= 1.0:
        raise ValidationError("min_score must be a number from 0 to 1")
    filters = read_filters(principal, **filter_args)
    retrieval = hybrid_retrieve(engine, filters, query, depth=max(CANDIDATE_DEPTH, 2 * limit),
                                query_vector=query_vector)
    ranked = hydrate(engine, retrieval, len(retrieval.ranked))
    query_terms = set(engine.sparse.query(query).indices)
    results = []
    for h in ranked:
        terms = set(engine.sparse.document(h.memory.content).indices)
        lexical = 1.0 if query_terms and query_terms <= terms else 0.0
        cosine = h.ranked.candidate.dense_score  # exact for every hybrid candidate (see _dense_fill)
        strict = max(cosine if cosine is not None else -1.0, lexical)
        if strict >= threshold:
            results.append({**_result(h.memory), "score": round(strict, 6), "rank_score": round(h.ranked.score, 6)})
        if len(results) == limit:
            break
    engine.access.record([item["id"] for item in results], used=[item["id"] for item in results[:1]])
    return {"query": query, "min_score": threshold, "results": results}


def recall(engine: MemoryEngine, principal: Principal, query: str, *, limit: int = 5,
           query_vector: np.ndarray | None = None, **filter_args: Any) -> dict[str, Any]:
    """The light, best-effort path: the top few memories with their content, no budget report;
    `query_vector` as in recall_context."""
    query = check_query(query)
    check_range(limit, "limit", 1, 20)
    filters = read_filters(principal, **filter_args)
    retrieval = hybrid_retrieve(engine, filters, query, depth=CANDIDATE_DEPTH, query_vector=query_vector)
    ranked, _ = _without_restatements(engine, hydrate(engine, retrieval, PACK_WINDOW * limit))
    results = [{**_result(h.memory), "score": round(h.ranked.score, 6)} for h in ranked[:limit]]
    engine.access.record([item["id"] for item in results], used=[item["id"] for item in results[:1]])
    return {"query": query, "results": results}


def _result(memory: Memory) -> dict[str, Any]:
    return {
        "id": memory.id,
        "content": memory.content,
        "type": memory.type.value,
        "path": memory.path,
        "bucket": memory.bucket,
        "scope": memory.scope,
        "team_id": memory.team_id,
        "created_at": memory.created_at,
        "occurred_at": memory.occurred_at,
        "importance": memory.importance,
    }


def get_memory(engine: MemoryEngine, principal: Principal, memory_id: str) -> Memory:
    """One memory by id (any status) if the principal may see it; else NotFound."""
    require(principal, READ)
    memory = visible_memory(engine, principal, memory_id)
    engine.access.record([], used=[memory.id])
    return memory


def project_context(
    engine: MemoryEngine,
    principal: Principal,
    project_id: str,
    *,
    team_id: str | None = None,
    max_items: int = 8,
    max_tokens: int = 1500,
    durable_query: str | None = None,
) -> dict[str, Any]:
    """A project's scope (`tenant:project:<id>`): its newest memories and its durable (semantic) context.

    Both lists share one budget: durable memories are packed first (ranked by `durable_query`, or
    newest first without one), then the newest memories fill what remains.
    """
    project_id = check_field(project_id, "project_id", allow_empty=False)
    if len(project_id) > MAX_PROJECT_ID:
        raise ValidationError(f"project_id must be at most {MAX_PROJECT_ID} characters")
    check_range(max_items, "max_items", 1, 50)
    check_range(max_tokens, "max_tokens", 1, 12000)
    scope_key = f"{PROJECT_SCOPE_PREFIX}{project_id}"
    filters = read_filters(principal, team_id=team_id, scope=scope_key)
    if durable_query and durable_query.strip():
        semantic = read_filters(principal, team_id=team_id, scope=scope_key, memory_type="semantic")
        retrieval = hybrid_retrieve(engine, semantic, check_query(durable_query))
        durable = [h.memory for h in hydrate(engine, retrieval, max_items)]
    else:
        durable = engine.store.recent(replace(filters, memory_type=MemoryType.SEMANTIC), max_items)
    durable_ids = {m.id for m in durable}
    recent = [m for m in engine.store.recent(filters, max_items + len(durable)) if m.id not in durable_ids]
    ordered = durable + recent
    pack = pack_context(
        [PackCandidate(m.id, f"{_date(m)} · {m.type.value} · {m.path}", m.content) for m in ordered],
        max_items, max_tokens, engine.tokens,
    )
    packed = {item.id for item in pack.items}
    engine.access.record(packed)
    return {
        "project_scope": {
            "scope_key": scope_key,
            "project_id": project_id,
            "owner_id": principal.owner_id,
            "organization_id": principal.organization_id,
            "workspace_id": principal.workspace_id,
            "team_id": team_id or None,
        },
        "recent_memories": [{"id": m.id, "content": m.content, "type": m.type.value, "path": m.path,
                             "occurred_at": m.occurred_at} for m in recent if m.id in packed],
        "durable_context": [{"id": m.id, "content": m.content, "path": m.path} for m in durable if m.id in packed],
        "budget": _budget(pack, max_items, max_tokens),
        "context_text": pack.context_text,
    }


def _budget(pack: Pack, max_items: int, max_tokens: int) -> dict[str, int]:
    """The `budget` object of a pack."""
    return {
        "max_items": max_items,
        "max_tokens": max_tokens,
        "used_items": len(pack.items),
        "used_tokens": pack.used_tokens,
        "dropped_items": pack.dropped,
        "shortened_items": pack.shortened,
    }

