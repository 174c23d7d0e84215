"""The data commands: remember, import, export, recall-context, search, reflect and reindex, on the
data dir's stores as the operator (`Principal.local`)."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

import click
from tqdm import tqdm

from retrieval import (
    Principal,
    RecallRequest,
    RememberRequest,
    SearchRequest,
    StoreError,
    ValidationError,
    import_records,
    prepare_read,
    recall_context,
    remember,
    render_context_text,
    search_memory,
)
from retrieval.domain import DEFAULT_PACK_ITEMS, DEFAULT_PACK_TOKENS, DEFAULT_SEARCH_LIMIT, format_time, utc_now
from retrieval.storage import PRIVATE_FILE, MemoryStore, secure_data_dir
from retrieval.usecases import NO_MATCH, record_from_line, remembered_memory

from ..routes.responses import ContextPackOut, ReflectReportOut, SearchOut, WriteOut, answer
from .common import OWNER, count_lines, emit, open_engine, read_jsonl, settings_of
from .remote import remote_of

__all__ = [
    "export_command",
    "import_command",
    "recall_context_command",
    "reflect_command",
    "reindex_command",
    "remember_command",
    "search_command",
]


def _set(**fields: Any) -> Any:
    """The options given (None: the server's default, as on the local path)."""
    return {name: value for name, value in fields.items() if value is not None}


@click.command("remember")
@click.option("--owner", required=True, type=OWNER)
@click.option("--path", required=True)
@click.option("--type", "memory_type", default="auto", show_default=True)
@click.option("--importance", type=float, default=0.5, show_default=True)
@click.option("--semantic-key", default=None)
@click.option("--expires-at", default=None, help="ISO 8601 with a zone.")
@click.option("--occurred-at", default=None, help="When it happened: ISO 8601 with a zone (default: now).")
@click.option("--speaker", default=None, help="Who said it (a conversation's speaker, a chat's role).")
@click.option("--session", "session_id", default=None, help="The conversation or session it belongs to.")
@click.option("--bucket", default="personal", show_default=True)
@click.option("--scope", default="")
@click.option("--json", "as_json", is_flag=True)
@click.argument("content")
@click.pass_context
def remember_command(
    ctx: click.Context,
    owner: str,
    path: str,
    memory_type: str,
    importance: float,
    semantic_key: str | None,
    expires_at: str | None,
    occurred_at: str | None,
    speaker: str | None,
    session_id: str | None,
    bucket: str,
    scope: str,
    as_json: bool,
    content: str,
) -> None:
    """Store one memory."""
    request = RememberRequest(
        content=content,
        path=path,
        memory_type=memory_type,
        importance=importance,
        semantic_key=semantic_key,
        expires_at=expires_at,
        occurred_at=occurred_at,
        speaker=speaker,
        session_id=session_id,
        bucket=bucket,
        scope=scope,
        source="cli",
    )
    # The input is checked before the data dir is opened: a typo is told as such, even while a
    # server holds the data dir.
    remembered_memory(Principal.local(owner), request, format_time(utc_now()))
    remote = remote_of(settings_of(ctx))
    if remote is not None:
        with remote.client(owner) as client:
            written = client.remember(
                content,
                path,
                memory_type=memory_type,
                importance=importance,
                bucket=bucket,
                scope=scope,
                source="cli",
                **_set(semantic_key=semantic_key, expires_at=expires_at, occurred_at=occurred_at),
                **_set(speaker=speaker, session_id=session_id),
            ).raw
    else:
        with open_engine(ctx) as engine:
            written = answer(WriteOut, remember(engine, Principal.local(owner), request)).model_dump(mode="json")
    if as_json:
        emit(written)
    else:
        click.echo(f"{written['outcome']} {written['id']} (version {written['version']})")


@click.command("import")
@click.option(
    "--owner",
    default=None,
    type=OWNER,
    help="Import as this owner; lines of any other owner are refused. Without it, each line's owner_id is restored.",
)
@click.option("--batch-size", type=click.IntRange(1, 4096), default=256, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def import_command(ctx: click.Context, owner: str | None, batch_size: int, as_json: bool, file: Path) -> None:
    """Import memories from JSON Lines (one memory per line), batched, with a progress bar.

    A line without an id gets one from its content, so importing the same file again adds nothing.
    """
    principal = Principal.local(owner) if owner is not None else None
    total = count_lines(file)
    # Validate every line before anything is written, so a bad file changes nothing.
    checked_at = format_time(utc_now())
    for number, line in enumerate(read_jsonl(file), start=1):
        try:
            record_from_line(principal, line, checked_at)
        except ValidationError as error:
            raise ValidationError(f"{file}: line {number}: {error.message}") from error
    with open_engine(ctx) as engine, tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
        counts = import_records(engine, principal, read_jsonl(file), batch_size=batch_size, progress=bar.update)
    if as_json:
        emit(counts)
    else:
        click.echo(
            f"imported {counts['imported']}, skipped {counts['skipped']} already present, "
            f"{counts['keyed']} through semantic keys",
            err=True,
        )


@click.command("export")
@click.option("--owner", default=None, type=OWNER, help="Only this owner's memories (default: all).")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, owner: str | None, file: Path) -> None:
    """Write every record (all statuses) as JSON Lines that `xmemo import` takes back."""
    settings = settings_of(ctx, existing=True)
    if settings.database_url is None and not settings.sql_path.exists():
        raise StoreError(f"no store at {settings.data_dir}")
    secure_data_dir(settings.data_dir)
    store = MemoryStore.open(settings.database_url or settings.sql_path)
    count = 0
    # The export holds every tenant's memories: readable by its maker only, like the data dir. The temp
    # file is a new one that mkstemp makes (O_EXCL, mode 0600) beside the target, so a file or symlink
    # planted at a predictable name is never written through.
    descriptor, name = tempfile.mkstemp(prefix=f".{file.name}.", suffix=".partial", dir=file.parent or Path("."))
    temporary = Path(name)
    try:
        os.fchmod(descriptor, PRIVATE_FILE)
        with open(descriptor, "w", encoding="utf-8") as handle:
            for memory in store.iterate(owner):  # each line keeps its owner_id and team_id
                handle.write(json.dumps(memory.to_dict(), ensure_ascii=False) + "\n")
                count += 1
        temporary.replace(file)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise
    finally:
        store.close()
    click.echo(f"exported {count} memories to {file}", err=True)


@click.command("recall-context")
@click.option("--owner", required=True, type=OWNER)
@click.option("--max-items", type=int, default=DEFAULT_PACK_ITEMS, show_default=True)
@click.option("--max-tokens", type=int, default=DEFAULT_PACK_TOKENS, show_default=True)
@click.option(
    "--as-of",
    default=None,
    help='When the question is asked, ISO 8601 with a zone (default: now); "last Saturday" resolves against it.',
)
@click.option("--json", "as_json", is_flag=True)
@click.argument("query")
@click.pass_context
def recall_context_command(
    ctx: click.Context, owner: str, max_items: int, max_tokens: int, as_of: str | None, as_json: bool, query: str
) -> None:
    """Print the context pack for QUERY (the MCP text; --json: the structured pack)."""
    request = RecallRequest(query=query, max_items=max_items, max_tokens=max_tokens, as_of=as_of)
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        asked: dict[str, Any] = {"max_items": request.max_items, "max_tokens": request.max_tokens}
        asked |= {"as_of": request.as_of} if request.as_of else {}
        if as_json:
            with remote.client(owner) as client:
                emit(client.recall_context(request.query, **asked).raw)
        else:
            click.echo(remote.mcp_text(owner, "recall_context", {"query": request.query, **asked}))
        return
    with open_engine(ctx, existing=True) as engine:
        pack = recall_context(engine, prepare_read(engine, Principal.local(owner), request))
        text = render_context_text(pack, engine.tokens)
    if as_json:
        emit(answer(ContextPackOut, pack))
    else:
        click.echo(text)


@click.command("search")
@click.option("--owner", required=True, type=OWNER)
@click.option("--limit", type=int, default=DEFAULT_SEARCH_LIMIT, show_default=True)
@click.option("--min-score", type=float, default=None)
@click.option("--json", "as_json", is_flag=True)
@click.argument("query")
@click.pass_context
def search_command(
    ctx: click.Context, owner: str, limit: int, min_score: float | None, as_json: bool, query: str
) -> None:
    """Strict search: only memories that match QUERY well; the list may be empty."""
    request = SearchRequest(query=query, limit=limit, min_score=min_score)
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            bounds = {"limit": request.limit, **({"min_score": min_score} if min_score is not None else {})}
            found: dict[str, Any] = client.search(request.query, **bounds).raw  # type: ignore[arg-type]
    else:
        with open_engine(ctx, existing=True) as engine:
            results = search_memory(engine, prepare_read(engine, Principal.local(owner), request))
        found = answer(SearchOut, results).model_dump(mode="json")
    if as_json:
        emit(found)
        return
    if not found["results"]:
        click.echo(NO_MATCH)
    for result in found["results"]:
        click.echo(f"{result['score']:.3f}  {result['id']}  {result['path']}  {result['content'][:120]}")


@click.command("reflect")
@click.option("--owner", required=True, type=OWNER)
@click.option("--dry-run", is_flag=True, help="Plan and report; write nothing.")
@click.option("--actions", default=None, help="Comma list: summarize,promote,expire,decay,archive (default: all).")
@click.option("--since", default=None, help="ISO 8601; overrides --time-window-hours.")
@click.option("--until", default=None, help="ISO 8601 (default: now).")
@click.option("--time-window-hours", type=float, default=24.0, show_default=True)
@click.option("--limit", type=int, default=500, show_default=True, help="Candidate budget, clamped to 1..5000.")
@click.option("--bucket", default="%", show_default=True)
@click.option("--scope", default=None)
@click.option("--team", "team_id", default=None)
@click.option("--path-filter", default="%", show_default=True)
@click.option(
    "--expected-plan",
    default=None,
    metavar="DIGEST",
    help="A dry run's plan_digest: apply only that plan, else write nothing (exit 1).",
)
@click.option(
    "--exclude",
    multiple=True,
    metavar="ID",
    help="A proposal_id of that dry run to leave out (repeat it); the rest is applied as reviewed.",
)
@click.option(
    "--reconsider",
    is_flag=True,
    help="Clear the proposals earlier reviews turned down (--exclude on a real run) and plan as if none had been.",
)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def reflect_command(
    ctx: click.Context,
    owner: str,
    dry_run: bool,
    actions: str | None,
    since: str | None,
    until: str | None,
    time_window_hours: float,
    limit: int,
    bucket: str,
    scope: str | None,
    team_id: str | None,
    path_filter: str,
    expected_plan: str | None,
    exclude: tuple[str, ...],
    reconsider: bool,
    as_json: bool,
) -> None:
    """Consolidate and age OWNER's memories: summarize, promote, expire, decay, archive (see docs/reflect.md)."""
    from compactor import ReflectReport, ReflectRequest, reflect, render_reflect_text

    request = ReflectRequest(
        actions_csv=actions,
        dry_run=dry_run,
        time_window_hours=time_window_hours,
        since=since,
        until=until,
        path_filter=path_filter,
        bucket=bucket,
        scope=scope,
        team_id=team_id,
        limit=limit,
    )
    remote = remote_of(settings_of(ctx, existing=True))
    if remote is not None:
        with remote.client(owner) as client:
            fields: dict[str, Any] = _set(**dataclasses.asdict(request), expected_plan=expected_plan)
            report = ReflectReport(**client.reflect(**fields, exclude=list(exclude), reconsider=reconsider).raw)
    else:
        with open_engine(ctx, existing=True) as engine:
            principal = Principal.local(owner)
            report = reflect(
                engine, principal, request, expected_plan=expected_plan, exclude=exclude, reconsider=reconsider
            )
    if as_json:
        emit(answer(ReflectReportOut, report))
    else:
        click.echo(render_reflect_text(report))


@click.command("reindex")
@click.pass_context
def reindex_command(ctx: click.Context) -> None:
    """Rebuild the vector index from the system of record (also after changing the embedding model)."""
    with open_engine(ctx, existing=True, allow_model_change=True) as engine:
        total = engine.store.count()
        with tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
            done = engine.reindex(progress=lambda n: bar.update(n - bar.n))
    click.echo(f"reindexed {done} memories ({engine.index.backend})", err=True)
