"""The lifecycle evaluation: replay LoCoMo conversations session by session, with and without reflect,
then ask every question through the production `recall_context` and compare the two arms.

Each session is imported at its own date (the clock follows the replay); in the reflected arm a real
`reflect` pass with the default request (all five actions, the default window: what the background
pass runs) follows each session, an hour later. After the replay every question of categories 1-4 is
asked at max_items 50 and two token budgets: 1500 (the arms' main figures) and 600 (`tight`), where a
summary's compression would show first. An item *covers* an evidence turn when it is that turn's
memory, or a memory made by reflect with the turn among its members, and the text the pack shows for
it holds every sentence of the turn: a turn the packer shortened, or a summary line the pack left
out, covers nothing. Neither `derived_from` nor a memory's stored text alone ever counts: until this
was so, a summary shown with two of its lines was credited with all of them. A pack *holds a
duplicate* when two of the memories it shows (a group's members, not the stored text of the summary
that heads them) say the same thing.
"""

from __future__ import annotations

import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np
from tqdm import tqdm

from compactor import ReflectRequest, ReflectSettings, reflect
from retrieval import (
    Memory,
    MemoryEngine,
    MemoryStatus,
    Principal,
    RecallRequest,
    RetrievalSettings,
    import_records,
    prepare_read,
    recall_context,
)
from retrieval.domain import carries, normalise, parse_time

from .datasets import Dataset, Doc, Observation, Query
from .report import check_floors
from .runner import DEFAULT_CACHE

__all__ = ["DUPLICATE_COSINE", "PACK_ITEMS", "PACK_TOKENS", "TIGHT_TOKENS", "evaluate_lifecycle", "lifecycle_checks"]

PACK_TOKENS, TIGHT_TOKENS, PACK_ITEMS = 1500, 600, 50
BETTER_BY = 0.02  # how much more often the reflected pack must hold all of a question's evidence
DUPLICATE_COSINE = 0.95  # two items this close say the same thing (the definition)
REFLECT_AFTER = timedelta(hours=1)  # the background pass runs within the hour after a session
CATEGORIES = {1, 2, 3, 4}
_NAMESPACE = uuid.UUID("3d0f8a4e-8a43-4d55-9a8e-52f8d3f7e0c1")


def _memory_id(doc_id: str) -> str:
    return str(uuid.uuid5(_NAMESPACE, doc_id))


@dataclass(frozen=True, slots=True)
class _Session:
    group: str
    session_id: str
    when: datetime
    docs: tuple[Doc, ...]


def _sessions(dataset: Dataset) -> list[_Session]:
    """Every conversation's sessions, merged into one timeline so the clock only moves forward."""
    grouped: dict[tuple[str, str], list[Doc]] = {}
    for doc in dataset.docs:
        grouped.setdefault((doc.group, doc.session_id or doc.group), []).append(doc)
    sessions = [_Session(g, s, parse_time(docs[0].occurred_at), tuple(docs)) for (g, s), docs in grouped.items()]
    return sorted(sessions, key=lambda s: (s.when, s.group, s.session_id))


class _Clock:
    def __init__(self, moment: datetime) -> None:
        self.moment = moment

    def __call__(self) -> datetime:
        return self.moment


@dataclass
class _Arm:
    """What one arm's replay left: the engine's final records, the packs, and reflect's totals."""

    name: str
    # max_tokens -> question id -> packed memory ids, in order; the text shown for each; the memories
    # shown (a group's members in place of its holder); the tokens used
    packs: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    blocks: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    shown: dict[int, dict[str, list[str]]] = field(default_factory=dict)
    tokens: dict[int, dict[str, int]] = field(default_factory=dict)
    records: dict[str, Memory] = field(default_factory=dict)
    vectors: dict[str, np.ndarray] = field(default_factory=dict)
    totals: Counter[str] = field(default_factory=Counter)
    collapsed: Counter[int] = field(default_factory=Counter)
    after_questions: dict[str, int] = field(default_factory=dict)


class _Coverage:
    """Which evidence turns a memory covers, under the module docstring's definition."""

    def __init__(self, docs: Iterable[Doc]) -> None:
        self.doc_of = {_memory_id(d.id): d.id for d in docs}
        self.turn_text = {d.id: d.text for d in docs}
        self._cache: dict[str, frozenset[str]] = {}

    def shown(self, memory: Memory, block: str) -> frozenset[str]:
        """The turns an item covers: those `covers` finds in the memory whose words `block`, the text the
        pack shows for it, holds whole."""
        return frozenset(doc for doc in self.covers(memory) if carries(block, self.turn_text[doc]))

    def covers(self, memory: Memory) -> frozenset[str]:
        """The turns a memory stands for: its own, or the members its stored text carries."""
        if memory.id in self._cache:
            return self._cache[memory.id]
        own = self.doc_of.get(memory.id)
        if own is not None:
            found = frozenset({own})
        else:
            found = frozenset(
                doc
                for doc in (self.doc_of.get(m) for m in memory.derived_from)
                if doc is not None and carries(memory.content, self.turn_text[doc])
            )
        self._cache[memory.id] = found
        return found


