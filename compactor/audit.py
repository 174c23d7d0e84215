"""The audit records of reflect: one per applied change, with before and after values; listed per tenant."""

from __future__ import annotations

import json
import uuid
from typing import Any

from retrieval import Memory, MemoryEngine, Principal, ValidationError
from retrieval.domain import READ, check_range, format_time, optional_time, require
from retrieval.storage import AuditRecord, audit_records

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


# Fields an audit record leaves out of a record's values: the BM25 context is derived, not content.
_UNAUDITED = {"context"}
MAX_AUDIT_LIMIT = 1000


def _values(memory: Memory) -> dict[str, Any]:
    return {k: v for k, v in memory.to_dict().items() if k not in _UNAUDITED}


def _difference(before: Memory | None, after: Memory) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Created: no before, every field after. Changed: only the fields that changed, on both sides."""
    if before is None:
        return None, _values(after)
    old, new = _values(before), _values(after)
    changed = [k for k in new if old.get(k) != new[k]]
    return {k: old.get(k) for k in changed}, {k: new[k] for k in changed}


def audit_rows(plan: Plan, actor: str) -> list[dict[str, Any]]:
    """One audit record per change of `plan`, in order (apply_plan's unit of work writes them)."""
    return [_audit_row(change, plan, actor) for change in plan.changes]


def _audit_row(change: Change, plan: Plan, actor: str) -> dict[str, Any]:
    before: dict[str, Any] = {}
    after: dict[str, Any] = {}
    for old, new in change.pairs:
        before[new.id], after[new.id] = _difference(old, new)
    return {
        "id": str(uuid.uuid4()),
        "created_at": format_time(plan.now),
        "actor": actor,
        "action": change.action,
        "plan_id": plan.plan_id,
        "memory_ids": json.dumps(change.memory_ids),
        "before": json.dumps(before, ensure_ascii=False, sort_keys=True),
        "after": json.dumps(after, ensure_ascii=False, sort_keys=True),
        "reason": change.reason,
        "owner_id": plan.options.filters.owner_id,
        "team_id": plan.options.filters.team_id,
    }


def list_audit(
    engine: MemoryEngine,
    principal: Principal,
    *,
    since: str | None = None,
    until: str | None = None,
    action: str | None = None,
    limit: int = 100,
) -> list[dict[str, Any]]:
    """Audit records of the caller's own space and its teams, newest first (needs memory:read).

    `since`/`until` are ISO 8601 bounds on when the record was written; `action` takes audit actions
    (AUDIT_ACTIONS, and reflect's aliases), comma-separated."""
    require(principal, READ)
    since, until = optional_time(since, "since"), optional_time(until, "until")
    actions = audit_actions(action) if action else None
    limit = check_range(limit, "limit", 1, MAX_AUDIT_LIMIT)
    with engine.store.reading() as connection:
        records = audit_records(
            connection, principal, actions=tuple(actions or ()), since=since, until=until, limit=limit
        )
    return [_record(record) for record in records]


def _record(record: AuditRecord) -> dict[str, Any]:
    return {
        "id": record.id,
        "created_at": record.created_at,
        "actor": record.actor,
        "action": record.action,
        "plan_id": record.plan_id,
        "owner_id": record.owner_id,
        "team_id": record.team_id,
        "memory_ids": record.memory_ids,
        "before": record.before,
        "after": record.after,
        "reason": record.reason,
    }
