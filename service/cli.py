"""The `xmemo` command line (contract section 6). Exit codes: 0 ok, 1 user error, 2 auth, 3 store."""

from __future__ import annotations

import json
import logging
import os
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
from tqdm import tqdm

from retrieval import (
    AuthenticationError,
    MemoryEngine,
    PermissionDeniedError,
    Principal,
    RememberRequest,
    RetrievalSettings,
    StoreError,
    ValidationError,
    XMemoError,
    import_records,
    recall_context,
    remember,
    render_context_text,
    search_memory,
)
from retrieval.permissions import PRIVATE_FILE, private_umask, secure_data_dir
from retrieval.store import MemoryStore
from retrieval.writes import record_from_line

__all__ = ["main"]

# The HTTP app, the MCP SDK and the evaluation are imported inside the commands that need them,
# so that quick commands (keys, remember, export) start without loading them.

EXIT_USER, EXIT_AUTH, EXIT_STORE = 1, 2, 3


def _fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def _exit_code(error: XMemoError) -> int:
    if isinstance(error, (AuthenticationError, PermissionDeniedError)):
        return EXIT_AUTH
    if isinstance(error, StoreError):
        return EXIT_STORE
    return EXIT_USER


class _Group(click.Group):
    """Turns domain errors into clean messages and the contract's exit codes."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except XMemoError as error:
            _fail(error.message, _exit_code(error))


def _settings(ctx: click.Context) -> RetrievalSettings:
    options = ctx.find_root().params
    overrides: dict[str, Any] = {}
    if options.get("data_dir"):
        overrides["data_dir"] = Path(options["data_dir"])
    if options.get("qdrant_url"):
        overrides["qdrant_url"] = options["qdrant_url"]
    if options.get("database_url"):
        overrides["database_url"] = options["database_url"]
    try:
        return RetrievalSettings(**overrides)
    except ValueError as error:  # pydantic's ValidationError: a malformed option or variable
        raise ValidationError(f"invalid settings: {error}") from error


def _engine(ctx: click.Context, **kwargs: Any) -> MemoryEngine:
    return _open_private(_settings(ctx), **kwargs)


def _open_private(settings: RetrievalSettings, **kwargs: Any) -> MemoryEngine:
    """Open the stores of a data dir, made private first (what the CLI creates is, see `cli`)."""
    secure_data_dir(settings.data_dir)
    return MemoryEngine(settings, **kwargs)


def _emit(document: Any) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


@click.group(cls=_Group)
@click.option("--data-dir", envvar="XMEMO_DATA_DIR", default="./xmemo-data", show_default=True,
              help="Directory of the system of record and the embedded index.")
@click.option("--qdrant-url", envvar="QDRANT_URL", default=None,
              help="Qdrant server URL; absent means the embedded Qdrant Edge store.")
@click.option("--database-url", envvar="XMEMO_DATABASE_URL", default=None,
              help="PostgreSQL system of record, postgresql://user:pass@host:5432/db; absent means SQLite in the data dir.")
@click.option("-v", "--verbose", is_flag=True, help="Log to stderr.")
@click.pass_context
def cli(ctx: click.Context, data_dir: str, qdrant_url: str | None, database_url: str | None, verbose: bool) -> None:
    """xmemo: a self-hostable memory service for AI agents."""
    ctx.with_resource(private_umask())  # every file a command creates is its user's alone (retrieval.permissions)
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")


@cli.command("remember")
@click.option("--owner", required=True)
@click.option("--path", required=True)
@click.option("--type", "memory_type", default="auto", show_default=True)
@click.option("--importance", type=float, default=0.5, show_default=True)
@click.option("--semantic-key", default=None)
@click.option("--expires-at", default=None, help="ISO 8601 with a zone.")
@click.option("--occurred-at", default=None, help="When it happened: ISO 8601 with a zone (default: now).")
@click.option("--bucket", default="personal", show_default=True)
@click.option("--scope", default="")
@click.option("--json", "as_json", is_flag=True)
@click.argument("content")
@click.pass_context
def remember_command(ctx: click.Context, owner: str, path: str, memory_type: str, importance: float,
                     semantic_key: str | None, expires_at: str | None, occurred_at: str | None, bucket: str,
                     scope: str, as_json: bool, content: str) -> None:
    """Store one memory."""
    request = RememberRequest(content=content, path=path, memory_type=memory_type, importance=importance,
                              semantic_key=semantic_key, expires_at=expires_at, occurred_at=occurred_at,
                              bucket=bucket, scope=scope, source="cli")
    with _engine(ctx) as engine:
        result = remember(engine, Principal.local(owner), request)
    if as_json:
        _emit(result.to_dict())
    else:
        click.echo(f"{result.outcome} {result.memory.id} (version {result.memory.version})")


def _read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
    with path.open(encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                document = json.loads(line)
            except json.JSONDecodeError as error:
                raise ValidationError(f"{path}:{number}: not JSON: {error.msg}") from error
            if not isinstance(document, dict):
                raise ValidationError(f"{path}:{number}: each line must be a JSON object")
            yield document


def _count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())


@cli.command("import")
@click.option("--owner", default=None, help="Import as this owner; lines of any other owner are refused. "
                                            "Without it, each line's owner_id is restored.")
@click.option("--batch-size", type=click.IntRange(1, 4096), default=256, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def import_command(ctx: click.Context, owner: str | None, batch_size: int, as_json: bool, file: Path) -> None:
    """Import memories from JSON Lines (one memory per line), batched, with a progress bar.

    A line without an id gets one from its content, so importing the same file again adds nothing.
    """
    principal = Principal.local(owner) if owner is not None else None
    total = _count_lines(file)
    # Validate every line before anything is written, so a bad file changes nothing.
    for number, line in enumerate(_read_jsonl(file), start=1):
        try:
            record_from_line(principal, line, "2000-01-01T00:00:00.000000Z")
        except ValidationError as error:
            raise ValidationError(f"{file}: line {number}: {error.message}") from error
    with _engine(ctx) as engine, tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
        counts = import_records(engine, principal, _read_jsonl(file), batch_size=batch_size, progress=bar.update)
    if as_json:
        _emit(counts)
    else:
        click.echo(f"imported {counts['imported']}, skipped {counts['skipped']} already present, "
                   f"{counts['keyed']} through semantic keys", err=True)


@cli.command("export")
@click.option("--owner", default=None, help="Only this owner's memories (default: all).")
@click.argument("file", type=click.Path(dir_okay=False, path_type=Path))
@click.pass_context
def export_command(ctx: click.Context, owner: str | None, file: Path) -> None:
    """Write every record (all statuses) as JSON Lines that `xmemo import` takes back."""
    settings = _settings(ctx)
    if settings.database_url is None and not settings.sql_path.exists():
        raise StoreError(f"no store at {settings.data_dir}")
    secure_data_dir(settings.data_dir)
    store = MemoryStore.open(settings.database_url or settings.sql_path)
    count = 0
    temporary = file.with_name(file.name + ".partial")
    # The export holds every tenant's memories: readable by its maker only, like the data dir.
    with open(os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE), "w", encoding="utf-8") as handle:
        for memory in store.iterate(owner):  # each line keeps its owner_id and team_id
            handle.write(json.dumps(memory.to_dict(), ensure_ascii=False) + "\n")
            count += 1
    temporary.replace(file)
    store.close()
    click.echo(f"exported {count} memories to {file}", err=True)


@cli.command("recall-context")
@click.option("--owner", required=True)
@click.option("--max-items", type=int, default=8, show_default=True)
@click.option("--max-tokens", type=int, default=1500, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("query")
@click.pass_context
def recall_context_command(ctx: click.Context, owner: str, max_items: int, max_tokens: int, as_json: bool,
                           query: str) -> None:
    """Print the context pack for QUERY (the MCP text; --json: the structured pack)."""
    with _engine(ctx) as engine:
        pack = recall_context(engine, Principal.local(owner), query, max_items=max_items, max_tokens=max_tokens)
    if as_json:
        _emit(pack)
    else:
        click.echo(render_context_text(pack))


@cli.command("search")
@click.option("--owner", required=True)
@click.option("--limit", type=int, default=10, show_default=True)
@click.option("--min-score", type=float, default=None)
@click.option("--json", "as_json", is_flag=True)
@click.argument("query")
@click.pass_context
def search_command(ctx: click.Context, owner: str, limit: int, min_score: float | None, as_json: bool,
                   query: str) -> None:
    """Strict search: only memories that match QUERY well; the list may be empty."""
    with _engine(ctx) as engine:
        found = search_memory(engine, Principal.local(owner), query, limit=limit, min_score=min_score)
    if as_json:
        _emit(found)
        return
    if not found["results"]:
        click.echo("No matching XMemo memory was found.")
    for result in found["results"]:
        click.echo(f"{result['score']:.3f}  {result['id']}  {result['path']}  {result['content'][:120]}")


@cli.command("reflect")
@click.option("--owner", required=True)
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
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def reflect_command(ctx: click.Context, owner: str, dry_run: bool, actions: str | None, since: str | None,
                    until: str | None, time_window_hours: float, limit: int, bucket: str, scope: str | None,
                    team_id: str | None, path_filter: str, as_json: bool) -> None:
    """Consolidate and age OWNER's memories: summarize, promote, expire, decay, archive (see docs/reflect.md)."""
    from compactor import ReflectRequest, reflect, render_reflect_text

    request = ReflectRequest(actions_csv=actions, dry_run=dry_run, time_window_hours=time_window_hours, since=since,
                             until=until, path_filter=path_filter, bucket=bucket, scope=scope, team_id=team_id,
                             limit=limit)
    with _engine(ctx) as engine:
        report = reflect(engine, Principal.local(owner), request)
    if as_json:
        _emit(report)
    else:
        click.echo(render_reflect_text(report))


