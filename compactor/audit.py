"""The audit records of reflect: one per applied change, with before and after values; listed per tenant."""

from __future__ import annotations

from typing import Any

from retrieval import MemoryEngine, Principal, ValidationError
from retrieval.domain import READ, check_range, format_time, optional_time, require
from retrieval.storage import AuditRecord, audit_records, audit_row, changed_values

from .options import ACTION_ALIASES, ACTIONS
from .plan import Change, Plan

__all__ = ["AUDIT_ACTIONS", "MAX_AUDIT_LIMIT", "audit_actions", "audit_rows", "list_audit"]

# What the audit log records: the changes of people and agents, then reflect's five.
RECORD_ACTIONS = ("create", "edit", "archive", "restore", "forget")
AUDIT_ACTIONS = RECORD_ACTIONS + tuple(a for a in ACTIONS if a not in RECORD_ACTIONS)


def audit_actions(action_csv: str) -> tuple[str, ...]:
    """Comma-separated audit actions (reflect's aliases too) in canonical order; anything else is a 422."""
    chosen: set[str] = set()
    for raw in action_csv.split(","):
        name = ACTION_ALIASES.get(raw.strip().lower(), raw.strip().lower())
        if not name:
            continue
        if name not in AUDIT_ACTIONS:
            raise ValidationError(
                f"unknown audit action {raw.strip()[:40]!r}; the log records {', '.join(AUDIT_ACTIONS)}"
            )
        chosen.add(name)
    return tuple(a for a in AUDIT_ACTIONS if a in chosen)


MAX_AUDIT_LIMIT = 1000


def audit_rows(plan: Plan, actor: str) -> list[dict[str, Any]]:
    """One audit record per change of `plan`, in order (apply_plan's unit of work writes them): the
    changed fields before and after, by memory id, as the management use cases record theirs."""
    return [_audit_row(change, plan, actor) for change in plan.changes]


def _audit_row(change: Change, plan: Plan, actor: str) -> dict[str, Any]:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for old, new in change.pairs:
        before[new.id], after[new.id] = changed_values(old, new)
    owner = (plan.options.filters.owner_id, plan.options.filters.team_id)
    return audit_row(
        change.action, actor, format_time(plan.now), owner, (before, after), change.reason, plan_id=plan.plan_id
    )


def list_audit(
    engine: MemoryEngine,
    principal: Principal,
    *,
    since: str | None = None,
    until: str | None = None,
    action: str | None = None,
    limit: int = 100,
) -> list[AuditRecord]:
    """Audit records of the caller's own space and its teams, newest first (needs memory:read).

    `since`/`until` are ISO 8601 bounds on when the record was written; `action` takes audit actions
    (AUDIT_ACTIONS, and reflect's aliases), comma-separated."""
    require(principal, READ)
    since, until = optional_time(since, "since"), optional_time(until, "until")
    actions = audit_actions(action) if action else None
    limit = check_range(limit, "limit", 1, MAX_AUDIT_LIMIT)
    with engine.store.reading() as connection:
        return audit_records(connection, principal, actions=tuple(actions or ()), since=since, until=until, limit=limit)
