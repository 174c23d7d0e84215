"""Path patterns: the one meaning of `path_filter`, in memory and in SQL, for recall and reflect alike.

`%` matches any run of characters (none included); every other character, `_` and `\\` included,
matches only itself, and case counts: `projects/%` never matches `Projects/Other`. Matching takes
time linear in the path for a given pattern (each literal part is found once, left to right), so no
pattern can stall the server; the SQL twin compiles to GLOB on SQLite and LIKE with every other
wildcard escaped on PostgreSQL, both case-sensitive and both polynomial.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Boolean, ColumnElement
from sqlalchemy.ext.compiler import compiles
from sqlalchemy.sql.expression import FunctionElement, literal

from .errors import ValidationError
from .limits import MAX_LABEL_CHARS, MAX_WILDCARDS

__all__ = ["PathPattern", "path_pattern"]

WILDCARD = "%"


@dataclass(frozen=True, slots=True)
class PathPattern:
    """A parsed pattern: the literal parts between wildcards, in order."""

    text: str
    parts: tuple[str, ...]

    @property
    def exact(self) -> str | None:
        """The one path it matches, when it has no wildcard."""
        return self.parts[0] if len(self.parts) == 1 else None

    def matches(self, path: str) -> bool:
        """Greedy leftmost matching: first part a prefix, last a suffix, the middle ones in order."""
        if len(self.parts) == 1:
            return path == self.parts[0]
        head, *middle, tail = self.parts
        if len(path) < len(head) + len(tail) or not path.startswith(head) or not path.endswith(tail):
            return False
        position, end = len(head), len(path) - len(tail)
        for part in middle:
            found = path.find(part, position, end)
            if found < 0:
                return False
            position = found + len(part)
        return True

    def clause(self, column: ColumnElement[Any]) -> ColumnElement[bool]:
        """The SQL condition that holds exactly when `matches(column)` does."""
        if self.exact is not None:
            return column == self.exact
        return _PathMatch(column, literal(_glob(self.text)), literal(_like(self.text)))


def path_pattern(text: str) -> PathPattern:
    """Parse a validated label into a pattern; too many wildcards is a ValidationError."""
    if len(text) > MAX_LABEL_CHARS:
        raise ValidationError(f"path_filter must be at most {MAX_LABEL_CHARS} characters")
    parts = tuple(text.split(WILDCARD))
    if len(parts) - 1 > MAX_WILDCARDS:
        raise ValidationError(f"path_filter may hold at most {MAX_WILDCARDS} '%' wildcards")
    return PathPattern(text, parts)


class _PathMatch(FunctionElement[bool]):
    """`column` matches the pattern, given in both dialects' forms (bound values, so the statement
    cache keeps one compiled form per dialect); compiled per dialect below."""

    type = Boolean()
    name = "path_match"
    inherit_cache = True


def _glob(pattern: str) -> str:
    """SQLite GLOB is case-sensitive; `*`, `?` and `[` are its wildcards, escaped as one-character classes."""
    escaped = "".join(f"[{c}]" if c in "*?[" else c for c in pattern)
    return escaped.replace(WILDCARD, "*")


def _like(pattern: str) -> str:
    """LIKE with `\\` as escape: the escape itself and `_` escaped, `%` kept as the wildcard."""
    return pattern.replace("\\", "\\\\").replace("_", "\\_")


@compiles(_PathMatch, "sqlite")
def _compile_sqlite(element: _PathMatch, compiler: Any, **kw: Any) -> str:
    column, glob, _ = list(element.clauses)
    return f"{compiler.process(column, **kw)} GLOB {compiler.process(glob, **kw)}"


@compiles(_PathMatch)
def _compile_default(element: _PathMatch, compiler: Any, **kw: Any) -> str:
    column, _, like = list(element.clauses)
    return f"{compiler.process(column, **kw)} LIKE {compiler.process(like, **kw)} ESCAPE '\\'"
