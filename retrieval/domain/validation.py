"""Checks shared by every entry point (HTTP, MCP, CLI), raising the contract's ValidationError."""

from __future__ import annotations

import json
import re
from datetime import datetime
from typing import Any

from .errors import ValidationError
from .limits import (
    KEY_REGEX,
    MAX_CONTENT_BYTES,
    MAX_LABEL_CHARS,
    MAX_METADATA_BYTES,
    MAX_METADATA_DEPTH,
    MAX_QUERY_CHARS,
)
from .path_filter import PathPattern, path_pattern
from .records import KEY_PATTERN, MemoryType, format_time, parse_time

__all__ = [
    "BLANK_CLASS",
    "check_content",
    "check_field",
    "check_key",
    "check_metadata",
    "check_no_nul",
    "check_path",
    "check_path_filter",
    "check_query",
    "check_range",
    "check_unit",
    "holds_nul",
    "is_blank",
    "memory_type_or_auto",
    "optional_time",
    "whole",
]

# Blank, as one character class for patterns that JSON Schema (ECMA-262), pydantic (Rust regex) and
# Python all read alike (their shorthand \s classes differ at the edges: Python's also counts \x1c-\x1f):
# white space as ECMA-262 defines it, and the characters Unicode makes default ignorable, which render as
# nothing (zero-width spaces and joiners, direction marks, word joiners, variation selectors, fillers).
BLANK_CLASS = (
    "\\t\\n\\v\\f\\r \\u00a0\\u1680\\u2000-\\u200a\\u2028\\u2029\\u202f\\u205f\\u3000"
    "\\u00ad\\u034f\\u061c\\u115f\\u1160\\u17b4\\u17b5\\u180b-\\u180f\\u200b-\\u200f\\u202a-\\u202e"
    "\\u2060-\\u206f\\u3164\\ufe00-\\ufe0f\\ufeff\\uffa0\\ufff0-\\ufff8"
)
# Beyond the Basic Multilingual Plane (which an ECMA-262 pattern without the u flag cannot name), the
# default ignorables are checked here only: a text of them alone passes the schema and is refused by the
# use case, a 422 either way.
_BLANK = re.compile(f"[{BLANK_CLASS}\\U0001bca0-\\U0001bca3\\U0001d173-\\U0001d17a\\U000e0000-\\U000e0fff]*")


def is_blank(text: str) -> bool:
    return _BLANK.fullmatch(text) is not None


def check_no_nul(text: str, name: str) -> str:
    """Refuse the NUL character: PostgreSQL cannot store it in text, so both backends refuse it alike."""
    if "\x00" in text:
        raise ValidationError(f"{name} must not contain the NUL character (U+0000)")
    return text


def check_content(content: Any) -> str:
    if not isinstance(content, str) or is_blank(content):
        raise ValidationError("content must be a non-empty string")
    if len(content.encode("utf-8")) > MAX_CONTENT_BYTES:
        raise ValidationError(f"content exceeds {MAX_CONTENT_BYTES} bytes")
    return check_no_nul(content, "content")


def check_query(query: Any, name: str = "query") -> str:
    if not isinstance(query, str) or is_blank(query):
        raise ValidationError(f"{name} must be a non-empty string")
    if len(query) > MAX_QUERY_CHARS:
        raise ValidationError(f"{name} exceeds {MAX_QUERY_CHARS} characters")
    return check_no_nul(query, name).strip()


def check_path(path: Any, name: str = "path") -> str:
    if not isinstance(path, str) or is_blank(path):
        raise ValidationError(f"{name} must be a non-empty string")
    if len(path) > MAX_LABEL_CHARS or any(ord(c) < 32 for c in path):
        raise ValidationError(f"{name} must be at most {MAX_LABEL_CHARS} printable characters")
    return path.strip()


def check_path_filter(value: Any) -> PathPattern | None:
    """A `path_filter` parsed (path_filter.py); None, empty and a lone `%` filter nothing."""
    if value is None or value == "" or value == "%":
        return None
    return path_pattern(check_path(value, "path_filter"))


