"""The management list's narrowing beyond visibility: path prefix, one metadata key, text, a time range
and the cursor, as SQL clauses for either dialect (retrieval.manage builds a validated Listing)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from sqlalchemy import String as SqlString
from sqlalchemy import and_, or_
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.functions import FunctionElement

from .schema import memories

__all__ = ["Listing", "json_field"]


class _JsonText(FunctionElement[str]):
    """The text of one top-level key of a JSON column, compiled per dialect below."""

    type = SqlString()
    name = "json_text"
    inherit_cache = True


@compiles(_JsonText, "sqlite")
def _json_text_sqlite(element: _JsonText, compiler: Any, **kw: Any) -> str:
    column, key = list(element.clauses)
    return f"CAST(json_extract({compiler.process(column, **kw)}, '$.' || {compiler.process(key, **kw)}) AS VARCHAR)"


@compiles(_JsonText, "postgresql")
def _json_text_postgresql(element: _JsonText, compiler: Any, **kw: Any) -> str:
    column, key = list(element.clauses)
    return f"(CAST({compiler.process(column, **kw)} AS JSONB) ->> CAST({compiler.process(key, **kw)} AS TEXT))"


def _json_key(name: str) -> str:
    """A key as the SQLite path names it (quoted); PostgreSQL's ->> takes it bare (see _json_field)."""
    return json.dumps(name)


def json_field(column: Any, key: str, dialect: str) -> Any:
    return _JsonText(column, _json_key(key) if dialect == "sqlite" else key)


@dataclass(frozen=True, slots=True)
class Listing:
    """The management list's narrowing beyond visibility (retrieval.manage builds it validated).

    `order` is the time field the list runs by, newest first, id breaking ties; `after` is the (that
    time, id) of the last memory of the previous page.
    """

    path_prefix: str | None = None
    metadata: tuple[str, str] | None = None
    text: str | None = None
    time_field: str = "created_at"
    since: str | None = None
    until: str | None = None
    after: tuple[str, str] | None = None
    unexpired_at: str | None = None  # only memories not past their expires_at at this time
    order: str = "created_at"

    def clauses(self, dialect: str) -> list[Any]:
        c = memories.c
        found: list[Any] = []
        if self.path_prefix:
            found.append(c.path.startswith(self.path_prefix, autoescape=True))
        if self.metadata is not None:
            key, value = self.metadata
            found.append(json_field(c.metadata, key, dialect) == value)
        if self.text:
            found.append(c.content.contains(self.text, autoescape=True))
        moment = c[self.time_field]
        if self.since:
            found.append(moment >= self.since)
        if self.until:
            found.append(moment < self.until)
        if self.unexpired_at is not None:
            found.append(or_(c.expires_at.is_(None), c.expires_at > self.unexpired_at))
        if self.after is not None:
            at, last_id = self.after
            ordered = c[self.order]
            found.append(or_(ordered < at, and_(ordered == at, c.id < last_id)))
        return found
