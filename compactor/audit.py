"""The audit log of reflect: one record per applied change, with before and after values; listed per tenant."""

from __future__ import annotations

import json
import uuid
from typing import Any

from sqlalchemy import and_, literal_column, or_, select
from sqlalchemy.engine import Connection

from retrieval import Memory, MemoryEngine, Principal
from retrieval.policy import READ, require
from retrieval.records import format_time
from retrieval.schema import audit_log
from retrieval.validation import check_range, optional_time

from .options import normalize_actions
from .plan import Change, Plan

__all__ = ["MAX_AUDIT_LIMIT", "list_audit", "write_audit"]

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


def write_audit(connection: Connection, plan: Plan, actor: str) -> list[str]:
    """Insert one audit record per change of `plan` in the caller's transaction; returns their ids."""
    rows = [_audit_row(change, plan, actor) for change in plan.changes]
    if rows:
        connection.execute(audit_log.insert(), rows)
    return [row["id"] for row in rows]


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

    `since`/`until` are ISO 8601 bounds on when the record was written; `action` takes the reflect
    action names and aliases, comma-separated."""
    require(principal, READ)
    since, until = optional_time(since, "since"), optional_time(until, "until")
    actions = normalize_actions(action) if action else None
    limit = check_range(limit, "limit", 1, MAX_AUDIT_LIMIT)
    c = audit_log.c
    visible = and_(c.team_id.is_(None), c.owner_id == principal.owner_id)
    if principal.team_ids:
        visible = or_(visible, c.team_id.in_(principal.team_ids))
    statement = select(audit_log).where(visible)
    if since:
        statement = statement.where(c.created_at >= since)
    if until:
        statement = statement.where(c.created_at < until)
    if actions:
        statement = statement.where(c.action.in_(actions))
    statement = statement.order_by(c.created_at.desc(), literal_column("audit_log.rowid").desc()).limit(limit)
    with engine.store.engine.connect() as connection:
        rows = list(connection.execute(statement))
    return [_record(row._mapping) for row in rows]


def _record(row: Any) -> dict[str, Any]:
    return {
        "id": row["id"],
        "created_at": row["created_at"],
        "actor": row["actor"],
        "action": row["action"],
        "plan_id": row["plan_id"],
        "owner_id": row["owner_id"],
        "team_id": row["team_id"],
        "memory_ids": json.loads(row["memory_ids"]),
        "before": json.loads(row["before"]),
        "after": json.loads(row["after"]),
        "reason": row["reason"],
    }
