"""The reflect use case: validate, read a snapshot, plan, and (unless a dry run) apply with audit."""

from __future__ import annotations

import re
from datetime import timedelta
from typing import Any

from retrieval import ConflictError, MemoryEngine, Principal, ValidationError
from retrieval.domain import READ

from .apply import apply_plan
from .options import ReflectRequest, resolve_options
from .plan import Plan, plan_reflection
from .report import PLAN_DIGEST_PATTERN, build_report, plan_digest
from .selection import read_snapshot
from .settings import ReflectSettings
from .summarizer import ExtractiveSummarizer, Summarizer

__all__ = ["actor_of", "prepare_plan", "reflect"]


def default_summarizer(engine: MemoryEngine, settings: ReflectSettings) -> Summarizer:
    return ExtractiveSummarizer(
        engine.tokens, settings.summary_max_sentences, settings.summary_max_tokens, settings.summary_diversity
    )


def actor_of(principal: Principal) -> str:
    return f"{principal.owner_id}/{principal.agent_id}" if principal.agent_id else principal.owner_id


def prepare_plan(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None = None,
    summarizer: Summarizer | None = None,
) -> Plan:
    """Validate and authorise the request, then plan on a snapshot taken at `engine.clock()`."""
    settings = settings or ReflectSettings()
    now = engine.clock()
    options = resolve_options(principal, request, now)
    engine.read_tracker.flush()  # plan on the read counts and times served so far
    snapshot = read_snapshot(engine, options, now, timedelta(days=settings.recurrence_lookback_days))
    return plan_reflection(snapshot, options, settings, summarizer or default_summarizer(engine, settings), now)


def reflect(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None = None,
    summarizer: Summarizer | None = None,
    *,
    expected_plan: str | None = None,
) -> dict[str, Any]:
    """Run one pass and return its report; a dry run writes nothing.

    `expected_plan` is the `plan_digest` of a reviewed dry run: the pass plans again and, when the
    new plan's digest differs (a memory changed since the review, or a change came or went), fails
    with ConflictError before writing anything, so that what is applied is what was reviewed.
    """
    if expected_plan is not None and not re.fullmatch(PLAN_DIGEST_PATTERN, expected_plan):
        raise ValidationError("expected_plan must be the plan_digest of a dry run (64 hex digits)")
    plan = prepare_plan(engine, principal, request, settings, summarizer)
    if expected_plan is not None and plan_digest(plan) != expected_plan:
        raise ConflictError(
            "the memories changed since the plan was reviewed: planning again gives another plan "
            f"(digest {plan_digest(plan)[:12]}, reviewed {expected_plan[:12]}); nothing was written. "
            "Run the dry run again and review it."
        )
    audit_ids = [] if request.dry_run else apply_plan(engine, plan, actor_of(principal))
    return build_report(plan, audit_ids, dry_run=request.dry_run, with_content=READ in principal.scopes)
