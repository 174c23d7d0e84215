"""The reflect use case: validate, read a snapshot, plan, and (unless a dry run) apply with audit."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from retrieval import MemoryEngine, Principal

from .apply import apply_plan
from .options import ReflectRequest, resolve_options
from .plan import Plan, plan_reflection
from .report import build_report
from .selection import read_snapshot
from .settings import ReflectSettings
from .summarizer import ExtractiveSummarizer, Summarizer

__all__ = ["actor_of", "prepare_plan", "reflect"]


def default_summarizer(engine: MemoryEngine, settings: ReflectSettings) -> Summarizer:
    return ExtractiveSummarizer(engine.tokens, settings.summary_max_sentences, settings.summary_max_tokens,
                                settings.summary_diversity)


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
    engine.access.flush()  # plan on the read counts and times served so far
    snapshot = read_snapshot(engine, options, now, timedelta(days=settings.recurrence_lookback_days))
    return plan_reflection(snapshot, options, settings, summarizer or default_summarizer(engine, settings), now)


def reflect(
    engine: MemoryEngine,
    principal: Principal,
    request: ReflectRequest,
    settings: ReflectSettings | None = None,
    summarizer: Summarizer | None = None,
) -> dict[str, Any]:
    """Run one pass and return its report; a dry run writes nothing."""
    plan = prepare_plan(engine, principal, request, settings, summarizer)
    audit_ids = [] if request.dry_run else apply_plan(engine, plan, actor_of(principal))
    return build_report(plan, audit_ids, dry_run=request.dry_run, with_content="memory:read" in principal.scopes)
