"""The planner: a pure function from a snapshot of memories, their stored vectors, the options, the
settings and `now` to an ordered list of typed changes. A dry run shows this plan; a real run applies it.

Order of the pass: expire, then summarize and promote over the window's episodes, then decay and
archive. A memory changed twice in one plan (marked as summarized, then decayed) carries its versions
forward, so each change is checked against the version the one before it left.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

import numpy as np

from retrieval import Memory, MemoryStatus, MemoryType
from retrieval.domain import format_time, lexical_units, normalise, script_of, shared_fraction, text_sha256

from .clustering import cluster_vectors
from .lifecycle import (
    BASE_KEY,
    base_importance,
    decayed_importance,
    idle_days,
    is_expired,
    is_protected,
    should_archive,
)
from .options import ReflectOptions
from .recurrence import find_recurrence, states_something
from .settings import ReflectSettings
from .summarizer import ClusterView, Summarizer, heading_for

__all__ = [
    "CARRIED_KEY",
    "PROMOTED_KEY",
    "PROPOSAL_PATTERN",
    "SUMMARIZED_KEY",
    "USED_KEY",
    "Change",
    "Declined",
    "Plan",
    "Snapshot",
    "plan_reflection",
]

# Marks written into members' metadata. A member with SUMMARIZED_KEY is no longer new (it may still
# show that a later cluster recurs); one with PROMOTED_KEY leaves the clustering pool, so the same
# evidence is promoted once.
SUMMARIZED_KEY = "summarized_into"
PROMOTED_KEY = "promoted_into"
# A member promoted alone because it was used often; it stays in the clustering pool (a recurring
# topic may still include it), and is never promoted for use again.
USED_KEY = "promoted_for_use"
# Set when the memory reflect made holds the member's whole text: only such a member may be archived
# for idleness, since hiding it then loses no words (docs/reflect.md, "Archive").
CARRIED_KEY = "carried_into"
PROPOSAL_DIGITS = 12  # hex digits of a proposal id after its action
PROPOSAL_PATTERN = r"^(summarize|promote|expire|decay|archive)-[0-9a-f]{12}$"
_IDS = uuid.UUID("6f1e7a52-3c1b-4b7e-9a55-0d7c2b1f4e10")  # namespace of the ids reflect derives


@dataclass(frozen=True, slots=True)
class Snapshot:
    """What one read transaction saw: the window's episodes (newest first, at most `limit`), the
    overdue memories, the longest-unused memories, the stored vectors of the episodes, how many
    episodes the limit kept out, and for each episode fetched by id the distinct questions it was
    read for."""

    episodes: tuple[Memory, ...] = ()
    overdue: tuple[Memory, ...] = ()
    stalest: tuple[Memory, ...] = ()
    vectors: Mapping[str, np.ndarray] = field(default_factory=dict)
    left_out: int = 0  # episodes of the window the `limit` kept out of this pass
    questions: Mapping[str, int] = field(default_factory=dict)  # distinct questions each episode was read for


@dataclass(frozen=True, slots=True)
class Change:
    """One audited change: `pairs` are (record as planned on, new record); None before means created.

    `proposal_id` names the change for a reviewer ("summarize-3fa29c81d2e4"): it is derived from the
    action, the memory it creates and the memories it changes at the versions the snapshot read, so
    a dry run and the real run after it give each proposal the same id, and leaving one proposal out
    does not rename the others.
    """

    action: str
    reason: str
    pairs: tuple[tuple[Memory | None, Memory], ...]
    detail: Mapping[str, Any]
    proposal_id: str = ""

    @property
    def memory_ids(self) -> list[str]:
        return [after.id for _, after in self.pairs]


@dataclass(frozen=True, slots=True)
class Declined:
    """A proposal a reviewer turned down: its id, its action and its members at the versions it was
    planned on (the id is derived from them, so it comes back only when a member changes or one joins);
    `declined_at` and `actor` say when and by whom, once recorded."""

    proposal_id: str
    action: str
    members: tuple[tuple[str, int], ...]
    declined_at: str = ""
    actor: str = ""


@dataclass(frozen=True, slots=True)
class Plan:
    plan_id: str
    now: datetime
    options: ReflectOptions
    changes: tuple[Change, ...]
    candidates: Mapping[str, int]
    excluded: tuple[str, ...] = ()  # proposal ids left out at the reviewer's request, as found in the plan
    declined: tuple[Declined, ...] = ()  # the reviewed plan's proposals turned down, recorded when applied
    held: tuple[Declined, ...] = ()  # proposals turned down by an earlier review, not made again
    reconsidered: bool = False  # the earlier reviews' refusals were cleared for this pass

    def of(self, action: str) -> list[Change]:
        return [c for c in self.changes if c.action == action]

    def counts(self) -> dict[str, int]:
        tally = Counter(c.action for c in self.changes)
        names = {
            "summarize": "summarized",
            "promote": "promoted",
            "expire": "expired",
            "decay": "decayed",
            "archive": "archived",
        }
        return {names[a]: tally.get(a, 0) for a in names}


def plan_reflection(
    snapshot: Snapshot,
    options: ReflectOptions,
    settings: ReflectSettings,
    summarizer: Summarizer,
    now: datetime,
    exclude: frozenset[str] = frozenset(),
    held: Mapping[str, Declined] | None = None,
    *,
    reconsidered: bool = False,
) -> Plan:
    """The changes a pass makes, deterministic in its inputs.

    A proposal whose id is in `exclude` (turned down in this review) or in `held` (turned down in an
    earlier one) is not made, and the rest of the pass plans as if it had not been proposed: its members
    stay as they were (not archived as carried by it, for instance).
    """
    plan_id = _plan_id(snapshot, options, now)
    builder = _Builder(plan_id, options, settings, summarizer, now, exclude)
    builder.held = held or {}
    builder.questions = snapshot.questions
    builder.expire(snapshot.overdue)
    builder.consolidate(snapshot.episodes, snapshot.vectors)
    builder.age(snapshot.stalest)
    builder.candidates["left_out"] = snapshot.left_out
    excluded = tuple(sorted(builder.excluded))
    held_back = tuple(builder.held_back[p] for p in sorted(builder.held_back))
    changes = tuple(builder.changes)
    return Plan(plan_id, now, options, changes, builder.candidates, excluded, held=held_back, reconsidered=reconsidered)


def _plan_id(snapshot: Snapshot, options: ReflectOptions, now: datetime) -> str:
    seen = sorted({(m.id, m.version) for m in (*snapshot.episodes, *snapshot.overdue, *snapshot.stalest)})
    described = {**options.describe(), "actions": list(options.actions), "now": format_time(now), "seen": seen}
    digest = hashlib.sha256(json.dumps(described, sort_keys=True).encode()).hexdigest()
    return str(uuid.uuid5(_IDS, digest))


class _Builder:
    def __init__(
        self,
        plan_id: str,
        options: ReflectOptions,
        settings: ReflectSettings,
        summarizer: Summarizer,
        now: datetime,
        exclude: frozenset[str] = frozenset(),
    ) -> None:
        self.plan_id = plan_id
        self.options = options
        self.settings = settings
        self.summarizer = summarizer
        self.now = now
        self.stamp = format_time(now)
        self.since = format_time(options.since)
        self.changes: list[Change] = []
        self.latest: dict[str, Memory] = {}
        self.expired: set[str] = set()
        self.waiting: set[str] = set()
        self.promoted: set[str] = set()  # members promoted in this plan (promoted once, whatever the way)
        self.questions: Mapping[str, int] = {}
        self.exclude = exclude
        self.excluded: set[str] = set()
        self.held: Mapping[str, Declined] = {}
        self.held_back: dict[str, Declined] = {}
        self.read_versions: dict[str, int] = {}  # each memory's version as the snapshot read it
        self.candidates: dict[str, int] = {"episodes": 0, "unvectored": 0, "clusters": 0, "overdue": 0, "lifecycle": 0}

    # -- bookkeeping --------------------------------------------------------------------------

    def current(self, memory: Memory) -> Memory:
        return self.latest.get(memory.id, memory)

    def bump(self, memory: Memory, **fields: Any) -> Memory:
        return replace(memory, updated_at=self.stamp, version=memory.version + 1, **fields)

    def record(
        self, action: str, reason: str, pairs: Sequence[tuple[Memory | None, Memory]], detail: Mapping[str, Any]
    ) -> bool:
        """Add the change to the plan, unless the reviewer excluded it; True when it was added."""
        for before, _ in pairs:
            if before is not None:
                self.read_versions.setdefault(before.id, before.version)
        proposal = self.proposal_id(action, pairs)
        if proposal in self.exclude:
            self.excluded.add(proposal)
            return False
        if proposal in self.held:
            self.held_back[proposal] = self.held[proposal]
            return False
        for _, after in pairs:
            self.latest[after.id] = after
        self.changes.append(Change(action, reason, tuple(pairs), {"proposal_id": proposal, **detail}, proposal))
        return True

    def proposal_id(self, action: str, pairs: Sequence[tuple[Memory | None, Memory]]) -> str:
        touched = sorted((after.id, 0 if before is None else self.read_versions[before.id]) for before, after in pairs)
        digest = hashlib.sha256(json.dumps([action, touched], separators=(",", ":")).encode()).hexdigest()
        return f"{action}-{digest[:PROPOSAL_DIGITS]}"

    def wants(self, action: str) -> bool:
        return action in self.options.actions

    # -- expire -------------------------------------------------------------------------------

    def expire(self, overdue: Sequence[Memory]) -> None:
        if not self.wants("expire"):
            return
        self.candidates["overdue"] = len(overdue)
        for memory in overdue:
            if memory.status != MemoryStatus.ACTIVE or not is_expired(memory, self.now):
                continue
            after = self.bump(memory, status=MemoryStatus.EXPIRED)
            if self.record(
                "expire",
                f"expires_at {memory.expires_at} has passed",
                [(memory, after)],
                {"id": memory.id, "expires_at": memory.expires_at},
            ):
                self.expired.add(memory.id)

    # -- summarize and promote ----------------------------------------------------------------

    def consolidate(self, episodes: Sequence[Memory], vectors: Mapping[str, np.ndarray]) -> None:
        """Cluster the pool; a cluster with new members is promoted when it recurs, else its new
        members are summarized when there are enough of them.

        New members are the window's active episodes not summarized or promoted yet. The pool adds,
        from the recurrence lookback, the earlier episodes: a topic summarized in one session that
        comes back in a later one is how recurrence shows. The pool is every episode read, whatever
        its status, except the members of earlier promotions: a pass that archives, expires, marks or
        promotes some of them takes whole clusters out, if any, and complete linkage leaves the rest
        of the next pass's clusters as they were. A cluster without a new member is left alone, so
        planning again after applying finds nothing new.
        """
        if not (self.wants("summarize") or self.wants("promote")):
            return
        active = {m.id for m in episodes if m.status == MemoryStatus.ACTIVE and m.id not in self.expired}
        new = {m.id for m in episodes if m.id in active and self.is_new(m)}
        self.candidates["episodes"] = len(new)
        self.candidates["unvectored"] = sum(1 for i in new if i not in vectors)
        consolidated: set[str] = set()
        pool = [m for m in episodes if m.id in vectors and PROMOTED_KEY not in m.metadata]
        for script, members in _by_space(pool):
            matrix = np.stack([vectors[m.id] for m in members])
            apart = None if script in self.settings.embedded_scripts else self.unrelated(members)
            clusters = cluster_vectors(
                matrix, self.settings.cluster_max_distance, self.settings.min_cluster_size, apart
            )
            for rows in clusters:
                live = [r for r in rows if members[r].id in active]
                if not any(members[r].id in new for r in live):
                    continue
                self.candidates["clusters"] += 1
                anchors = [members[r] for r in rows if members[r].id not in active]
                consolidated.update(self.consolidate_cluster([members[r] for r in live], matrix[live], new, anchors))
        if self.wants("promote"):
            for memory in sorted(episodes, key=_chronological):
                if memory.id in active and memory.id not in self.promoted and self.read_often(memory):
                    self.promote_single(memory)
        # An episode still waiting in the window is kept for the next pass, not archived in this one:
        # archiving it would change what the next pass clusters (docs/reflect.md, "Running again").
        self.waiting = new - consolidated

    def unrelated(self, members: Sequence[Memory]) -> np.ndarray:
        """Pairs that share too few words to be one topic, for a script the model does not embed by meaning."""
        units = [lexical_units(m.content) for m in members]
        floor = self.settings.lexical_min_shared
        return np.array([[shared_fraction(a, b) < floor for b in units] for a in units], dtype=bool)

    def is_new(self, memory: Memory) -> bool:
        return (
            memory.occurred_at >= self.since and not {SUMMARIZED_KEY, PROMOTED_KEY, USED_KEY} & memory.metadata.keys()
        )

    def consolidate_cluster(
        self, cluster: list[Memory], matrix: np.ndarray, new: set[str], anchors: Sequence[Memory] = ()
    ) -> set[str]:
        """Promote the cluster, or summarize its new members; returns the ids it consolidated.

        `anchors` are the cluster's members that are no longer active: a promotion marks them too,
        so that the whole cluster leaves the next pass's pool.
        """
        recurrence = find_recurrence(cluster, matrix, self.settings.promote_min_agreement)
        recurring = recurrence is not None and (
            recurrence.sessions >= self.settings.promote_min_sessions
            or len(recurrence.days) >= self.settings.promote_min_days
        )
        substantial = float(np.median([len(m.content.split()) for m in cluster])) >= self.settings.promote_min_words
        if self.wants("promote") and recurrence is not None and recurring and substantial:
            stating = {row for row, member in enumerate(cluster) if states_something(member)}
            whole = tuple(sorted(stating.union(recurrence.rows)))
            view = replace(_view(cluster, matrix), lead=recurrence.rows, whole=whole)
            where = _common_path([m.path for m in cluster])
            reason = f"{recurrence.describe()}; {len(cluster)} memories on it, filed under {where}"
            made = self.derive("promote", view, MemoryType.SEMANTIC, "Recurring topic", reason, anchors)
            return {m.id for m in cluster} if made else set()
        rows = [i for i, m in enumerate(cluster) if m.id in new]
        if self.wants("summarize") and len(rows) >= self.settings.min_cluster_size:
            fresh = _view([cluster[i] for i in rows], matrix[rows])
            reason = f"{len(rows)} memories within cosine distance {self.settings.cluster_max_distance} of each other"
            made = self.derive("summarize", fresh, MemoryType.EPISODIC, "Summary", reason)
            return {cluster[i].id for i in rows} if made else set()
        return set()

    def derive(
        self,
        action: str,
        view: ClusterView,
        memory_type: MemoryType,
        kind: str,
        reason: str,
        anchors: Sequence[Memory] = (),
    ) -> bool:
        members = [self.current(m) for m in view.members]
        content = self.summarizer.summarize(view, heading=heading_for(kind, view))
        made = self.new_memory(
            action,
            members,
            content,
            memory_type,
            {
                "summarizer": self.summarizer.name,
                "sessions": view.sessions,
                "days": len(view.days),
            },
        )
        marks = {SUMMARIZED_KEY: made.id} if action == "summarize" else {PROMOTED_KEY: made.id}
        pairs: list[tuple[Memory | None, Memory]] = [(None, made)]
        pairs += [
            (m, self.bump(m, metadata={SUMMARIZED_KEY: made.id, **m.metadata, **marks, **_carried(made, m)}))
            for m in members
        ]
        pairs += [
            (a, self.bump(a, metadata={**a.metadata, PROMOTED_KEY: made.id}))
            for a in (self.current(anchor) for anchor in anchors)
        ]
        recorded = self.record(
            action,
            reason,
            pairs,
            {
                "id": made.id,
                "type": made.type.value,
                "path": made.path,
                "content": made.content,
                "derived_from": list(made.derived_from),
                "members": len(members),
                "sessions": view.sessions,
                "days": len(view.days),
            },
        )
        if recorded and action == "promote":
            self.promoted.update(m.id for m in members)
        return recorded

    def read_often(self, memory: Memory) -> bool:
        """Used, not merely ranked: fetched by id at least `promote_min_access` times and read for at
        least `promote_min_questions` distinct questions (engine/read_tracking.py)."""
        return (
            USED_KEY not in memory.metadata
            and PROMOTED_KEY not in memory.metadata
            and memory.access_count >= self.settings.promote_min_access
            and self.questions.get(memory.id, 0) >= self.settings.promote_min_questions
        )

    def promote_single(self, memory: Memory) -> None:
        member = self.current(memory)
        questions = self.questions.get(member.id, 0)
        made = self.new_memory(
            "promote",
            [member],
            member.content,
            MemoryType.SEMANTIC,
            {"reads": member.access_count, "questions": questions},
        )
        reason = (
            f"fetched {member.access_count} times (at least {self.settings.promote_min_access}) and read for "
            f"{questions} distinct questions (at least {self.settings.promote_min_questions})"
        )
        marked = self.bump(member, metadata={**member.metadata, USED_KEY: made.id, CARRIED_KEY: made.id})
        self.record(
            "promote",
            reason,
            [(None, made), (member, marked)],
            {
                "id": made.id,
                "type": made.type.value,
                "path": made.path,
                "content": made.content,
                "derived_from": [member.id],
                "members": 1,
                "reads": member.access_count,
                "questions": questions,
            },
        )

    def new_memory(
        self, action: str, members: Sequence[Memory], content: str, memory_type: MemoryType, extra: dict[str, Any]
    ) -> Memory:
        first = members[0]
        ordered = sorted(members, key=_chronological)
        return Memory(
            id=str(uuid.uuid5(_IDS, f"{action}:{','.join(sorted(m.id for m in members))}")),
            owner_id=self.options.filters.owner_id,
            team_id=first.team_id,
            bucket=first.bucket,
            scope=first.scope,
            path=_common_path([m.path for m in members]),
            type=memory_type,
            content=content,
            content_sha256=text_sha256(content),
            importance=max(m.importance for m in members),
            confidence=round(sum(m.confidence for m in members) / len(members), 4),
            source="reflect",
            metadata={"reflect": action, "plan_id": self.plan_id, **extra},
            created_at=self.stamp,
            updated_at=self.stamp,
            occurred_at=ordered[-1].occurred_at,
            derived_from=tuple(m.id for m in ordered),
            speaker=first.speaker if len({m.speaker for m in members}) == 1 else None,
        )

    # -- decay and archive --------------------------------------------------------------------

    def age(self, stalest: Sequence[Memory]) -> None:
        if not (self.wants("decay") or self.wants("archive")):
            return
        self.candidates["lifecycle"] = len(stalest)
        for planned in stalest:
            memory = self.current(planned)
            if memory.status != MemoryStatus.ACTIVE or memory.id in self.expired or is_protected(memory, self.settings):
                continue
            idle = round(idle_days(memory, self.now), 2)
            target = decayed_importance(memory, self.now, self.settings)
            if self.wants("decay") and target <= memory.importance - self.settings.decay_min_change:
                after = self.bump(
                    memory, importance=target, metadata={**memory.metadata, BASE_KEY: base_importance(memory)}
                )
                if self.record(
                    "decay",
                    f"unused for {idle} days (half-life {self.settings.decay_half_life_days} days)",
                    [(memory, after)],
                    {
                        "id": memory.id,
                        "importance_before": memory.importance,
                        "importance_after": target,
                        "idle_days": idle,
                    },
                ):
                    memory = after
            if (
                self.wants("archive")
                and memory.id not in self.waiting
                and CARRIED_KEY in memory.metadata
                and should_archive(memory, self.now, self.settings)
            ):
                after = self.bump(memory, status=MemoryStatus.ARCHIVED)
                self.record(
                    "archive",
                    f"importance {target} < {self.settings.archive_importance} after {idle} idle days",
                    [(memory, after)],
                    {"id": memory.id, "importance": target, "idle_days": idle},
                )


def _carried(made: Memory, member: Memory) -> dict[str, str]:
    """The CARRIED_KEY mark when `made` holds all of the member's words."""
    return {CARRIED_KEY: made.id} if normalise(member.content) in normalise(made.content) else {}


