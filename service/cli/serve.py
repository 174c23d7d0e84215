"""`xmemo serve`: the HTTP and MCP service on the data dir's stores, with JSON logs."""

from __future__ import annotations

import json
import logging
import os
import sys
from typing import TYPE_CHECKING, Any

import click

from retrieval.domain import SCOPES
from retrieval.storage import PRIVATE_FILE

from .common import open_private, settings_of
from .remote import announce

if TYPE_CHECKING:
    from ..settings import ServiceSettings

__all__ = ["LOG_LEVELS", "serve_command"]

LOG_LEVELS = ("debug", "info", "warning", "error")


@click.command("serve")
@click.option("--host", default="127.0.0.1", show_default=True)
@click.option("--port", type=click.IntRange(1, 65535), default=8420, show_default=True)
@click.option(
    "--log-level",
    type=click.Choice(LOG_LEVELS, case_sensitive=False),
    default="info",
    show_default=True,
    envvar="XMEMO_LOG_LEVEL",
    help="The service's JSON logs: info logs each request (readiness and liveness probes only at debug).",
)
@click.pass_context
def serve_command(ctx: click.Context, host: str, port: int, log_level: str) -> None:
    """Run the HTTP and MCP service (uvicorn) on the data dir's stores."""
    import uvicorn

    from ..api_keys import KeyStore
    from ..app import create_app
    from ..settings import ServiceSettings
    from .uvicorn_server import WithdrawingServer

    settings = ServiceSettings(host=host, port=port, retrieval=settings_of(ctx).serving())
    admin_file = settings.retrieval.data_dir / "admin.key"
    # makes the data dir private, an older admin.key too
    keys = KeyStore.open(settings.retrieval.data_dir, settings.retrieval.database_url)
    if keys.count() == 0:
        issued = keys.create("admin", agent_id="admin", scopes=SCOPES)
        descriptor = os.open(admin_file, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, PRIVATE_FILE)
        with os.fdopen(descriptor, "w") as handle:
            handle.write(issued.key + "\n")
        click.echo(f"created an admin API key; it is in {admin_file} (readable only by you)", err=True)
    keys.close()
    engine = open_private(settings.retrieval)  # a store that cannot open fails here, with exit code 3
    _json_logs(log_level)
    # The CLI on this data dir finds the server in server.json, the data dir's lock held (cli/remote.py).
    with announce(settings.retrieval.data_dir, host, port) as (local_token, withdraw):
        app = create_app(settings, engine=engine, local_token=local_token)
        # uvicorn's own lines from warning up (debug: its too); its access log is off, xmemo.requests is it
        server_level = "debug" if log_level.lower() == "debug" else "warning"
        config = uvicorn.Config(
            app, host=host, port=port, log_level=server_level, log_config=None, access_log=False, **_proxies(settings)
        )
        WithdrawingServer(config, withdraw).run()


def _proxies(settings: ServiceSettings) -> dict[str, Any]:
    """X-Forwarded-For is believed only from the proxies the operator named (uvicorn's own default
    believes it from 127.0.0.1, so any local client could pick the address the sign-in throttle counts)."""
    trusted = settings.trusted_proxies.strip()
    return {"proxy_headers": bool(trusted), "forwarded_allow_ips": trusted or None}


class _JsonFormatter(logging.Formatter):
    """One JSON object per line; a message that is already a JSON object is merged in."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "level": record.levelname.lower(),
            "logger": record.name,
            "time": self.formatTime(record, "%Y-%m-%dT%H:%M:%S"),
        }
        message = record.getMessage()
        try:
            parsed = json.loads(message)
        except ValueError:
            parsed = None
        entry.update(parsed if isinstance(parsed, dict) else {"message": message})
        if record.exc_info:
            entry["exception"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def _json_logs(level: str) -> None:
    """JSON lines on stderr: the service's loggers (`xmemo.*`) at `level`, the libraries' from warning up."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(_JsonFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(logging.WARNING)
    logging.getLogger("xmemo").setLevel(level.upper())
