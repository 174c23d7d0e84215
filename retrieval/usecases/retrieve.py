"""Hybrid retrieval: the ranking every read uses (both channels, union, fusion, blend), the records of
its top read back from SQL, and the checks a read makes before the model runs."""

from __future__ import annotations

from concurrent.futures import Future
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any, Generic, Literal, TypeVar

import numpy as np

from ..domain import Memory, MemoryStatus, Principal, ReadFilters, format_time, script_of, tenant_of
from ..encoding import SparseVector
from ..engine import MemoryEngine
from ..index import IndexFilter, IndexHit
from ..ranking import (
    DATE_BOOST,
    KEY_BOOST,
    RRF_K,
    SESSION_DECAY,
    SPEAKER_PRIOR,
    W_IMPORTANCE,
    W_RECENCY,
    Addressed,
    FusedCandidate,
    QueryTime,
    Ranked,
    addressed_speaker,
    asks_several_events,
    fuse_convex,
    fuse_rrf,
    lead_with_window,
    may_name_keys,
    names_key,
    newest_first,
    query_terms,
    rank_candidates,
    read_time,
    spread_sessions,
    with_priors,
)
from .requests import PACK_WINDOW, Filtered, ReadRequest
from .results import Candidates, RetrievalPlan

__all__ = [
    "CANDIDATE_DEPTH",
    "FUSION",
    "IN_PROCESS_MAX_RECORDS",
    "MIN_DENSE_MATCH",
    "PACK_WINDOW",
    "WINDOW_RECORDS",
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
# The default fusion, chosen by measurement on SciFact and LoCoMo (docs/evaluation.md): a convex
# combination of theoretically normalised scores (TM2C2, Bruch et al. 2023), alpha on the dense side.
FUSION: dict[str, Any] = {"method": "convex", "normalisation": "tm2c2", "alpha": 0.7}
# A question's time window makes candidates of the memories that occurred in it, the newest this many
# (their ids read from SQL by `occurred_at`; both channels then search among them).
WINDOW_RECORDS = 1000


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
    """These filters within what the principal may see, for a read that is not a request of a query
    (a project's context, the console's meaning search, the evaluations); a foreign team is a 403."""
    filtered = Filtered(team_id=team_id, bucket=bucket, scope=scope, path_filter=path_filter, memory_type=memory_type)
    return filtered.filters_for(principal, statuses)


def _fuse(
    dense: list[IndexHit],
    bm25: list[IndexHit],
    strategy: Strategy,
    dense_fill: dict[str, float],
    alpha: float,
    across: str | None,
) -> list[FusedCandidate]:
    if strategy == "dense":
        return fuse_convex(dense, [], 1.0)
    if strategy == "bm25":
        return fuse_convex([], bm25, 0.0)
    if strategy == "rrf":
        return fuse_rrf(dense, bm25, 1.0, 1.0, RRF_K)
    return fuse_convex(dense, bm25, alpha, dense_fill, across)


def _dense_fill(
    engine: MemoryEngine, query: np.ndarray, dense: list[IndexHit], bm25: list[IndexHit]
) -> dict[str, float]:
    """Exact cosines of the candidates only BM25 found, scored by the index on the vectors it stores."""
    seen = {hit.id for hit in dense}
    return engine.index.dense_scores(query, [hit.id for hit in bm25 if hit.id not in seen])


def _keyed(engine: MemoryEngine, query: str, fused: list[FusedCandidate]) -> set[str]:
    """The candidates whose `semantic_key` the query names (ranking/semantic_keys.py), looked at only when the
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


_CHANNELS: dict[Strategy, tuple[str, ...]] = {
    "hybrid": ("dense", "bm25"),
    "rrf": ("dense", "bm25"),
    "dense": ("dense",),
    "bm25": ("bm25",),
}


def _plan(engine: MemoryEngine, strategy: Strategy, alpha: float) -> RetrievalPlan:
    """What `retrieval_plan` says of a ranking before it runs: its channels, fusion and blend."""
    return RetrievalPlan(
        strategy=strategy,
        channels=_CHANNELS[strategy],
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
            "session_decay": SESSION_DECAY,
        },
    )


@dataclass(frozen=True, slots=True)
class _Channels:
    """What both channels found for a query, the dense query they used and the speaker it addresses."""

    dense: list[IndexHit]
    bm25: list[IndexHit]
    dense_query: np.ndarray | None
    sparse_query: SparseVector | None
    addressed: Addressed | None


def _search_channels(
    engine: MemoryEngine,
    filters: ReadFilters,
    query: str,
    flt: IndexFilter,
    depth: int,
    strategy: Strategy,
    query_vector: np.ndarray | None,
    speaker_prior: bool,
) -> _Channels:
    """Both channels' top `depth`; a query naming one speaker among their candidates is searched again
    without the name (ranking/speakers.py)."""
    channels = _CHANNELS[strategy]
    tenant = tenant_of(filters.owner_id, None)
    dense_query = None
    if "dense" in channels:
        dense_query = query_vector if query_vector is not None else engine.embedder.embed_query(query, tenant=tenant)
    sparse_query = engine.sparse.query(query) if "bm25" in channels else None
    dense_hits, bm25_hits = engine.index.search(dense_query, sparse_query, flt, depth, depth)
    addressed = None
    if strategy == "hybrid" and speaker_prior:
        addressed = addressed_speaker(query, {h.speaker for h in (*dense_hits, *bm25_hits) if h.speaker})
        if addressed is not None and addressed.query != query:
            # Both channels again without the name: it is in every one of that speaker's memories, so it
            # only pulls in the others' mentions of them, and an adversarial question naming the wrong
            # person would otherwise match on the name alone. A second query vector: named queries only.
            dense_query = engine.embedder.embed_query(addressed.query, tenant=tenant)
            sparse_query = engine.sparse.query(addressed.query)
            dense_hits, bm25_hits = engine.index.search(dense_query, sparse_query, flt, depth, depth)
    return _Channels(dense_hits, bm25_hits, dense_query, sparse_query, addressed)


def _with_window(
    engine: MemoryEngine, filters: ReadFilters, found: _Channels, flt: IndexFilter, asked: QueryTime, depth: int
) -> tuple[_Channels, int]:
    """Both channels again among the memories that occurred in the question's window (the newest
    WINDOW_RECORDS of them), their hits added to the first search's: what occurred then is a candidate
    even when its words are not the question's. With how many memories the window holds (bounded)."""
    window = asked.window
    assert window is not None
    since = format_time(datetime.fromtimestamp(window.start, UTC))
    until = format_time(datetime.fromtimestamp(window.end, UTC))
    ids = engine.store.occurred_in(filters, since, until, WINDOW_RECORDS)
    if flt.ids is not None:
        admitted = set(flt.ids)
        ids = [memory_id for memory_id in ids if memory_id in admitted]
    if not ids:
        return found, 0
    inside = replace(flt, ids=tuple(ids))
    dense, bm25 = engine.index.search(found.dense_query, found.sparse_query, inside, depth, depth)
    return replace(found, dense=_merged(found.dense, dense), bm25=_merged(found.bm25, bm25)), len(ids)


