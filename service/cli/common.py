"""What every `xmemo` command shares: settings from the global options, opening the stores, JSON output,
and turning domain errors into clean messages and the contract's exit codes (retrieval/domain/errors.py)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

import click
from pydantic import BaseModel

from retrieval import MemoryEngine, RetrievalSettings, StoreError, ValidationError, XMemoError
from retrieval.domain import check_field
from retrieval.storage import secure_data_dir

__all__ = [
    "EXIT_STORE",
    "EXIT_USER",
    "OWNER",
    "XmemoGroup",
    "count_lines",
    "emit",
    "fail",
    "open_engine",
    "open_private",
    "read_jsonl",
    "settings_of",
]

EXIT_USER, EXIT_STORE = ValidationError.exit_code, StoreError.exit_code


def fail(message: str, code: int) -> NoReturn:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


class _UsageError(click.UsageError):
    exit_code = EXIT_USER  # a misspelled option is a user error (1); 2 is an auth error's code


def _user_error(error: click.UsageError) -> click.UsageError:
    """The same usage error (its message, and the context that prints the usage line), exiting 1. The
    message is click's whole text: a missing argument's `message` is empty, `format_message` names it."""
    return _UsageError(error.format_message(), error.ctx)


class _Label(click.ParamType[str]):
    """An owner (or any label) on the command line, under the rule the API applies to it (check_field):
    not blank, at most MAX_LABEL_CHARS characters, no control character; else a usage error (exit 1)."""

    name = "label"

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> str:
        try:
            return check_field(value, param.name if param is not None and param.name else "label", allow_empty=False)
        except ValidationError as error:
            self.fail(error.message, param, ctx)


OWNER = _Label()


class XmemoGroup(click.Group):
    """Turns domain errors into clean messages and the contract's exit codes."""

    def make_context(self, *args: Any, **kwargs: Any) -> click.Context:
        try:
            return super().make_context(*args, **kwargs)
        except click.UsageError as error:
            raise _user_error(error) from None

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:  # raised while a subcommand parses its arguments
            raise _user_error(error) from None
        except XMemoError as error:
            fail(error.message, error.exit_code)


def settings_of(ctx: click.Context, *, existing: bool = False) -> RetrievalSettings:
    """The retrieval settings of the global options (--data-dir, --qdrant-url, --database-url) and the env.

    `existing`: the command reads or changes what is stored, so a data dir holding the system of record
    (SQLite: no --database-url) must be there already; a mistyped --data-dir is told as such (exit 1)
    instead of made into a new, empty store that answers "no match"."""
    options = ctx.find_root().params
    overrides: dict[str, Any] = {}
    if options.get("data_dir"):
        overrides["data_dir"] = Path(options["data_dir"])
    if options.get("qdrant_url"):
        overrides["qdrant_url"] = options["qdrant_url"]
    if options.get("database_url"):
        overrides["database_url"] = options["database_url"]
    try:
        settings = RetrievalSettings(**overrides)
    except ValueError as error:  # pydantic's ValidationError: a malformed option or variable
        raise ValidationError(f"invalid settings: {error}") from error
    if existing and settings.database_url is None and not settings.data_dir.is_dir():
        raise ValidationError(
            f"no data dir at {settings.data_dir}: nothing is stored there yet "
            "(--data-dir or XMEMO_DATA_DIR names the one to use; remember, import or serve make one)"
        )
    return settings


def open_engine(ctx: click.Context, *, existing: bool = False, **kwargs: Any) -> MemoryEngine:
    """The engine on the data dir; `existing`: as in `settings_of`."""
    return open_private(settings_of(ctx, existing=existing), **kwargs)


def open_private(settings: RetrievalSettings, **kwargs: Any) -> MemoryEngine:
    """Open the stores of a data dir, made private first (what the CLI creates is, see `cli`)."""
    secure_data_dir(settings.data_dir)
    return MemoryEngine(settings, **kwargs)


def emit(document: Any) -> None:
    """One JSON document on stdout; a response model (service/routes/responses.py) as the API writes it."""
    if isinstance(document, BaseModel):
        document = document.model_dump(mode="json")
    click.echo(json.dumps(document, ensure_ascii=False, indent=2))


def read_jsonl(path: Path) -> Iterator[dict[str, Any]]:
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


def count_lines(path: Path) -> int:
    with path.open("rb") as handle:
        return sum(1 for line in handle if line.strip())
