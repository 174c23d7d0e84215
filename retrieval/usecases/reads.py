"""Read use cases: recall_context (the bounded pack), search_memory, recall, get and project context."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import datetime

from ..domain import (
    DEFAULT_PACK_ITEMS,
    DEFAULT_PACK_TOKENS,
    MAX_LABEL_CHARS,
    MAX_PACK_ITEMS,
    MAX_PACK_TOKENS,
    READ,
    Memory,
    MemoryType,
    Principal,
    ValidationError,
    check_field,
    check_query,
    check_range,
    format_time,
    require,
    spoken,
)
from ..engine import MemoryEngine
from ..ranking import (
    MIN_GROUP,
    Collapsed,
    Group,
    Pack,
    PackCandidate,
    collapse_restatements,
    fold_groups,
    group_candidate,
    names_key,
    pack_context,
    query_terms,
)
from .requests import PACK_WINDOW, LightRecallRequest, ReadRequest, RecallRequest, SearchRequest
from .results import (
    Budget,
    ContextPack,
    Dropped,
    DurableMemory,
    PackItem,
    PackMember,
    ProjectContext,
    ProjectScope,
    RecallResults,
    RecentMemory,
    SearchResult,
    SearchResults,
)
from .retrieve import (
    CANDIDATE_DEPTH,
    Hydrated,
    PreparedRead,
    Retrieval,
    expired,
    hybrid_retrieve,
    hydrate,
    read_filters,
)
from .writes import visible_memory

__all__ = [
    "MAX_PROJECT_ID",
    "PACK_VERSION",
    "PROJECT_SCOPE_PREFIX",
    "get_memory",
    "project_context",
    "recall",
    "recall_context",
    "search_memory",
]

PACK_VERSION = "1"
PROJECT_SCOPE_PREFIX = "tenant:project:"
MAX_PROJECT_ID = MAX_LABEL_CHARS - len(PROJECT_SCOPE_PREFIX)  # the scope it makes stays within a label


def _date(memory: Memory) -> str:
    return memory.occurred_at[:10]


def _without_restatements(engine: MemoryEngine, ranked: list[Hydrated]) -> tuple[list[Hydrated], list[Collapsed]]:
    """The ranking with restatements collapsed (ranking/restatements.py), and what collapsed."""
    vectors = engine.whole_vectors([h.memory for h in ranked])
    kept, collapsed = collapse_restatements([h.memory for h in ranked], vectors, len(ranked))
    return [ranked[position] for position in kept], collapsed


def _candidate(memory: Memory) -> PackCandidate:
    return PackCandidate(
        memory.id, f"{_date(memory)} · {memory.type.value} · {memory.path}", spoken(memory.content, memory.speaker)
    )


def _holders(engine: MemoryEngine, read: list[Hydrated], retrieval: Retrieval) -> tuple[list[Hydrated], list[Hydrated]]:
    """The read split into what reflect made that only groups (ranking/grouping.py) and the rest.

    A summary or promotion of several memories groups while every member it names is live (admitted by
    this read's filters, which admit only active memories to a pack, and not expired): their words are
    then in the ranking as themselves. One with a member gone (archived, forgotten, expired, or outside
    this read's filters) is the only place left that holds that member's words here, so it is ranked
    as itself among the rest; so is a promotion of one memory (a durable copy of it), which the
    restatement collapse then shows once, as the better ranked of the two."""
    made = [h for h in read if h.memory.derived_from]
    if not made:
        return [], read
    live = {h.memory.id for h in read}  # hydrate read each of these and found it admitted and not expired
    others = sorted({m for h in made for m in h.memory.derived_from} - live)
    if others:
        now = format_time(engine.clock())
        members = engine.store.get_many(others)
        live |= {i for i, m in members.items() if retrieval.filters.admits(m) and not expired(m, now)}
    holders = [h for h in made if len(h.memory.derived_from) >= MIN_GROUP and set(h.memory.derived_from) <= live]
    grouping = {h.memory.id for h in holders}
    return holders, [h for h in read if h.memory.id not in grouping]


def _listed(engine: MemoryEngine, read: list[Hydrated], retrieval: Retrieval) -> list[Hydrated]:
    """What a list of results shows of a read: what reflect made that only groups set aside for its live
    members (`_holders`), then restatements collapsed, as in a pack."""
    _, listed = _holders(engine, read, retrieval)
    return _without_restatements(engine, listed)[0]


def _grouped(
    engine: MemoryEngine, ranked: list[Hydrated], holders: list[Hydrated], max_items: int, max_tokens: int
) -> tuple[Pack, list[Hydrated], list[Group], dict[str, int]]:
    """Pack `ranked`; then, when reflect's memories group two or more of what it holds, pack again with
    each group one block at its best member's place (its score and components), its other members
    taken out: the header each would have carried is room for further memories. The second pack is
    kept only when it shows, whole, everything the first showed whole (as itself or in a group's
    block) and the first's other items too: a group's dated lines can outweigh the headers they save,
    and then grouping would push out or cut what the plain ranking chose. What it packs, which memory
    each item shows, the members each group shows, and each memory's place in the list it packed from
    (a member at its group's)."""
    pack = pack_context([_candidate(h.memory) for h in ranked], max_items, max_tokens, engine.tokens)
    plain: tuple[Pack, list[Hydrated], list[Group], dict[str, int]] = (
        pack,
        [ranked[item.rank] for item in pack.items],
        [],
        {h.memory.id: i for i, h in enumerate(ranked)},
    )
    whole = [ranked[item.rank].memory for item in pack.items if not item.shortened]
    groups = fold_groups(whole, [h.memory for h in holders]) if holders else []
    if not groups:
        return plain
    group_of = {m.id: g for g in groups for m in g.members}
    units: list[tuple[Hydrated, PackCandidate]] = []
    position: dict[str, int] = {}
    for h in ranked:
        group = group_of.get(h.memory.id)
        if group is not None and group.holder.id in position:
            position[h.memory.id] = position[group.holder.id]
            continue
        position[h.memory.id] = len(units)
        if group is None:
            units.append((h, _candidate(h.memory)))
        else:
            position[group.holder.id] = len(units)
            units.append((Hydrated(h.ranked, group.holder), group_candidate(group)))
    regrouped = pack_context([c for _, c in units], max_items, max_tokens, engine.tokens)
    shown = [units[item.rank][0] for item in regrouped.items]
    whole_now = {units[item.rank][0].memory.id for item in regrouped.items if not item.shortened}
    held_now = {h.memory.id for h in shown}
    for g in groups:
        if g.holder.id in whole_now:
            whole_now.update(m.id for m in g.members)
        if g.holder.id in held_now:
            held_now.update(m.id for m in g.members)
    if not {m.id for m in whole} <= whole_now or not {ranked[i.rank].memory.id for i in pack.items} <= held_now:
        return plain
    return regrouped, shown, groups, position


def _above_floor(ranked: list[Hydrated], floor: float) -> list[Hydrated]:
    """The ranking without the memories scoring below `floor` times the top score."""
    if not ranked or floor <= 0.0:
        return ranked
    bar = floor * ranked[0].ranked.score
    return [h for h in ranked if h.ranked.score >= bar]


def _left_out(window: list[Hydrated], position: dict[str, int], packed: set[str], max_items: int) -> list[Dropped]:
    """The memories read for a pack that it left out, best first, each with why.

    `position` is each memory's place in the list the pack was made from (`_grouped`); one it lacks
    is below the relevance floor: `floor`. `budget`: among the top `max_items` places, kept out by the
    token budget (these are what `budget.dropped_items` counts). `item_limit`: further down, beyond
    what `max_items` would take even with tokens to spare.
    """
    left: list[Dropped] = []
    for h in window:
        rank = position.get(h.memory.id)
        if rank is None or h.memory.id not in packed:
            reason = "floor" if rank is None else "budget" if rank < max_items else "item_limit"
            left.append(Dropped(h.memory.id, reason, round(h.ranked.score, 6)))
    return left


def _ranking(
    engine: MemoryEngine, read: PreparedRead[ReadRequest], depth: int, as_of: datetime | None = None
) -> Retrieval:
    """The production ranking of a prepared read: its query under its filters, with its vector."""
    return hybrid_retrieve(
        engine, read.filters, read.request.query, depth=depth, query_vector=read.query_vector(), as_of=as_of
    )


def _pack_items(pack: Pack, shown: list[Hydrated], groups: Sequence[Group] = ()) -> tuple[PackItem, ...]:
    """The pack's items; a group's lists the members its lines show, in line order."""
    lines = {g.holder.id: tuple(PackMember.of(m) for m in g.members) for g in groups}
    return tuple(
        PackItem(
            id=h.memory.id,
            type=h.memory.type.value,
            path=h.memory.path,
            score=round(h.ranked.score, 6),
            tokens=item.tokens,
            shortened=item.shortened,
            created_at=h.memory.created_at,
            occurred_at=h.memory.occurred_at,
            members=lines.get(h.memory.id, ()),
        )
        for item, h in zip(pack.items, shown, strict=True)
    )


def recall_context(engine: MemoryEngine, read: PreparedRead[RecallRequest]) -> ContextPack:
    """The bounded context pack: ranked memories packed under `max_items` and exact `max_tokens`.

    The ranking (usecases/retrieve.py), then what reflect made that only groups set apart, restatements
    collapsed, the relevance floor, and the packer (with reflect's groups tried, `_grouped`)."""
    request = read.request
    retrieval = _ranking(engine, read, max(CANDIDATE_DEPTH, 3 * request.max_items), request.asked_at)
    hydrated = hydrate(engine, retrieval, PACK_WINDOW * request.max_items)
    floor = engine.settings.pack_relevance_floor if request.relevance_floor is None else request.relevance_floor
    holders, hydrated = _holders(engine, hydrated, retrieval)
    window, collapsed = _without_restatements(engine, hydrated)
    pack, shown, groups, position = _grouped(
        engine, _above_floor(window, floor), holders, request.max_items, request.max_tokens
    )
    folded = [Collapsed(m.id, g.holder.id, "grouped") for g in groups for m in g.members]
    engine.read_tracker.record([h.memory.id for h in shown] + [c.id for c in folded], question=request.query)
    packed = {h.memory.id for h in shown} | {c.id for c in folded}
    plan = replace(
        retrieval.plan,
        relevance_floor=floor,
        items=tuple({"id": h.memory.id, **h.ranked.components()} for h in shown),
        collapsed=tuple(c for c in collapsed if c.into in packed) + tuple(folded),
        dropped=tuple(_left_out(window, position, packed, request.max_items)),
    )
    return ContextPack(
        PACK_VERSION,
        request.query,
        plan,
        Budget.of(pack, request.max_items, request.max_tokens),
        _pack_items(pack, shown, groups),
        pack.context_text,
        request.scope or "",
        tuple(item.text for item in pack.items),
    )


def search_memory(engine: MemoryEngine, read: PreparedRead[SearchRequest]) -> SearchResults:
    """Strict search: a result needs cosine >= min_score, or every query term present, or its
    `semantic_key` named by the query (ranking/semantic_keys.py; score 1 for either); what reflect made lists
    its live members instead of itself and restatements collapse, as in a pack, and results are listed by
    that score."""
    request = read.request
    threshold = engine.settings.search_min_score if request.min_score is None else request.min_score
    retrieval = _ranking(engine, read, max(CANDIDATE_DEPTH, 2 * request.limit))
    ranked = _listed(engine, hydrate(engine, retrieval, len(retrieval.ranked)), retrieval)
    wanted = set(engine.sparse.query(request.query).indices)
    named = query_terms(request.query)
    results: list[SearchResult] = []
    for h in ranked:
        terms = set(engine.sparse.document(h.memory.content).indices)
        keyed = h.memory.semantic_key is not None and names_key(named, h.memory.semantic_key)
        lexical = 1.0 if (wanted and wanted <= terms) or keyed else 0.0
        cosine = h.ranked.candidate.dense_score  # exact for every hybrid candidate (see retrieve._dense_fill)
        # A cosine of stored half-precision vectors may round past 1 (1.000045); a score stays within [0, 1].
        strict = min(1.0, max(cosine if cosine is not None else -1.0, lexical))
        if strict >= threshold:
            results.append(SearchResult.of(h.memory, round(strict, 6), round(h.ranked.score, 6)))
    # Listed in the order of the score shown (the strict one), the ranking breaking ties; each thing once.
    results = sorted(results, key=lambda r: -r.score)[: request.limit]
    engine.read_tracker.record([r.id for r in results], question=request.query)
    return SearchResults(request.query, threshold, tuple(results))


def recall(engine: MemoryEngine, read: PreparedRead[LightRecallRequest]) -> RecallResults:
    """The light, best-effort path: the top few memories with their content, no budget report; what
    reflect made lists its live members instead of itself, as in a pack."""
    request = read.request
    retrieval = _ranking(engine, read, CANDIDATE_DEPTH)
    ranked = _listed(engine, hydrate(engine, retrieval, PACK_WINDOW * request.limit), retrieval)
    results = tuple(SearchResult.of(h.memory, round(h.ranked.score, 6)) for h in ranked[: request.limit])
    engine.read_tracker.record([r.id for r in results], question=request.query)
    return RecallResults(request.query, results)


def get_memory(engine: MemoryEngine, principal: Principal, memory_id: str) -> Memory:
    """One memory by id (any status) if the principal may see it; else NotFound."""
    require(principal, READ)
    memory = visible_memory(engine, principal, memory_id)
    engine.read_tracker.record([], used=[memory.id])
    return memory


def project_context(
    engine: MemoryEngine,
    principal: Principal,
    project_id: str,
    *,
    team_id: str | None = None,
    max_items: int = DEFAULT_PACK_ITEMS,
    max_tokens: int = DEFAULT_PACK_TOKENS,
    durable_query: str | None = None,
) -> ProjectContext:
    """A project's scope (`tenant:project:<id>`): its newest memories and its durable (semantic) context.

    Both lists share one budget: durable memories are packed first (ranked by `durable_query`, or
    newest first without one), then the newest memories fill what remains.
    """
    project_id = check_field(project_id, "project_id", allow_empty=False)
    if len(project_id) > MAX_PROJECT_ID:
        raise ValidationError(f"project_id must be at most {MAX_PROJECT_ID} characters")
    max_items = check_range(max_items, "max_items", 1, MAX_PACK_ITEMS)
    max_tokens = check_range(max_tokens, "max_tokens", 1, MAX_PACK_TOKENS)
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
        max_items,
        max_tokens,
        engine.tokens,
    )
    packed = {item.id for item in pack.items}
    engine.read_tracker.record(packed)
    scope = ProjectScope(
        scope_key, project_id, principal.owner_id, principal.organization_id, principal.workspace_id, team_id or None
    )
    return ProjectContext(
        project_scope=scope,
        recent_memories=tuple(
            RecentMemory(m.id, m.content, m.type.value, m.path, m.occurred_at) for m in recent if m.id in packed
        ),
        durable_context=tuple(DurableMemory(m.id, m.content, m.path) for m in durable if m.id in packed),
        budget=Budget.of(pack, max_items, max_tokens),
        context_text=pack.context_text,
    )