@cli.command("reindex")
@click.pass_context
def reindex_command(ctx: click.Context) -> None:
    """Rebuild the vector index from the system of record (also after changing the embedding model)."""
    with _engine(ctx, allow_model_change=True) as engine:
        total = engine.store.count()
        with tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
            done = engine.reindex(progress=lambda n: bar.update(n - bar.n))
    click.echo(f"reindexed {done} memories ({engine.index.backend})", err=True)


@cli.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8420, show_default=True)
@click.pass_context
def serve_command(ctx: click.Context, host: str, port: int) -> None:
    """Run the HTTP and MCP service (uvicorn) on the data dir's stores."""
    import uvicorn

    from .app import create_app
    from .keys import KeyStore
    from .settings import ServiceSettings

    settings = ServiceSettings(host=host, port=port, retrieval=_settings(ctx).serving())
    admin_file = settings.retrieval.data_dir / "admin.key"
    # makes the data dir private, an older admin.key too
    keys = KeyStore.open(settings.retrieval.data_dir, settings.retrieval.database_url)
    if keys.count() == 0:
        issued = keys.create("admin", agent_id="admin", scopes=("memory:read", "memory:write", "memory:admin"))
        descriptor = os.open(admin_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(issued.key + "\n")
        click.echo(f"created an admin API key; it is in {admin_file} (readable only by you)", err=True)
    keys.close()
    engine = _open_private(settings.retrieval)  # a store that cannot open fails here, with exit code 3
    _json_logs()
    uvicorn.run(create_app(settings, engine=engine), host=host, port=port, log_level="warning", log_config=None)


class _JsonFormatter(logging.Formatter):
    """One JSON object per line; a message that is already a JSON object is merged in."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {"level": record.levelname.lower(), "logger": record.name,
                                 "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S")}
        message = record.getMessage()
        try:
            parsed = json.loads(message)
        except ValueError:
            parsed = None
        entry.update(parsed if isinstance(parsed, dict) else {"message": message})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _json_logs() -> None:
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("xmemo").setLevel(logging.INFO)


@cli.group("keys")
def keys_group() -> None:
    """Create, list and revoke API keys."""


def _key_store(ctx: click.Context):  # type: ignore[no-untyped-def]
    from .keys import KeyStore

    settings = _settings(ctx)
    return KeyStore.open(settings.data_dir, settings.database_url)


@keys_group.command("create")
@click.option("--owner", required=True)
@click.option("--agent", default="")
@click.option("--team", "teams", multiple=True)
@click.option("--org", default="")
@click.option("--workspace", default="")
@click.option("--project", default=None)
@click.option("--scopes", default="memory:read,memory:write", show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def keys_create(ctx: click.Context, owner: str, agent: str, teams: tuple[str, ...], org: str, workspace: str,
                project: str | None, scopes: str, as_json: bool) -> None:
    """Issue a key; it is printed once and stored only as a digest."""
    store = _key_store(ctx)
    issued = store.create(owner, agent_id=agent, team_ids=teams, organization_id=org, workspace_id=workspace,
                          project_id=project, scopes=tuple(s.strip() for s in scopes.split(",") if s.strip()))
    store.close()
    if as_json:
        _emit(issued.to_dict())
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
        _emit(rows)
        return
    for row in rows:
        state = "revoked" if row["revoked_at"] else "active"
        click.echo(f"{row['key_id']}  {state:7s}  owner={row['owner_id']} agent={row['agent_id']} "
                   f"teams={','.join(row['team_ids'])} scopes={','.join(row['scopes'])}")


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


def main() -> None:
    """Console entry point; unexpected errors exit 3 with a message, never a bare traceback."""
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as error:  # the process edge: report, exit as "store or server unavailable"
        logging.getLogger("xmemo.cli").debug("unexpected error", exc_info=True)
        _fail(f"{type(error).__name__}: {error}", EXIT_STORE)



from . import cli_manage  # noqa: E402,F401  (registers `xmemo memories ...` on the group)
from . import cli_store  # noqa: E402,F401  (registers `xmemo migrate-store` on the group)
from . import cli_measure  # noqa: E402,F401  (registers `xmemo eval`, `bench`, `bench-reflect`, `bench-cache`)