def _replay(
    dataset: Dataset, sessions: Sequence[_Session], reflected: bool, cache_path: Path, settings: ReflectSettings
) -> _Arm:
    arm = _Arm("reflected" if reflected else "baseline")
    clock = _Clock(sessions[0].when)
    with tempfile.TemporaryDirectory(prefix="xmemo-lifecycle-") as tmp:
        config = RetrievalSettings(data_dir=Path(tmp), embedding_cache_path=cache_path.resolve())
        with MemoryEngine(config, clock=clock) as engine:
            for session in tqdm(sessions, desc=f"replay {arm.name}", unit="session", file=sys.stderr, disable=None):
                clock.moment = max(clock.moment, session.when)  # a pass of the session before may run later
                owner = Principal.local(session.group)
                import_records(engine, owner, [_line(doc) for doc in session.docs])
                if reflected:
                    clock.moment = max(clock.moment, session.when + REFLECT_AFTER)
                    report = reflect(engine, owner, ReflectRequest(), settings)
                    arm.totals.update(report.counts)
            clock.moment = sessions[-1].when + timedelta(days=1)
            _ask(engine, dataset, arm)
            if reflected:
                arm.after_questions = _promotions_after_questions(engine, dataset, settings)
            arm.records = {m.id: m for m in engine.store.iterate()}
            arm.vectors = engine.index.dense_vectors(list(arm.records))
    return arm


def _line(doc: Doc) -> dict[str, Any]:
    return {
        "id": _memory_id(doc.id),
        "content": doc.text,
        "path": "locomo/dialogue",
        "type": "episodic",
        "occurred_at": doc.occurred_at,
        "session_id": doc.session_id,
        "speaker": doc.speaker,
    }


def _questions(dataset: Dataset) -> list[Query]:
    return [q for q in dataset.queries if q.relevant and q.category in CATEGORIES]


def _ask(engine: MemoryEngine, dataset: Dataset, arm: _Arm) -> None:
    for query in tqdm(_questions(dataset), desc=f"ask {arm.name}", unit="q", file=sys.stderr, disable=None):
        for budget in (PACK_TOKENS, TIGHT_TOKENS):
            asked = RecallRequest(query=query.text, max_items=PACK_ITEMS, max_tokens=budget)
            pack = recall_context(engine, prepare_read(engine, Principal(owner_id=query.group), asked))
            arm.packs.setdefault(budget, {})[query.id] = [item.id for item in pack.items]
            arm.blocks.setdefault(budget, {})[query.id] = list(pack.blocks)
            folded: dict[str, list[str]] = {}
            for c in pack.retrieval_plan.collapsed:
                if c.reason == "grouped":
                    folded.setdefault(c.into, []).append(c.id)
            arm.shown.setdefault(budget, {})[query.id] = [m for i in pack.items for m in folded.get(i.id, [i.id])]
            arm.tokens.setdefault(budget, {})[query.id] = pack.budget.used_tokens
            arm.collapsed[budget] += len(pack.retrieval_plan.collapsed)


def _promotions_after_questions(engine: MemoryEngine, dataset: Dataset, settings: ReflectSettings) -> dict[str, int]:
    """A dry run per conversation after the questions: how many promotions their reads would earn."""
    promoted = Counter[str]()
    for group in sorted({q.group for q in _questions(dataset)}):
        report = reflect(engine, Principal.local(group), ReflectRequest(dry_run=True, actions_csv="promote"), settings)
        promoted["by_reads"] += sum(1 for p in report.promotions if p.get("members") == 1 and "reads" in p)
        promoted["all"] += report.counts["promoted"]
    return dict(promoted)


