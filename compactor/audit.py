"""The audit records of reflect: one per applied change, with before and after values; listed per tenant."""

from __future__ import annotations

from typing import Any

from retrieval import MemoryEngine, Principal, ValidationError
from retrieval.domain import READ, check_range, format_time, optional_time, require
from retrieval.storage import AuditRecord, audit_records, audit_row, audit_trail, changed_values

from .options import ACTION_ALIASES, ACTIONS
from .plan import Change, Declined, Plan

__all__ = [
    "AUDIT_ACTIONS",
    "MAX_AUDIT_LIMIT",
    "audit_actions",
    "audit_rows",
    "held_proposals",
    "list_audit",
    "review_rows",
]

# What the audit log records: the changes of people and agents, then reflect's five, then a reviewer's
# "no" to a proposal (decline: not proposed again until a member changes or one joins) and its clearing.
RECORD_ACTIONS = ("create", "edit", "supersede", "archive", "restore", "forget")
REVIEW_ACTIONS = ("decline", "reconsider")
AUDIT_ACTIONS = RECORD_ACTIONS + tuple(a for a in ACTIONS if a not in RECORD_ACTIONS) + REVIEW_ACTIONS
DECLINED_WHY = "turned down by the reviewer; proposed again when one of its memories changes or another joins"
RECONSIDERED_WHY = "the proposals turned down before were cleared; the next passes may propose them again"
MAX_HELD = 10_000  # review records read per pass: the newest, which are the ones that can still hold


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


def review_rows(plan: Plan, actor: str) -> list[dict[str, Any]]:
    """The review's records, written with the plan's changes: a clearing of the earlier refusals when the
    pass reconsidered them, then one decline per proposal the reviewer turned down, naming its members
    at the versions it was planned on."""
    owner = (plan.options.filters.owner_id, plan.options.filters.team_id)
    now = format_time(plan.now)
    rows: list[dict[str, Any]] = []
    if plan.reconsidered:
        rows.append(audit_row("reconsider", actor, now, owner, ({}, {}), RECONSIDERED_WHY, plan.plan_id))
    for declined in plan.declined:
        after = {
            member: {"version": version, "proposal_id": declined.proposal_id, "action": declined.action}
            for member, version in declined.members
        }
        rows.append(audit_row("decline", actor, now, owner, ({}, after), DECLINED_WHY, plan.plan_id))
    return rows


def held_proposals(engine: MemoryEngine) -> dict[str, Declined]:
    """The proposals reviewers turned down and nobody cleared since, by id: a decline record names the
    proposal's members at their versions; a reconsider record clears the declines before it in its
    owner's (and team's) log. A proposal whose members changed has another id, so it is not held."""
    with engine.store.reading() as connection:
        records = audit_trail(connection, REVIEW_ACTIONS, MAX_HELD)
    held: dict[str, tuple[tuple[str, str | None], Declined]] = {}
    for record in records:
        space = (record.owner_id, record.team_id)
        if record.action == "reconsider":
            held = {p: (where, d) for p, (where, d) in held.items() if where != space}
            continue
        named = [(m, v) for m, v in record.after.items() if isinstance(v, dict) and "proposal_id" in v]
        if not named:
            continue
        first = named[0][1]
        members = tuple(sorted((m, int(v.get("version", 0))) for m, v in named))
        declined = Declined(
            str(first["proposal_id"]), str(first.get("action", "")), members, record.created_at, record.actor
        )
        held[declined.proposal_id] = (space, declined)
    return {p: d for p, (_, d) in held.items()}


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