def check_field(value: Any, name: str, *, allow_empty: bool = True) -> str:
    if not isinstance(value, str) or (not allow_empty and is_blank(value)):
        raise ValidationError(f"{name} must be a {'non-empty ' if not allow_empty else ''}string")
    if len(value) > MAX_LABEL_CHARS or any(ord(c) < 32 for c in value):
        raise ValidationError(f"{name} must be at most {MAX_LABEL_CHARS} printable characters")
    return value


def check_key(key: Any, name: str) -> str:
    if not isinstance(key, str) or KEY_PATTERN.fullmatch(key) is None:
        raise ValidationError(f"{name} must match {KEY_REGEX}")
    return key


def whole(value: Any) -> Any:
    """An integer as JSON Schema reads one: 5 or 5.0 (taken as 5), never `true` or the text "5"; whatever else
    is passed as it is, for the check after to refuse. The one rule for every integer over REST, MCP and the CLI."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def check_range(value: Any, name: str, low: int, high: int) -> int:
    value = whole(value)
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise ValidationError(f"{name} must be an integer from {low} to {high}")
    return value


def check_unit(value: Any, name: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 <= float(value) <= 1.0:
        raise ValidationError(f"{name} must be a number from 0 to 1")
    return float(value)


def check_metadata(metadata: Any) -> dict[str, Any]:
    """A JSON object at most MAX_METADATA_DEPTH levels deep and MAX_METADATA_BYTES long as JSON."""
    if metadata is None:
        return {}
    if not isinstance(metadata, dict):
        raise ValidationError("metadata must be a JSON object")
    _check_depth(metadata)
    try:
        encoded = json.dumps(metadata, ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as error:
        raise ValidationError(f"metadata must be plain JSON: {error}") from error
    if len(encoded.encode("utf-8")) > MAX_METADATA_BYTES:
        raise ValidationError(f"metadata exceeds {MAX_METADATA_BYTES} bytes as JSON")
    if "\\u0000" in encoded and holds_nul(metadata):  # json.dumps writes a NUL as that escape
        raise ValidationError("metadata must not contain the NUL character (U+0000)")
    return dict(metadata)


def holds_nul(value: Any) -> bool:
    """Whether a text, or any key or text inside a JSON-like value, holds the NUL character."""
    pending: list[Any] = [value]
    while pending:
        value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return True
        elif isinstance(value, dict):
            pending.extend(value.keys())
            pending.extend(value.values())
        elif isinstance(value, (list, tuple)):
            pending.extend(value)
    return False


def _check_depth(metadata: dict[str, Any]) -> None:
    """Walk without recursion, so that no nesting can exhaust the stack before the check answers."""
    pending: list[tuple[Any, int]] = [(metadata, 1)]
    while pending:
        value, depth = pending.pop()
        if depth > MAX_METADATA_DEPTH:
            raise ValidationError(f"metadata is nested deeper than {MAX_METADATA_DEPTH} levels")
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else ()
        pending.extend((child, depth + 1) for child in children if isinstance(child, (dict, list)))


def optional_time(value: Any, name: str) -> str | None:
    """ISO 8601 text with a zone, or an aware datetime (as the HTTP schemas parse it), as stored text."""
    if value is None or value == "":
        return None
    if isinstance(value, datetime):
        if value.tzinfo is None:
            raise ValidationError(f"{name} must carry a time zone")
        try:
            return format_time(value)
        except OverflowError as error:
            raise ValidationError(f"{name} is out of range: {value.isoformat()}") from error
    if not isinstance(value, str):
        raise ValidationError(f"{name} must be an ISO 8601 string")
    return format_time(parse_time(value, field_name=name))


def memory_type_or_auto(value: Any) -> MemoryType | None:
    """None stands for `auto`: the server chooses."""
    if value is None or value == "auto":
        return None
    try:
        return MemoryType(value)
    except ValueError as error:
        allowed = ", ".join([t.value for t in MemoryType] + ["auto"])
        raise ValidationError(f"memory_type must be one of {allowed}") from error
