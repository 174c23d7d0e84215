"""`xmemo memories ...`: the management verbs of the API at the command line (list, history, edit,
archive, restore, forget, forget-owner, batch), acting on the data dir as the operator."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from retrieval import Memory, MemoryStatus, Principal, ValidationError
from retrieval.usecases import (
    ListQuery,
    edit_memory,
    forget_memory,
    forget_owner,
    list_memories,
    memory_history,
    remember_batch,
    set_status,
)

from ..routes.responses import MemoryOut, WriteOut, answer
from .common import OWNER, emit, open_engine, settings_of
from .remote import remote_of

__all__ = ["memories_group"]

ANY_STATUS = "any"  # every status: what `--status` left out means, and the console's "any"


def _record(memory: Memory) -> dict[str, Any]:
    """A record as the API writes it (and a server beside the CLI sends it)."""
    return answer(MemoryOut, memory).model_dump(mode="json")


def _line(record: dict[str, Any]) -> str:
    status, kind = record["status"], record["type"]
    return f"{record['id']}  v{record['version']}  {status:10s} {kind:10s} {record['path']}  {record['content'][:80]}"


@click.group("memories")
def memories_group() -> None:
    """List, inspect, correct and forget memories (the management API's verbs)."""


@memories_group.command("list")
@click.option("--owner", required=True, type=OWNER)
@click.option("--path-prefix", default=None)
@click.option("--type", "memory_type", default=None)
@click.option(
    "--status",
    type=click.Choice([*(s.value for s in MemoryStatus), ANY_STATUS]),
    default=None,
    help=f"Only this status (default: {ANY_STATUS}, as the console offers it).",
)
@click.option("--text", default=None, help="Content contains this.")
@click.option("--metadata", default=None, help="key=value")
@click.option("--since", default=None, help="Created at or after (ISO 8601).")
@click.option("--until", default=None, help="Created before (ISO 8601).")
@click.option("--cursor", default=None)
@click.option("--limit", type=int, default=50, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def list_command(ctx: click.Context, /, owner: str, as_json: bool, **filters: Any) -> None:
    """The owner's memories, newest first; --json also gives the next page's cursor."""
    if filters["status"] == ANY_STATUS:
        filters["status"] = None
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            listed = client.list_memories(**{k: v for k, v in filters.items() if v is not None}).raw
        records = listed["memories"]
        cursor = listed["next_cursor"]
    else:
        with open_engine(ctx, existing=True) as engine:
            page = list_memories(engine, Principal.local(owner), ListQuery(**filters))
        records, cursor = [_record(m) for m in page.memories], page.next_cursor
    if as_json:
        emit({"memories": records, "next_cursor": cursor})
        return
    for record in records:
        click.echo(_line(record))
    if cursor:
        click.echo(f"more: --cursor {cursor}", err=True)


@memories_group.command("history")
@click.option("--owner", required=True, type=OWNER)
@click.argument("memory_id")
@click.pass_context
def history_command(ctx: click.Context, owner: str, memory_id: str) -> None:
    """Versions, links and audit trail of one memory, as JSON."""
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            told = client.history(memory_id)
        emit(
            {
                "memory": told["memory"],
                "versions": [{k: v[k] for k in ("version", "at", "action", "changes")} for v in told["versions"]],
                "derived_from": [m["id"] for m in told["derived_from"]],
                "derived_into": [m["id"] for m in told["derived_into"]],
                "supersedes": [m["id"] for m in told["supersedes"]],
                "superseded_by": [m["id"] for m in told["superseded_by"]],
                "audit": [
                    {"id": r["id"], "at": r["created_at"], "action": r["action"], "actor": r["actor"]}
                    for r in told["audit"]
                ],
            }
        )
        return
    with open_engine(ctx, existing=True) as engine:
        history = memory_history(engine, Principal.local(owner), memory_id)
    emit(
        {
            "memory": _record(history.memory),
            "versions": [
                {"version": v.version, "at": v.at, "action": v.action, "changes": v.changes} for v in history.versions
            ],
            "derived_from": [m.id for m in history.derived_from],
            "derived_into": [m.id for m in history.derived_into],
            "supersedes": [m.id for m in history.supersedes],
            "superseded_by": [m.id for m in history.superseded_by],
            "audit": [{"id": r.id, "at": r.created_at, "action": r.action, "actor": r.actor} for r in history.audit],
        }
    )


@memories_group.command("edit")
@click.option("--owner", required=True, type=OWNER)
@click.option("--expected-version", type=int, required=True)
@click.option("--content", default=None)
@click.option("--path", default=None)
@click.option("--type", "memory_type", default=None)
@click.option("--importance", type=float, default=None)
@click.option("--confidence", type=float, default=None)
@click.option("--expires-at", default=None, help="ISO 8601 with a zone; 'none' clears it.")
@click.option("--metadata", default=None, help="A JSON object that replaces the metadata.")
@click.argument("memory_id")
@click.pass_context
def edit_command(
    ctx: click.Context,
    /,
    owner: str,
    expected_version: int,
    memory_id: str,
    memory_type: str | None,
    metadata: str | None,
    expires_at: str | None,
    **fields: Any,
) -> None:
    """Make a new version with the given fields (exit 1 on a version conflict)."""
    changes = {k: v for k, v in fields.items() if v is not None}
    if memory_type is not None:
        changes["type"] = memory_type
    if expires_at is not None:
        changes["expires_at"] = None if expires_at.lower() == "none" else expires_at
    if metadata is not None:
        try:
            changes["metadata"] = json.loads(metadata)
        except json.JSONDecodeError as error:
            raise ValidationError("--metadata must be a JSON object") from error
    if not changes:
        raise ValidationError("nothing to change: give at least one field")
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            record = client.edit(memory_id, expected_version, **changes).raw
    else:
        with open_engine(ctx, existing=True) as engine:
            record = _record(edit_memory(engine, Principal.local(owner), memory_id, expected_version, changes))
    click.echo(_line(record))


def _status_command(name: str, status: MemoryStatus, help_text: str) -> None:
    @memories_group.command(name, help=help_text)
    @click.option("--owner", required=True, type=OWNER)
    @click.option("--expected-version", type=int, default=None)
    @click.argument("memory_id")
    @click.pass_context
    def command(ctx: click.Context, owner: str, expected_version: int | None, memory_id: str) -> None:
        remote = remote_of(settings_of(ctx, existing=True))
        if remote is not None:
            with remote.client(owner) as client:
                change = client.restore if status is MemoryStatus.ACTIVE else client.archive
                change(memory_id, expected_version)
                record = client.history(memory_id)["memory"]  # a fetch by id would count a use
        else:
            with open_engine(ctx, existing=True) as engine:
                record = _record(set_status(engine, Principal.local(owner), memory_id, status, expected_version))
        click.echo(_line(record))


_status_command("archive", MemoryStatus.ARCHIVED, "Archive one memory (kept, audited).")
_status_command("restore", MemoryStatus.ACTIVE, "Make an archived or expired memory active again.")


@memories_group.command("forget")
@click.option("--owner", required=True, type=OWNER)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.argument("memory_id")
@click.pass_context
def forget_command(ctx: click.Context, owner: str, yes: bool, memory_id: str) -> None:
    """Remove one memory's content from every store; an audit tombstone stays."""
    if not yes:
        click.confirm(f"Forget {memory_id} for good?", abort=True)
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            told = client.forget(memory_id)
        forgotten, audit_ids = told["forgotten"], told["audit_record_ids"]
    else:
        with open_engine(ctx, existing=True) as engine:
            done = forget_memory(engine, Principal.local(owner), memory_id)
        forgotten, audit_ids = done.forgotten, done.audit_record_ids
    click.echo(f"forgot {len(forgotten)} memory; audit {', '.join(audit_ids)}")


@memories_group.command("forget-owner")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.argument("owner", type=OWNER)
@click.pass_context
def forget_owner_command(ctx: click.Context, yes: bool, owner: str) -> None:
    """Forget every memory an owner wrote ("forget me")."""
    if not yes:
        click.confirm(f"Forget every memory of {owner} for good?", abort=True)
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client("admin") as client:
            forgotten = client.forget_owner(owner)["forgotten"]
    else:
        with open_engine(ctx, existing=True) as engine:
            forgotten = forget_owner(engine, Principal.local("admin"), owner).forgotten
    click.echo(f"forgot {len(forgotten)} memories of {owner}")


@memories_group.command("batch")
@click.option("--owner", required=True, type=OWNER)
@click.option("--json", "as_json", is_flag=True)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def batch_command(ctx: click.Context, owner: str, as_json: bool, file: Path) -> None:
    """Write up to 500 memories (one JSON object a line) in one transaction: all or none."""
    items = [json.loads(line) for line in file.read_text(encoding="utf-8").splitlines() if line.strip()]
    remote = remote_of(settings_of(ctx))
    if remote is not None:
        with remote.client(owner) as client:
            results = [written.raw for written in client.remember_batch(items)]
    else:
        with open_engine(ctx) as engine:
            results = [
                answer(WriteOut, r).model_dump(mode="json")
                for r in remember_batch(engine, Principal.local(owner), items)
            ]
    if as_json:
        emit({"results": results})
    else:
        click.echo(
            f"{sum(r['outcome'] == 'created' for r in results)} created, "
            f"{sum(r['outcome'] == 'unchanged' for r in results)} unchanged"
        )
