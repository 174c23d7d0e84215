"""The reflect use case: validate, read a snapshot, plan, and (unless a dry run) apply with audit."""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import replace
from datetime import timedelta

from retrieval import ConflictError, MemoryEngine, Principal, ValidationError
from retrieval.domain import READ
from retrieval.storage import actor_of

from .apply import apply_plan
from .audit import held_proposals
from .options import ReflectRequest, resolve_options
from .plan import PROPOSAL_PATTERN, Declined, Plan, plan_reflection
from .reflect_report import PLAN_DIGEST_PATTERN, ReflectReport, build_report, plan_digest
from .selection import read_snapshot
from .settings import ReflectSettings
from .summarizer import ExtractiveSummarizer, Summarizer

__all__ = ["MAX_EXCLUDE", "check_exclude", "prepare_plan", "reflect"]

MAX_EXCLUDE = 5000  # as many proposals as a pass of the largest limit can make


def default_summarizer(engine: MemoryEngine, settings: ReflectSettings) -> Summarizer:
    return ExtractiveSummarizer(
        engine.tokens,
        settings.summary_max_sentences,
        settings.summary_max_tokens,
        settings.summary_diversity,
        settings.promotion_max_tokens,
    )


def prepare_plan(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None = None,
    summarizer: Summarizer | None = None,
    exclude: Collection[str] = (),
    *,
    reconsider: bool = False,
) -> Plan:
    """Validate and authorise the request, then plan on a snapshot taken at `engine.clock()`."""
    return _plans(engine, principal, request, settings, summarizer, check_exclude(exclude), reconsider)[-1]


def _plans(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None,
    summarizer: Summarizer | None,
    exclude: frozenset[str],
    reconsider: bool = False,
) -> list[Plan]:
    """The whole plan, then (when proposals are excluded) the plan without them, on one snapshot; both
    leave out the proposals earlier reviews turned down, unless `reconsider` clears those."""
    settings = settings or ReflectSettings()
    now = engine.clock()
    options = resolve_options(principal, request, now)
    engine.read_tracker.flush()  # plan on the read counts and times served so far
    snapshot = read_snapshot(engine, options, now, timedelta(days=settings.recurrence_lookback_days))
    summarizer = summarizer or default_summarizer(engine, settings)
    held = {} if reconsider else held_proposals(engine)
    plans = [plan_reflection(snapshot, options, settings, summarizer, now, held=held, reconsidered=reconsider)]
    if exclude:
        plans.append(
            plan_reflection(snapshot, options, settings, summarizer, now, exclude, held, reconsidered=reconsider)
        )
    return plans


def check_exclude(exclude: Collection[str] | None) -> frozenset[str]:
    """Proposal ids as a dry run's report names them; anything else is a ValidationError."""
    if exclude is None:
        return frozenset()
    if isinstance(exclude, str) or not isinstance(exclude, Collection):
        raise ValidationError("exclude must be a list of proposal ids from a dry run")
    if len(exclude) > MAX_EXCLUDE:
        raise ValidationError(f"exclude takes at most {MAX_EXCLUDE} proposal ids")
    for proposal in exclude:
        if not isinstance(proposal, str) or not re.fullmatch(PROPOSAL_PATTERN, proposal):
            raise ValidationError(
                f"exclude takes proposal ids such as 'summarize-3fa29c81d2e4' (the proposal_id of a dry run's "
                f"entries); got {str(proposal)[:80]!r}"
            )
    return frozenset(exclude)


def reflect(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None = None,
    summarizer: Summarizer | None = None,
    *,
    expected_plan: str | None = None,
    exclude: Collection[str] | None = None,
    reconsider: bool = False,
) -> ReflectReport:
    """Run one pass and return its report; a dry run writes nothing.

    `expected_plan` is the `plan_digest` of a reviewed dry run: the pass plans again and, when the
    new plan's digest differs (a memory changed since the review, or a change came or went), fails
    with ConflictError before writing anything, so that what is applied is what was reviewed.

    `exclude` names proposals of that dry run (their `proposal_id`) the reviewer turned down: the
    pass applies exactly the others. When an id is not a proposal of the plan, or leaving those out
    changes another proposal (an archive that relied on an excluded summary carrying its words), it
    fails with ConflictError and writes nothing. A dry run with `exclude` shows what would be applied.
    A real run records each excluded proposal as turned down: later passes hold it back (the report's
    `held_back`) until one of its memories changes or another joins. `reconsider` clears those refusals
    (a real run records the clearing) and plans as if none had been made.
    """
    if expected_plan is not None and not re.fullmatch(PLAN_DIGEST_PATTERN, expected_plan):
        raise ValidationError("expected_plan must be the plan_digest of a dry run (64 hex digits)")
    excluded = check_exclude(exclude)
    plans = _plans(engine, principal, request, settings, summarizer, excluded, reconsider)
    whole, plan = plans[0], plans[-1]
    if expected_plan is not None and plan_digest(whole) != expected_plan:
        raise ConflictError(
            "the memories changed since the plan was reviewed: planning again gives another plan "
            f"(digest {plan_digest(whole)[:12]}, reviewed {expected_plan[:12]}); nothing was written. "
            "Run the dry run again and review it."
        )
    if excluded:
        _check_the_rest(whole, plan, excluded)
        plan = replace(plan, declined=_declined(whole, excluded))
    audit_ids = [] if request.dry_run else apply_plan(engine, plan, actor_of(principal))
    report = build_report(plan, audit_ids, dry_run=request.dry_run, with_content=READ in principal.scopes)
    if excluded:
        # The digest a reviewer passes is the whole plan's; each excluded id is one of its proposals
        # (_check_the_rest).
        report = replace(report, plan_digest=plan_digest(whole), excluded=tuple(sorted(excluded)))
    return report


def _declined(whole: Plan, excluded: frozenset[str]) -> tuple[Declined, ...]:
    """The reviewed plan's proposals the reviewer turned down, each with its members at the versions it
    was planned on."""
    return tuple(
        Declined(c.proposal_id, c.action, tuple(sorted((b.id, b.version) for b, _ in c.pairs if b is not None)))
        for c in whole.changes
        if c.proposal_id in excluded
    )


def _check_the_rest(whole: Plan, plan: Plan, excluded: frozenset[str]) -> None:
    """The plan without the excluded proposals must be exactly the others, each as reviewed."""
    proposals = {c.proposal_id for c in whole.changes}
    unknown = sorted(excluded - proposals)
    if unknown:
        raise ConflictError(
            f"no proposal {', '.join(unknown[:3])} in the plan: the memories changed since the dry run, or the id "
            "is from another one; nothing was written. Run the dry run again and review it."
        )
    wanted = {c.proposal_id: c for c in whole.changes if c.proposal_id not in excluded}
    kept = {c.proposal_id: c for c in plan.changes}
    # What a proposal does is its detail (the memory made, the importance set); the versions it plans on
    # may differ, as a member of an excluded summary is not marked as summarized before it decays.
    moved = sorted(
        p for p in wanted.keys() | kept.keys() if p not in kept or p not in wanted or kept[p].detail != wanted[p].detail
    )
    if moved:
        raise ConflictError(
            f"leaving out {', '.join(sorted(excluded)[:3])} changes other proposals ({', '.join(moved[:3])}), "
            "which follow from it; nothing was written. Exclude those too, or review the dry run again."
        )