def _merged(first: list[IndexHit], more: list[IndexHit]) -> list[IndexHit]:
    """One channel's hits from both searches, best first (scores of one query are comparable)."""
    seen = {hit.id for hit in first}
    return sorted([*first, *(hit for hit in more if hit.id not in seen)], key=lambda hit: (-hit.score, hit.id))


def _reading(moment: datetime, addressed: Addressed | None, asked: QueryTime, in_window: int) -> dict[str, Any]:
    """`retrieval_plan.query`: when the question was asked, the speaker and the time it was read to name,
    the path that time took (`time-led` or `preferred`) and how many memories the window held; for a
    question without a date, the word that asked for the newest answers first (`recency`)."""
    window = asked.window
    return {
        "as_of": _utc_text(moment),
        "speaker": addressed.speaker if addressed else None,
        "recency": asked.recent,
        "time_window": None
        if window is None
        else {
            "phrase": window.phrase,
            "start": _utc_text(datetime.fromtimestamp(window.start, UTC)),
            "end": _utc_text(datetime.fromtimestamp(window.end, UTC)),
            "path": asked.path,
            "candidates": in_window,
        },
    }


def _utc_text(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


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
    session_decay: float = SESSION_DECAY,
) -> Retrieval:
    """Rank the memories `filters` admits for `query`: both channels, union, fuse, the priors of the
    speaker it asks about and the time it names, blend. Best first.

    `alpha` overrides the dense weight of the fusion (evaluation sweeps); None is the production one.
    `query_vector` is the query's dense vector when the caller already has it (`prepare_read`).
    `as_of` is when the question is asked (default now): "last Saturday" is the Saturday before it,
    and recency is counted back from it.
    `speaker_prior` and `date_window` switch those priors off for the evaluation's ablations;
    `session_decay` is the spread of a question about several events over sessions (1: none).
    """
    alpha = FUSION["alpha"] if alpha is None else alpha
    plan = _plan(engine, strategy, alpha)
    ids = None
    if filters.path_pattern is not None and filters.path_pattern.exact is None:
        ids = engine.store.ids_matching(filters)
        if not ids:
            return Retrieval([], plan, filters)
    flt = IndexFilter.from_read_filters(filters, ids)
    hybrid = strategy == "hybrid"
    moment = as_of or engine.clock()
    asked = read_time(query, moment) if hybrid and date_window else QueryTime(None, query, False)
    found = _search_channels(engine, filters, asked.words, flt, depth, strategy, query_vector, speaker_prior)
    in_window = 0
    if asked.window is not None:
        found, in_window = _with_window(engine, filters, found, flt, asked, depth)
    fill = (
        _dense_fill(engine, found.dense_query, found.dense, found.bm25)
        if hybrid and found.dense_query is not None
        else {}
    )
    across = script_of(query) if engine.settings.encoder_crosses_scripts else None
    fused = [c for c in _fuse(found.dense, found.bm25, strategy, fill, alpha, across) if _matched(c, asked)]
    keyed = _keyed(engine, query, fused) if hybrid else set()
    fused = with_priors(fused, found.addressed.speaker if found.addressed else None, asked.window, keyed)
    ranked = rank_candidates(fused, moment, engine.settings.recency_half_life_days)  # recent as of the question
    if hybrid and session_decay < 1.0 and asks_several_events(query):
        ranked = spread_sessions(ranked, session_decay)
    if asked.led and asked.window is not None:
        ranked = lead_with_window(ranked, asked.window)
    elif asked.recent is not None:
        ranked = newest_first(ranked)
    candidates = Candidates(
        dense=len(found.dense),
        bm25=len(found.bm25),
        union=len({h.id for h in found.dense} | {h.id for h in found.bm25}),
        matched=len(ranked),
    )
    reading = _reading(moment, found.addressed, asked, in_window)
    return Retrieval(ranked, replace(plan, candidates=candidates, query=reading), filters)


