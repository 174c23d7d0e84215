"""The `xmemo` command line (contract section 6). Exit codes: 0 ok, 1 user error, 2 auth, 3 store."""

from __future__ import annotations

import json
import logging
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click

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

__all__ = ["main"]

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
    return RetrievalSettings(**overrides)


def _engine(ctx: click.Context, **kwargs: Any) -> MemoryEngine:
    return MemoryEngine(_settings(ctx), **kwargs)


def _emit(document: Any) -> None:
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


@click.group(cls=_Group)
@click.option("--data-dir", envvar="XMEMO_DATA_DIR", default="./xmemo-data", show_default=True,
              help="Directory of the system of record and the embedded index.")
@click.option("--qdrant-url", envvar="QDRANT_URL", default=None,
              help="Qdrant server URL; absent means the embedded Qdrant Edge store.")
@click.option("-v", "--verbose", is_flag=True, help="Log to stderr.")
def cli(data_dir: str, qdrant_url: str | None, verbose: bool) -> None:
    """xmemo: a self-hostable memory service for AI agents."""
    logging.basicConfig(level=logging.INFO if verbose else logging.WARNING, stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s %(message)s")


@cli.command("remember")
@click.option("--owner", required=True)
@click.option("--path", required=True)
@click.option("--type", "memory_type", default="auto", show_default=True)
@click.option("--importance", type=float, default=0.5, show_default=True)
@click.option("--semantic-key", default=None)
@click.option("--expires-at", default=None, help="ISO 8601 with a zone.")
@click.option("--bucket", default="personal", show_default=True)
@click.option("--scope", default="")
@click.option("--json", "as_json", is_flag=True)
@click.argument("content")
@click.pass_context
def remember_command(ctx: click.Context, owner: str, path: str, memory_type: str, importance: float,
                     semantic_key: str | None, expires_at: str | None, bucket: str, scope: str, as_json: bool,
                     content: str) -> None:
    """Store one memory."""
    request = RememberRequest(content=content, path=path, memory_type=memory_type, importance=importance,
                              semantic_key=semantic_key, expires_at=expires_at, bucket=bucket, scope=scope,
                              source="cli")
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
@click.option("--owner", required=True)
@click.option("--batch-size", type=click.IntRange(1, 4096), default=256, show_default=True)
@click.option("--json", "as_json", is_flag=True)
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.pass_context
def import_command(ctx: click.Context, owner: str, batch_size: int, as_json: bool, file: Path) -> None:
    """Import memories from JSON Lines (one memory per line), batched, with a progress bar."""
    from tqdm import tqdm

    total = _count_lines(file)
    # Validate every line before anything is written, so a bad file changes nothing.
    from retrieval.writes import record_from_line

    for number, line in enumerate(_read_jsonl(file), start=1):
        try:
            record_from_line(Principal.local(owner), line, "2000-01-01T00:00:00.000000Z")
        except ValidationError as error:
            raise ValidationError(f"{file}: line {number}: {error.message}") from error
    with _engine(ctx) as engine, tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
        counts = import_records(engine, Principal.local(owner), _read_jsonl(file), batch_size=batch_size,
                                progress=bar.update)
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
    from retrieval.store import MemoryStore

    settings = _settings(ctx)
    if not settings.sql_path.exists():
        raise StoreError(f"no store at {settings.data_dir}")
    store = MemoryStore.open(settings.sql_path)
    count = 0
    temporary = file.with_name(file.name + ".partial")
    with temporary.open("w", encoding="utf-8") as handle:
        for memory in store.iterate(owner):
            record = memory.to_dict()
            record.pop("owner_id")
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
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


@cli.command("reindex")
@click.pass_context
def reindex_command(ctx: click.Context) -> None:
    """Rebuild the vector index from the system of record (also after changing the embedding model)."""
    from tqdm import tqdm

    with _engine(ctx, allow_model_change=True) as engine:
        total = engine.store.count()
        with tqdm(total=total, unit="mem", file=sys.stderr, disable=None) as bar:
            done = engine.reindex(progress=lambda n: bar.update(n - bar.n))
    click.echo(f"reindexed {done} memories ({engine.index.backend})", err=True)


@cli.command("bench")
@click.option("--memories", type=click.IntRange(10, 1_000_000), default=10_000, show_default=True)
@click.option("--queries", type=click.IntRange(1, 100_000), default=200, show_default=True)
@click.option("--backend", "backends", default="edge,server", show_default=True,
              help="Comma list of edge (Qdrant Edge) and server (qdrant-client; local mode unless --qdrant-url).")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def bench_command(ctx: click.Context, memories: int, queries: int, backends: str, as_json: bool) -> None:
    """Measure ingest throughput and recall_context latency and memory, per backend, in one run."""
    from eval.bench import run_bench

    names = [b.strip() for b in backends.split(",") if b.strip()]
    unknown = set(names) - {"edge", "server"}
    if unknown or not names:
        raise ValidationError(f"unknown backend(s): {', '.join(sorted(unknown)) or '(none)'}")
    report = run_bench(memories=memories, queries=queries, backends=names,
                       qdrant_url=ctx.find_root().params.get("qdrant_url"))
    if as_json:
        _emit(report)
    else:
        from eval.bench import format_report

        click.echo(format_report(report))


def main() -> None:
    """Console entry point; unexpected errors exit 3 with a message, never a bare traceback."""
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as error:  # the process edge: report, exit as "store or server unavailable"
        logging.getLogger("xmemo.cli").debug("unexpected error", exc_info=True)
        _fail(f"{type(error).__name__}: {error}", EXIT_STORE)