def _chronological(memory: Memory) -> tuple[str, str]:
    return (memory.occurred_at, memory.id)


def _by_space(memories: Sequence[Memory]) -> list[tuple[str, list[Memory]]]:
    """Episodes grouped by the boundaries a summary may not cross (team, bucket, scope, and the script
    the memory is written in: scripts.py), each group with its script and in time order."""
    spaces: dict[tuple[str, str, str, str], list[Memory]] = {}
    for memory in memories:
        key = (memory.team_id or "", memory.bucket, memory.scope, script_of(memory.content))
        spaces.setdefault(key, []).append(memory)
    return [(key[3], sorted(spaces[key], key=_chronological)) for key in sorted(spaces)]


def _view(cluster: Sequence[Memory], matrix: np.ndarray) -> ClusterView:
    sessions = {m.session_id for m in cluster if m.session_id}
    days = tuple(sorted({m.occurred_at[:10] for m in cluster}))
    return ClusterView(tuple(cluster), matrix, max(len(sessions), 1), days)


def _common_path(paths: Sequence[str]) -> str:
    """The longest path every member lies under, by whole `/` segments ("/" when they share none).

    A summary filed under its members' common folder is found by every `path_filter` that finds all of
    its members, and never under a folder one of them is not in.
    """
    split = [[segment for segment in path.split("/") if segment] for path in paths]
    common: list[str] = []
    for segments in zip(*split, strict=False):
        if len(set(segments)) != 1:
            break
        common.append(segments[0])
    rooted = all(path.startswith("/") for path in paths)
    if not common:
        return "/"
    return ("/" if rooted else "") + "/".join(common)
