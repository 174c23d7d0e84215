"""`xmemo keys create|list|revoke`: API keys in the data dir's key store (or PostgreSQL's)."""

from __future__ import annotations

import click

from retrieval import ValidationError

from ..api_keys import KeyStore
from .common import OWNER, emit, settings_of

__all__ = ["keys_group"]


@click.group("keys")
def keys_group() -> None:
    """Create, list and revoke API keys."""


def _key_store(ctx: click.Context, *, existing: bool = True) -> KeyStore:
    """The key store; `existing`: only in a data dir that is there (settings_of), as for every read."""
    settings = settings_of(ctx, existing=existing)
    return KeyStore.open(settings.data_dir, settings.database_url)


@keys_group.command("create")
@click.option("--owner", required=True, type=OWNER)
@click.option("--agent", default="")
@click.option("--team", "teams", multiple=True)
@click.option("--org", default="")
@click.option("--workspace", default="")
@click.option("--project", default=None)
@click.option("--scopes", default="memory:read,memory:write", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def keys_create(
    ctx: click.Context,
    owner: str,
    agent: str,
    teams: tuple[str, ...],
    org: str,
    workspace: str,
    project: str | None,
    scopes: str,
    as_json: bool,
) -> None:
    """Issue a key; it is printed once and stored only as a digest."""
    store = _key_store(ctx, existing=False)
    issued = store.create(
        owner,
        agent_id=agent,
        team_ids=teams,
        organization_id=org,
        workspace_id=workspace,
        project_id=project,
        scopes=tuple(s.strip() for s in scopes.split(",") if s.strip()),
    )
    store.close()
    if as_json:
        emit(issued.to_dict())
    else:
        click.echo(issued.key)
        click.echo(f"key id {issued.key_id}; store the key now, it is not shown again", err=True)


@keys_group.command("list")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def keys_list(ctx: click.Context, as_json: bool) -> None:
    """Key ids, principals and states (never the keys)."""
    store = _key_store(ctx)
    rows = store.list()
    store.close()
    if as_json:
        emit(rows)
        return
    for row in rows:
        state = "revoked" if row["revoked_at"] else "active"
        click.echo(
            f"{row['key_id']}  {state:7s}  owner={row['owner_id']} agent={row['agent_id']} "
            f"teams={','.join(row['team_ids'])} scopes={','.join(row['scopes'])}"
        )


@keys_group.command("revoke")
@click.argument("key_id")
@click.pass_context
def keys_revoke(ctx: click.Context, key_id: str) -> None:
    """Revoke a key by its id."""
    store = _key_store(ctx)
    revoked = store.revoke(key_id)
    store.close()
    if not revoked:
        raise ValidationError(f"no active key with id {key_id}")
    click.echo(f"revoked {key_id}", err=True)
