"""Audit records: the rows of the management use cases (written by the change's own unit of work),
the listing of the log per tenant and per memory (reflect's records included), and scrubbing a
forgotten memory's values. Rows have the layout compactor/audit.py builds for reflect (memory_ids,
and before/after maps from id to the changed fields), so one log holds both."""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import and_, or_, select
from sqlalchemy.engine import Connection

from ..domain import Memory, Principal
from .schema import audit_log, insertion_order
from .unit_of_work import UnitOfWork

__all__ = [
    "AuditRecord",
    "actor_of",
    "audit_change",
    "audit_records",
    "audit_row",
    "audit_trail",
    "changed_values",
    "scrub_audit",
    "tombstone",
]

# The fields an audit record keeps of a forgotten memory (tombstone and scrubbed history): no content,
# no path, no metadata: what was there and when, never what it said.
TOMBSTONE_FIELDS = ("id", "owner_id", "team_id", "type", "status", "version", "created_at", "updated_at")
_UNAUDITED = {"context"}  # derived from other memories' content, as in compactor/audit.py


@dataclass(frozen=True, slots=True)
class AuditRecord:
    id: str
    created_at: str
    actor: str
    action: str
    plan_id: str | None
    owner_id: str
    team_id: str | None
    memory_ids: list[str]
    before: dict[str, Any]
    after: dict[str, Any]
    reason: str


def actor_of(principal: Principal) -> str:
    """Who made a change, as reflect's records name it: owner/agent."""
    return f"{principal.owner_id}/{principal.agent_id}" if principal.agent_id else principal.owner_id


def _values(memory: Memory) -> dict[str, Any]:
    return {k: v for k, v in memory.to_dict().items() if k not in _UNAUDITED}


def changed_values(before: Memory | None, after: Memory) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """Created (no before): no values before, every field after. Changed: only the fields that changed,
    on both sides."""
    if before is None:
        return None, _values(after)
    was, now = _values(before), _values(after)
    changed = [k for k in now if was.get(k) != now[k]]
    return {k: was.get(k) for k in changed}, {k: now[k] for k in changed}


def audit_row(
    action: str,
    actor: str,
    now: str,
    owner: tuple[str, str | None],
    sides: tuple[dict[str, Any], dict[str, Any]],
    reason: str,
    plan_id: str | None = None,
) -> dict[str, Any]:
    """The row of one record: `sides` are the before and after values by memory id (in that order, the
    record's `memory_ids`), `owner` the owner and team whose log it is in."""
    before, after = sides
    return {
        "id": str(uuid.uuid4()),
        "created_at": now,
        "actor": actor,
        "action": action,
        "plan_id": plan_id,
        "memory_ids": json.dumps(list(after)),
        "before": json.dumps(before, ensure_ascii=False, sort_keys=True),
        "after": json.dumps(after, ensure_ascii=False, sort_keys=True),
        "reason": reason,
        "owner_id": owner[0],
        "team_id": owner[1],
    }


def _row(action: str, actor: str, now: str, subject: Memory, before: Any, after: Any, reason: str) -> dict[str, Any]:
    sides = ({subject.id: before}, {subject.id: after})
    return audit_row(action, actor, now, (subject.owner_id, subject.team_id), sides, reason)


def audit_change(
    action: str, actor: str, now: str, before: Memory | None, after: Memory, reason: str = ""
) -> dict[str, Any]:
    """The record of a created (before None) or changed memory: the changed fields on both sides
    (UnitOfWork.audit writes it)."""
    old, new = changed_values(before, after)
    return _row(action, actor, now, after, old, new, reason)


def tombstone(actor: str, now: str, forgotten: list[Memory], reason: str) -> list[dict[str, Any]]:
    """A `forget` record per memory, without its content: only TOMBSTONE_FIELDS of what was removed."""
    return [
        _row("forget", actor, now, memory, {k: _values(memory)[k] for k in TOMBSTONE_FIELDS}, None, reason)
        for memory in forgotten
    ]


def _mentioning(memory_id: str):  # type: ignore[no-untyped-def]
    return audit_log.c.memory_ids.contains(json.dumps(memory_id), autoescape=True)


def _scrubbed(values: Any, forgotten: set[str]) -> Any:
    if not isinstance(values, dict):
        return values
    return {
        key: (
            {k: v for k, v in side.items() if k in TOMBSTONE_FIELDS}
            if key in forgotten and isinstance(side, dict)
            else side
        )
        for key, side in values.items()
    }


def scrub_audit(work: UnitOfWork, ids: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """Cut every value but TOMBSTONE_FIELDS of these memories out of earlier audit records.

    Returns (memory id, values) of the before/after sides as they were: the caller derives the old
    embedding keys from them, so that nothing of an earlier version's content stays behind either.
    """
    forgotten = set(ids)
    found: list[tuple[str, dict[str, Any]]] = []
    for memory_id in ids:
        for row in work.audit_mentioning(memory_id):
            before, after = json.loads(row.before), json.loads(row.after)
            for side in (before, after):
                value = side.get(memory_id) if isinstance(side, dict) else None
                if isinstance(value, dict):
                    found.append((memory_id, value))
            work.rewrite_audit(
                row.id,
                json.dumps(_scrubbed(before, forgotten), ensure_ascii=False, sort_keys=True),
                json.dumps(_scrubbed(after, forgotten), ensure_ascii=False, sort_keys=True),
            )
    return found


def audit_records(
    connection: Connection,
    principal: Principal,
    *,
    memory_id: str | None = None,
    actions: tuple[str, ...] = (),
    since: str | None = None,
    until: str | None = None,
    limit: int = 100,
    newest_first: bool = True,
) -> list[AuditRecord]:
    """Records of the principal's own space and its teams (any action, reflect's included)."""
    c = audit_log.c
    visible = and_(c.team_id.is_(None), c.owner_id == principal.owner_id)
    if principal.team_ids:
        visible = or_(visible, c.team_id.in_(principal.team_ids))
    statement = select(audit_log).where(visible)
    if memory_id is not None:
        statement = statement.where(_mentioning(memory_id))
    if actions:
        statement = statement.where(c.action.in_(actions))
    if since:
        statement = statement.where(c.created_at >= since)
    if until:
        statement = statement.where(c.created_at < until)
    written = insertion_order("audit_log", connection.dialect.name)
    order = (c.created_at.desc(), written.desc()) if newest_first else (c.created_at, written)
    rows = connection.execute(statement.order_by(*order).limit(limit))
    return [_record(row._mapping) for row in rows]


def audit_trail(connection: Connection, actions: tuple[str, ...], limit: int) -> list[AuditRecord]:
    """The newest `limit` records of these actions in every tenant's log, oldest first: for the service's
    own bookkeeping (reflect reads the proposals reviewers turned down), never shown to a caller as is."""
    c = audit_log.c
    written = insertion_order("audit_log", connection.dialect.name)
    statement = select(audit_log).where(c.action.in_(actions)).order_by(c.created_at.desc(), written.desc())
    rows = [_record(row._mapping) for row in connection.execute(statement.limit(limit))]
    return rows[::-1]


def _record(row: Any) -> AuditRecord:
    return AuditRecord(
        id=row["id"],
        created_at=row["created_at"],
        actor=row["actor"],
        action=row["action"],
        plan_id=row["plan_id"],
        owner_id=row["owner_id"],
        team_id=row["team_id"],
        memory_ids=json.loads(row["memory_ids"]),
        before=json.loads(row["before"]),
        after=json.loads(row["after"]),
        reason=row["reason"],
    )
