"""The record's one definition, `Memory`'s dataclass fields, mapped to SQL columns and rows.

The table (`schema.memories`), the row a write stores and the record a read returns are all derived
from `dataclasses.fields(Memory)` here, so a field added to the record reaches every one of them
(a round-trip property test in tests/retrieval/storage/test_store.py holds them together). The JSON lines of
export and import come from `Memory.to_dict`, derived from the same fields.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any

from sqlalchemy import Column, Float, Integer, String, Text
from sqlalchemy.types import TypeEngine

from ..domain import Memory, MemoryStatus, MemoryType

__all__ = ["RECORD_FIELDS", "STORE_ONLY", "memory_columns", "memory_from_row", "memory_from_values", "memory_to_row"]

RECORD_FIELDS: tuple[str, ...] = tuple(f.name for f in fields(Memory))

# Columns the store keeps beside the record: the embedding-cache key of its text (domain/texts.py
# embed_digest), and the record version the index holds (engine: differs from `version` until synced).
STORE_ONLY = ("embed_sha256", "indexed_version")


def _dump_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


# How a field's annotation is stored: (SQL type, encode, decode). Texts that may be long are TEXT.
_Codec = tuple[Callable[[], TypeEngine[Any]], Callable[[Any], Any], Callable[[Any], Any]]
_SAME: Callable[[Any], Any] = lambda value: value
_CODECS: Mapping[str, _Codec] = {
    "str": (String, _SAME, _SAME),
    "float": (Float, _SAME, _SAME),
    "int": (Integer, _SAME, _SAME),
    "MemoryType": (String, lambda v: v.value, MemoryType),
    "MemoryStatus": (String, lambda v: v.value, MemoryStatus),
    "dict[str, Any]": (Text, _dump_json, json.loads),
    "tuple[str, ...]": (Text, lambda v: json.dumps(list(v)), lambda v: tuple(json.loads(v))),
}
_LONG_TEXT = {"content", "context"}  # TEXT rather than VARCHAR (the same on SQLite, kept for PostgreSQL)


def _codec(annotation: str) -> tuple[_Codec, bool]:
    """The codec of an annotation (`from __future__ import annotations` keeps them as text) and nullability."""
    nullable = annotation.endswith(" | None")
    return _CODECS[annotation.removesuffix(" | None")], nullable


_FIELD_CODECS = {f.name: _codec(str(f.type)) for f in fields(Memory)}
# (decode, nullable) per field in RECORD_FIELDS order; None where the stored value is the value.
_DECODERS = tuple(
    (None if decode is _SAME else decode, nullable) for (_, _, decode), nullable in _FIELD_CODECS.values()
)


def memory_columns() -> list[Column[Any]]:
    """The `memories` columns: one per record field (the id first, as its key), then STORE_ONLY."""
    columns: list[Column[Any]] = []
    for name in RECORD_FIELDS:
        (sql_type, _, _), nullable = _FIELD_CODECS[name]
        kind = Text() if name in _LONG_TEXT else String(36) if name == "id" else sql_type()
        columns.append(Column(name, kind, primary_key=name == "id", nullable=nullable))
    columns.append(Column("embed_sha256", String(64), nullable=False))
    columns.append(Column("indexed_version", Integer, nullable=True))
    return columns


def memory_to_row(memory: Memory) -> dict[str, Any]:
    """The record's columns (not STORE_ONLY) as a write stores them."""
    row: dict[str, Any] = {}
    for name in RECORD_FIELDS:
        (_, encode, _), nullable = _FIELD_CODECS[name]
        value = getattr(memory, name)
        row[name] = None if value is None and nullable else encode(value)
    return row


def memory_from_row(row: Mapping[Any, Any]) -> Memory:
    """The record a stored row holds."""
    return memory_from_values([row[name] for name in RECORD_FIELDS])


def memory_from_values(values: Sequence[Any]) -> Memory:
    """The record from a stored row's values in RECORD_FIELDS order (the table's own column order).

    A recall reads 16 rows; decoding them by name through SQLAlchemy's row mapping cost 11 us a row."""
    return Memory(
        *[
            value if decode is None or (value is None and nullable) else decode(value)
            for (decode, nullable), value in zip(_DECODERS, values, strict=True)
        ]
    )
