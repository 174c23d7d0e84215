"""Every setting is read from its environment variable, and a value outside its bounds is refused, for
the three settings objects (retrieval, compactor, service), as mcp-server-qdrant tests its own."""

from __future__ import annotations

import json
import typing
from pathlib import Path
from typing import Any

import annotated_types
import pytest
from pydantic import ValidationError
from pydantic.fields import FieldInfo
from pydantic_settings import BaseSettings

from compactor import ReflectSettings
from retrieval import RetrievalSettings
from service.settings import ServiceSettings

NESTED = {"retrieval", "reflect"}  # ServiceSettings holds the other two; their variables are theirs


def _variable(model: type[BaseSettings], name: str, info: FieldInfo) -> str:
    alias = info.validation_alias
    return alias if isinstance(alias, str) else f"{model.model_config.get('env_prefix', '')}{name}".upper()


MARKS = {
    "ge": annotated_types.Ge,
    "gt": annotated_types.Gt,
    "le": annotated_types.Le,
    "lt": annotated_types.Lt,
    "min_length": annotated_types.MinLen,
}


def _bounds(info: FieldInfo) -> dict[str, float]:
    return {
        kind: getattr(mark, kind) for mark in info.metadata for kind, type_ in MARKS.items() if isinstance(mark, type_)
    }


def _other_value(info: FieldInfo) -> tuple[str, Any]:
    """A valid value other than the default, as the environment spells it, and as the field reads it."""
    kind = info.annotation
    args = [a for a in typing.get_args(kind) if a is not type(None)]
    if typing.get_origin(kind) is typing.Literal:
        choice = next(a for a in typing.get_args(kind) if a != info.default)
        return str(choice), choice
    base = args[0] if args and typing.get_origin(kind) is not tuple else kind
    if typing.get_origin(base) is typing.Literal:
        choice = next(a for a in typing.get_args(base) if a != info.default)
        return str(choice), choice
    bounds = _bounds(info)
    if base is bool:
        return ("false", False) if info.default else ("true", True)
    if base is int:
        value = int(bounds.get("ge", bounds.get("gt", 0) + 1)) + 1
        value = min(value, int(bounds.get("le", value)))
        return str(value), value
    if base is float:
        low, high = bounds.get("ge", bounds.get("gt", 0.0)), bounds.get("le", bounds.get("lt", 10.0))
        value = round(low + (high - low) / 3, 4) if high != low else low
        return str(value), value
    if base is Path:
        return "/tmp/xmemo-settings-test", Path("/tmp/xmemo-settings-test")
    if typing.get_origin(kind) is tuple:
        return json.dumps(["Latin", "Han"]), ("Latin", "Han")
    if base is str:
        value = "postgresql://u@127.0.0.1:5432/db" if "PostgreSQL" in str(info.description) else "x" * 20
        return value, value
    raise AssertionError(f"no sample value for {kind}")


SETTINGS = [RetrievalSettings, ReflectSettings, ServiceSettings]
FIELDS = [
    (model, name, info)
    for model in SETTINGS
    for name, info in model.model_fields.items()
    if not (model is ServiceSettings and name in NESTED)
]


@pytest.mark.parametrize(("model", "name", "info"), FIELDS, ids=[f"{m.__name__}.{n}" for m, n, _ in FIELDS])
def test_each_variable_sets_its_field(model: type[BaseSettings], name: str, info: FieldInfo, monkeypatch) -> None:
    text, expected = _other_value(info)
    monkeypatch.setenv(_variable(model, name, info), text)
    assert getattr(model(), name) == expected


BOUNDED = [(m, n, i, k, v) for m, n, i in FIELDS for k, v in _bounds(i).items()]


@pytest.mark.parametrize(
    ("model", "name", "info", "bound", "limit"), BOUNDED, ids=[f"{m.__name__}.{n}.{k}" for m, n, _, k, _ in BOUNDED]
)
def test_a_value_past_a_bound_is_refused(
    model: type[BaseSettings], name: str, info: FieldInfo, bound: str, limit: float, monkeypatch
) -> None:
    past = {"ge": limit - 1, "gt": limit, "le": limit + 1, "lt": limit}[bound] if bound != "min_length" else None
    text = "x" * (int(limit) - 1) if past is None else str(int(past) if float(past).is_integer() else past)
    monkeypatch.setenv(_variable(model, name, info), text)
    with pytest.raises(ValidationError, match=name):
        model()


def test_a_database_url_of_another_scheme_is_refused(monkeypatch) -> None:
    monkeypatch.setenv("XMEMO_DATABASE_URL", "mysql://u@host/db")
    with pytest.raises(ValidationError, match="database_url must start with one of"):
        RetrievalSettings()


def test_the_walk_covers_every_field_and_finds_bounds() -> None:
    assert len(FIELDS) == sum(len(m.model_fields) for m in SETTINGS) - len(NESTED)
    assert ("ge", 1) in _bounds(RetrievalSettings.model_fields["embedding_batch_size"]).items()
    assert _variable(RetrievalSettings, "qdrant_url", RetrievalSettings.model_fields["qdrant_url"]) == "QDRANT_URL"
    assert len(BOUNDED) >= 40
