"""The parameters of `reflect`: validated, normalised and authorised in one place."""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from retrieval import Principal, ReadFilters, ValidationError
from retrieval.domain import (
    READ,
    WRITE,
    act_for_owner,
    check_field,
    check_path_filter,
    format_time,
    member_team,
    parse_time,
    require,
    whole,
)

__all__ = [
    "ACTIONS",
    "ACTION_ALIASES",
    "DEFAULT_LIMIT",
    "MAX_LIMIT",
    "ReflectOptions",
    "ReflectRequest",
    "normalize_actions",
    "resolve_options",
]

ACTIONS = ("summarize", "promote", "expire", "decay", "archive")
ACTION_ALIASES = {
    "summary": "summarize",
    "promotion": "promote",
    "expiry": "expire",
    "importance_decay": "decay",
    "archival": "archive",
}
DEFAULT_LIMIT, MAX_LIMIT = 500, 5000
DEFAULT_WINDOW_HOURS = 24.0
_BEGINNING = datetime(1, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class ReflectRequest:
    """What a caller asks for, named as XMemo clients name it; every field optional."""

    actions_csv: str | None = None
    dry_run: bool = False
    time_window_hours: float = DEFAULT_WINDOW_HOURS
    since: str | None = None
    until: str | None = None
    path_filter: str | None = "%"
    owner_filter: str | None = None
    bucket: str | None = "%"
    scope: str | None = None
    team_id: str | None = None
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True, slots=True)
class ReflectOptions:
    """A request after validation: the normalised actions, the window and the filters it may touch."""

    actions: tuple[str, ...]
    dry_run: bool
    since: datetime
    until: datetime
    time_window_hours: float | None
    limit: int
    filters: ReadFilters

    def describe(self) -> dict[str, Any]:
        """The `filters` block of the report."""
        f = self.filters
        return {
            "owner_filter": f.owner_id,
            "team_id": f.team_id,
            "bucket": f.bucket or "%",
            "scope": f.scope or "",
            "path_filter": f.path_pattern.text if f.path_pattern else "%",
            "since": format_time(self.since),
            "until": format_time(self.until),
            "time_window_hours": self.time_window_hours,
            "limit": self.limit,
        }


def normalize_actions(actions_csv: str | None) -> tuple[str, ...]:
    """Comma-separated actions and aliases to canonical names, in canonical order; empty means all."""
    if actions_csv is None:
        return ACTIONS
    if not isinstance(actions_csv, str):
        raise ValidationError("actions_csv must be a comma-separated string")
    chosen = set()
    for raw in actions_csv.split(","):
        name = raw.strip().lower()
        if not name:
            continue
        name = ACTION_ALIASES.get(name, name)
        if name not in ACTIONS:
            allowed = ", ".join(ACTIONS + tuple(ACTION_ALIASES))
            raise ValidationError(f"unknown reflect action {raw.strip()!r}; allowed: {allowed}")
        chosen.add(name)
    if not chosen:
        return ACTIONS
    return tuple(a for a in ACTIONS if a in chosen)


def _window(request: ReflectRequest, now: datetime) -> tuple[datetime, datetime, float | None]:
    hours = request.time_window_hours
    if isinstance(hours, bool) or not isinstance(hours, (int, float)) or not math.isfinite(hours) or hours <= 0:
        raise ValidationError("time_window_hours must be a positive number")
    until = parse_time(request.until, field_name="until") if request.until else now
    if request.since:
        since = parse_time(request.since, field_name="since")
        window_hours = None
    else:
        try:
            since = until - timedelta(hours=float(hours))
        except OverflowError:
            since = _BEGINNING
        window_hours = float(hours)
    return since, until, window_hours  # since >= until is an empty window: nothing to consolidate


def _clamp_limit(limit: Any) -> int:
    limit = whole(limit)
    if isinstance(limit, bool) or not isinstance(limit, int):
        raise ValidationError("limit must be an integer")
    return max(1, min(MAX_LIMIT, limit))


def _owner(principal: Principal, owner_filter: str | None) -> str:
    if owner_filter in (None, "", "%"):
        return principal.owner_id
    owner = check_field(owner_filter, "owner_filter", allow_empty=False)
    if "%" in owner:
        raise ValidationError("owner_filter takes one owner id; wildcards are not supported")
    return act_for_owner(principal, owner)


def _team(principal: Principal, team_id: str | None, dry_run: bool) -> str | None:
    if team_id in (None, ""):
        return None
    return member_team(principal, check_field(team_id, "team_id", allow_empty=False), "review" if dry_run else "change")


def resolve_options(principal: Principal, request: ReflectRequest, now: datetime) -> ReflectOptions:
    """Validate and authorise: a dry run needs memory:read, a real run memory:write.

    Without `team_id` the pass covers the owner's personal memories only; with it, that team's
    memories (the caller must be a member). Shared memories are never changed as a side effect.
    """
    if not isinstance(request.dry_run, bool):
        raise ValidationError("dry_run must be a boolean")
    require(principal, READ if request.dry_run else WRITE)
    actions = normalize_actions(request.actions_csv)
    since, until, window_hours = _window(request, now)
    limit = _clamp_limit(request.limit)
    team = _team(principal, request.team_id, request.dry_run)
    owner = _owner(principal, request.owner_filter)
    filters = ReadFilters(
        owner_id=owner,
        team_ids=(team,) if team else (),
        team_id=team,
        bucket=check_field(request.bucket, "bucket") if request.bucket not in (None, "", "%") else None,
        scope=check_field(request.scope, "scope") if request.scope else None,
        path_pattern=check_path_filter(request.path_filter),
    )
    return ReflectOptions(actions, request.dry_run, since, until, window_hours, limit, filters)
