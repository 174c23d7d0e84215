"""The `xmemo` command line (the XMemo contract). Exit codes: 0 ok, 1 user error, 2 auth, 3 store.

The root group is assembled here from the command modules (each defines its commands and imports
only `common`); the HTTP app, the MCP SDK and the evaluation are imported inside the commands that
need them, so that quick commands (keys, remember, export) start without loading them.
"""

from __future__ import annotations

import logging
import sys

import click

from retrieval.storage import private_umask

from .api_key_commands import keys_group
from .common import EXIT_STORE, XmemoGroup, fail
from .data import (
    export_command,
    import_command,
    recall_context_command,
    reflect_command,
    reindex_command,
    remember_command,
    search_command,
)
from .manage import memories_group
from .mcp_stdio import mcp_command
from .measure import bench_cache_command, bench_command, bench_reflect_command, eval_command
from .serve import serve_command
from .store import migrate_store_command

__all__ = ["cli", "main"]


@click.group(cls=XmemoGroup)
@click.option(
    "--data-dir",
    envvar="XMEMO_DATA_DIR",
    default="./xmemo-data",
    show_default=True,
    help="Directory of the system of record and the embedded index.",
)
@click.option(
    "--qdrant-url",
    envvar="QDRANT_URL",
    default=None,
    help="Qdrant server URL; absent means the embedded Qdrant Edge store.",
)
@click.option(
    "--database-url",
    envvar="XMEMO_DATABASE_URL",
    default=None,
    help="PostgreSQL system of record, postgresql://user:pass@host:5432/db; absent means SQLite in the data dir.",
)
@click.option("-v", "--verbose", is_flag=True, help="Log to stderr.")
@click.pass_context
def cli(ctx: click.Context, data_dir: str, qdrant_url: str | None, database_url: str | None, verbose: bool) -> None:
    """xmemo: a self-hostable memory service for AI agents."""
    ctx.with_resource(private_umask())  # every file a command creates is its user's alone (storage/data_dir.py)
    logging.basicConfig(
        level=logging.INFO if verbose else logging.WARNING,
        stream=sys.stderr,
        format="%(asctime)s %(levelname)s %(name)s %(message)s",
    )


for command in (
    remember_command,
    import_command,
    export_command,
    recall_context_command,
    search_command,
    reflect_command,
    reindex_command,
    serve_command,
    mcp_command,
    keys_group,
    memories_group,
    migrate_store_command,
    eval_command,
    bench_command,
    bench_reflect_command,
    bench_cache_command,
):
    cli.add_command(command)


def main() -> None:
    """Console entry point; unexpected errors exit 3 with a message, never a bare traceback."""
    try:
        cli.main(standalone_mode=True)
    except SystemExit:
        raise
    except Exception as error:  # the process edge: report, exit as "store or server unavailable"
        logging.getLogger("xmemo.cli").debug("unexpected error", exc_info=True)
        fail(f"{type(error).__name__}: {error}", EXIT_STORE)