def _matched(candidate: FusedCandidate, asked: QueryTime) -> bool:
    """A candidate BM25 found, or whose meaning is close enough; for a time-led question, any memory
    that occurred in its window (that is what it asks for)."""
    if candidate.bm25_rank is not None or (
        candidate.dense_score is not None and candidate.dense_score >= MIN_DENSE_MATCH
    ):
        return True
    return asked.led and asked.window is not None and asked.window.holds(candidate.occurred_ts)


# A read that stays in the process is small enough to run on a service's event loop when it reads
# at most this many records: recall_context's default 8 items (a window of 16). A larger one, or a
# search (which reads every candidate), runs on a worker thread, where other requests interleave.
IN_PROCESS_MAX_RECORDS = 16

Request = TypeVar("Request", bound=ReadRequest, covariant=True)  # a prepared search is a prepared read
Asked = TypeVar("Asked", bound=ReadRequest)


@dataclass(frozen=True, slots=True)
class PreparedRead(Generic[Request]):
    """A read, checked and started: the request as built (checked then), the filters it reads under for
    its principal, and its query's dense vector as a future that the model's thread completes (at once
    from the query cache). `in_process` says whether the read is small and touches only this process's
    files, waiting for nothing (MemoryEngine.reads_in_process, at most IN_PROCESS_MAX_RECORDS records
    read, and no path filter with `%`, which is resolved by a scan in SQL)."""

    request: Request
    filters: ReadFilters
    vector: Future[np.ndarray]
    in_process: bool

    def query_vector(self) -> np.ndarray:
        """The query's vector (a service has awaited it already; a command waits for the model here)."""
        return self.vector.result()


def prepare_read(engine: MemoryEngine, principal: Principal, request: Asked) -> PreparedRead[Asked]:
    """The read of `request` for `principal`: its filters (its read scope and team checked: a refused
    read never runs the model), and its vector started.

    A service awaits `vector` on its event loop before it runs the use case on the prepared read, so
    that no thread is held waiting on the model (service/loop_reads.py); a command calls the use case
    at once."""
    filters = request.filters_for(principal)
    scans = filters.path_pattern is not None and filters.path_pattern.exact is None
    window = request.records_read()
    asked_at = getattr(request, "asked_at", None) or engine.clock()
    words = read_time(request.query, asked_at).words  # the dense query leaves out a date phrase's words
    return PreparedRead(
        request,
        filters,
        engine.embedder.embed_query_later(words, tenant=tenant_of(filters.owner_id, None)),
        engine.reads_in_process and window is not None and window <= IN_PROCESS_MAX_RECORDS and not scans,
    )
