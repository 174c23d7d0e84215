"""Authorization: the one place that says what a principal may read, change and administer.

    memory:read    read use cases (recall, search, get, list, audit, reflect dry runs)
    memory:write   changes (remember, state, events, archive, import, reflect real runs)
    memory:admin   acting on another owner's memories (reflect's owner_filter, listing and forgetting an owner)

Teams: a principal reads and writes the memories of its key's teams, and no other team's, whatever
its scopes (an explicit team outside them is 403): `memory:admin` reaches other owners, not other
teams. An admin key restricted to teams administers those teams only, the rule key management
follows (service/api_keys.py `manages`): it never reaches another owner's personal memories; the
operator's admin, a key with no team restriction, keeps the whole store (`reaches_every_owner`).
The operator at the command line of a data dir (`Principal.local`) may name any team.
Every use case asks here, so REST, MCP and the CLI answer alike.
"""

from __future__ import annotations

from .errors import PermissionDeniedError
from .records import Principal
from .scopes import ADMIN

__all__ = ["act_for_owner", "member_team", "reaches_every_owner", "require"]


def require(principal: Principal, scope: str) -> None:
    """PermissionDenied (403) unless the principal's key holds `scope`."""
    if scope not in principal.scopes:
        raise PermissionDeniedError(f"{scope} scope required")


def member_team(principal: Principal, team_id: str | None, doing: str = "use") -> str | None:
    """`team_id` when the principal may act in that team (None for none); else PermissionDenied."""
    if team_id is None or team_id == "":
        return None
    if not principal.operator and team_id not in principal.team_ids:
        raise PermissionDeniedError(
            f"team {team_id!r} is not one of this principal's teams; cannot {doing} its memories"
        )
    return team_id


def reaches_every_owner(principal: Principal) -> bool:
    """Whether the principal administers every owner's personal memories: the operator at the command
    line, or a memory:admin key restricted to no team (a team's admin administers its teams only)."""
    return principal.operator or (ADMIN in principal.scopes and not principal.team_ids)


def act_for_owner(principal: Principal, owner_id: str | None) -> str:
    """The owner a request acts for: the principal's own, or another one for an admin of every owner
    (`reaches_every_owner`); else PermissionDenied."""
    if owner_id is None or owner_id in ("", principal.owner_id):
        return principal.owner_id
    if ADMIN not in principal.scopes:
        raise PermissionDeniedError("another owner's memories need the memory:admin scope")
    if not reaches_every_owner(principal):
        raise PermissionDeniedError(
            "this memory:admin key is restricted to teams "
            f"({', '.join(principal.team_ids)}): it administers their memories, not another owner's"
        )
    return owner_id