def _arm_scores(arm: _Arm, dataset: Dataset, coverage: _Coverage, budget: int = PACK_TOKENS) -> dict[str, Any]:
    questions = _questions(dataset)
    packs, tokens = arm.packs[budget], arm.tokens[budget]
    recall = {5: 0.0, 10: 0.0}
    complete = duplicates = 0
    for query in questions:
        evidence = set(query.relevant)
        packed = [arm.records[i] for i in packs[query.id]]
        shown = [coverage.shown(m, block) for m, block in zip(packed, arm.blocks[budget][query.id], strict=True)]
        for k in recall:
            covered = set().union(*shown[:k]) if shown else set()
            recall[k] += len(evidence & covered) / len(evidence)
        everything = set().union(*shown) if shown else set()
        complete += evidence <= everything
        duplicates += _has_duplicate([arm.records[i] for i in arm.shown[budget][query.id]], arm.vectors)
    count = len(questions)
    return {
        "queries": count,
        "recall@5": round(recall[5] / count, 4),
        "recall@10": round(recall[10] / count, 4),
        "pack_coverage": round(complete / count, 4),
        "duplicate_rate": round(duplicates / count, 4),
        "mean_used_tokens": round(sum(tokens.values()) / count, 1),
        "collapsed_items": arm.collapsed[budget],
    }


def _has_duplicate(packed: Sequence[Memory], vectors: dict[str, np.ndarray]) -> bool:
    """Whether two of the memories a pack shows say the same thing: one's words inside the other's, or
    vectors at least DUPLICATE_COSINE apart. A group is its members, each shown once under its header."""
    texts = [normalise(m.content) for m in packed]
    for i in range(len(texts)):
        for j in range(i + 1, len(texts)):
            if texts[i] in texts[j] or texts[j] in texts[i]:
                return True
    rows = [vectors[m.id] for m in packed if m.id in vectors]
    if len(rows) < 2:
        return False
    unit = np.stack(rows) / np.linalg.norm(np.stack(rows), axis=1, keepdims=True)
    similarity = unit @ unit.T
    np.fill_diagonal(similarity, -1.0)
    return bool(similarity.max() >= DUPLICATE_COSINE)


def _reflect_quality(arm: _Arm, dataset: Dataset, coverage: _Coverage) -> dict[str, Any]:
    """Archived evidence, summary compression, and promotions against the annotated observations."""
    evidence = {doc for q in _questions(dataset) for doc in q.relevant}
    made = [m for m in arm.records.values() if m.source == "reflect" and m.status == MemoryStatus.ACTIVE]
    carried = set().union(*(coverage.covers(m) for m in made)) if made else set()
    archived = {
        coverage.doc_of[m.id]
        for m in arm.records.values()
        if m.status == MemoryStatus.ARCHIVED and m.id in coverage.doc_of
    }
    return {
        "archived": len(archived),
        "archived_evidence": len(archived & evidence),
        "archived_evidence_not_carried": len((archived & evidence) - carried),
        "summaries": _compression(
            arm, [m for m in made if m.metadata.get("reflect") == "summarize"], evidence, coverage
        ),
        "promotions": _promotion_quality(
            [m for m in made if m.metadata.get("reflect") == "promote"], dataset, coverage
        ),
        "promotions_after_questions": arm.after_questions,
    }


def _compression(arm: _Arm, summaries: Sequence[Memory], evidence: set[str], coverage: _Coverage) -> dict[str, Any]:
    """Evidence turns per 1,000 characters: in the summaries' own text, and in their members'."""
    summary_chars = sum(len(m.content) for m in summaries)
    member_ids = {i for m in summaries for i in m.derived_from}
    member_chars = sum(len(arm.records[i].content) for i in member_ids if i in arm.records)
    in_summaries = {doc for m in summaries for doc in coverage.covers(m)} & evidence
    in_members = {coverage.doc_of[i] for i in member_ids if i in coverage.doc_of} & evidence
    return {
        "count": len(summaries),
        "evidence_per_kchar": round(1000 * len(in_summaries) / summary_chars, 3) if summary_chars else 0.0,
        "members_evidence_per_kchar": round(1000 * len(in_members) / member_chars, 3) if member_chars else 0.0,
        "chars": summary_chars,
        "member_chars": member_chars,
    }


def _promotion_quality(promotions: Sequence[Memory], dataset: Dataset, coverage: _Coverage) -> dict[str, Any]:
    """Precision: promotions carrying some annotated fact's evidence; recall: facts some promotion carries.
    By conversation too, with the counts, so that the halves of the conversations add up."""
    facts: list[Observation] = list(dataset.meta.get("observations", []))  # type: ignore[call-overload]
    by_turn: dict[str, list[int]] = {}
    for index, fact in enumerate(facts):
        for doc in fact.evidence:
            by_turn.setdefault(doc, []).append(index)
    hits = {memory.id: {i for doc in coverage.covers(memory) for i in by_turn.get(doc, [])} for memory in promotions}

    def scored(made: Sequence[Memory], observed: int) -> dict[str, Any]:
        carrying = sum(bool(hits[m.id]) for m in made)
        carried = len(set().union(*(hits[m.id] for m in made))) if made else 0
        return {
            "count": len(made),
            "carrying": carrying,
            "precision": round(carrying / len(made), 4) if made else 0.0,
            "carried": carried,
            "recall": round(carried / observed, 4) if observed else 0.0,
            "observations": observed,
        }

    conversation_of = {doc.id: doc.group for doc in dataset.docs}

    def group_of(memory: Memory) -> str:
        docs = sorted(coverage.doc_of[m] for m in memory.derived_from if m in coverage.doc_of)
        return conversation_of[docs[0]] if docs else ""

    groups = sorted({fact.group for fact in facts})
    return {
        **scored(promotions, len(facts)),
        "by_conversation": {
            g: scored([m for m in promotions if group_of(m) == g], sum(f.group == g for f in facts)) for g in groups
        },
    }


def _reads_by_definition(arm: _Arm, threshold: int) -> dict[str, int]:
    """Memories the questions would have promoted if reads alone counted: at `threshold` appearances in
    packs, or as the first item. None is promoted so: promotion for use needs fetches by id as well."""
    every, first = Counter[str](), Counter[str]()
    for ids in arm.packs[PACK_TOKENS].values():
        every.update(ids)
        first.update(ids[:1])
    return {
        "any_appearance": sum(1 for n in every.values() if n >= threshold),
        "first_item": sum(1 for n in first.values() if n >= threshold),
    }


def evaluate_lifecycle(
    dataset: Dataset, cache_path: Path = DEFAULT_CACHE, settings: ReflectSettings | None = None
) -> dict[str, Any]:
    """Both arms' scores, reflect's totals and the quality of what reflect made."""
    if dataset.kind != "locomo":
        raise ValueError(f"the lifecycle evaluation replays LoCoMo conversations, not {dataset.name}")
    settings = settings or ReflectSettings()
    started = time.perf_counter()
    sessions = _sessions(dataset)
    coverage = _Coverage(dataset.docs)
    baseline = _replay(dataset, sessions, False, cache_path, settings)
    reflected = _replay(dataset, sessions, True, cache_path, settings)
    totals = {
        name: reflected.totals.get(name, 0) for name in ("summarized", "promoted", "expired", "decayed", "archived")
    }
    return {
        "lifecycle": {
            "dataset": dataset.name,
            "sessions": len(sessions),
            "baseline": _arm_scores(baseline, dataset, coverage),
            "reflected": _arm_scores(reflected, dataset, coverage),
            "tight": {
                "max_tokens": TIGHT_TOKENS,
                "baseline": _arm_scores(baseline, dataset, coverage, TIGHT_TOKENS),
                "reflected": _arm_scores(reflected, dataset, coverage, TIGHT_TOKENS),
            },
            "reflect_totals": totals,
            "reflect_quality": _reflect_quality(reflected, dataset, coverage),
            "reads_reaching_promotion": _reads_by_definition(baseline, settings.promote_min_questions),
            "seconds": round(time.perf_counter() - started, 1),
        }
    }


def lifecycle_checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """What the lifecycle must show (OK or FAIL each): the reflected arm's recall@5 at least the
    baseline's, its pack holding all evidence BETTER_BY more often at both budgets, no pack holding the
    same words twice, reflect having made summaries and promotions, and the floors of
    `eval/expected_scores.json` under "<dataset>-lifecycle"."""
    base, reflected, totals = result["baseline"], result["reflected"], result["reflect_totals"]
    tight = result["tight"]
    rules = [
        ("reflected recall@5 >= baseline", reflected["recall@5"] >= base["recall@5"]),
        (
            f"reflected pack_coverage >= baseline + {BETTER_BY} at {PACK_TOKENS} tokens",
            reflected["pack_coverage"] >= base["pack_coverage"] + BETTER_BY,
        ),
        (
            f"reflected pack_coverage >= baseline + {BETTER_BY} at {TIGHT_TOKENS} tokens",
            tight["reflected"]["pack_coverage"] >= tight["baseline"]["pack_coverage"] + BETTER_BY,
        ),
        ("duplicate_rate is 0 in both arms", base["duplicate_rate"] == reflected["duplicate_rate"] == 0),
        ("reflect made summaries and promotions", totals["summarized"] > 0 and totals["promoted"] > 0),
    ]
    checks = [{"check": name, "status": "OK" if held else "FAIL"} for name, held in rules]
    floors = check_floors(
        {
            "dataset": f"{result['dataset']}-lifecycle",
            "strategies": {
                "baseline": base,
                "reflected": reflected,
                "promotions": result["reflect_quality"]["promotions"],
            },
        }
    )
    checks += [
        {"check": f"{c['strategy']} {c['metric']} {c['score']} >= {c['floor']}", "status": c["status"]} for c in floors
    ]
    return checks
