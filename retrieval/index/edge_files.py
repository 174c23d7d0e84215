"""The files of an Edge shard on disk (index/edge.py): its generations (`index`, `index.2`, ...), the
pointer to the one in use (`index.current`), the counts a clean close leaves (`index.fresh`), and
what a shard's own config says of its dense vectors (datatype and layout)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import qdrant_edge as qe

from .base import DENSE

__all__ = [
    "DATATYPES",
    "builds_counts",
    "current_generation",
    "fresh_file",
    "generations",
    "next_generation",
    "pointer_file",
    "remove_shards",
    "shards_exist",
    "stored_datatype",
    "stored_layout",
]

# New shards keep their vectors as float16 by default (`index_vector_datatype`): 39 % less resident
# memory and 29 % less disk than float32 at 200,000 points, for no measured loss of recall
# (docs/evaluation.md, "What Qdrant Edge's settings change"). Edge refuses to open a shard with
# another datatype than it was made with, so a shard keeps its own (`stored_datatype`): a float32
# shard of an earlier release opens as such and takes the setting when it is next built (the upkeep's
# rebuild, `xmemo reindex`).
DATATYPES = {
    "float32": qe.VectorStorageDatatype.Float32,
    "float16": qe.VectorStorageDatatype.Float16,
    "uint8": qe.VectorStorageDatatype.Uint8,
}


def pointer_file(home: Path) -> Path:
    return home.with_name(home.name + ".current")


def fresh_file(home: Path) -> Path:
    """Where a clean close leaves `writes_since_build` (the shard's own counts miss deletes and updates)."""
    return home.with_name(home.name + ".fresh")


def builds_counts(home: Path) -> list[Path]:
    """The counts a build child's own close left beside its generation (`index.3.fresh`): the server keeps
    its count in `home`'s file alone, so these are never read and go once the build is over."""
    found = []
    for path in home.parent.glob(home.name + ".*.fresh"):
        if path.name[len(home.name) + 1 : -len(".fresh")].isdigit():
            found.append(path)
    return found


def generations(home: Path) -> list[Path]:
    """Every generation directory of the shard at `home`, the first (`home` itself) included."""
    found = [home] if home.exists() else []
    for path in home.parent.glob(home.name + ".*"):
        suffix = path.name[len(home.name) + 1 :]
        if suffix.isdigit() and path.is_dir():
            found.append(path)
    return sorted(found, key=lambda p: int(p.name[len(home.name) + 1 :] or 0) if p != home else 0)


def next_generation(home: Path) -> Path:
    """Where the next generation of the shard at `home` is built: one past the highest there is
    (`index.2` when there is only the first)."""
    last = max((int(p.name[len(home.name) + 1 :]) for p in generations(home) if p != home), default=1)
    return home.with_name(f"{home.name}.{last + 1}")


def current_generation(home: Path) -> Path:
    try:
        name = pointer_file(home).read_text(encoding="utf-8").strip()
    except FileNotFoundError:
        return home
    generation = name[len(home.name) + 1 :] if name.startswith(home.name + ".") else ""
    if not generation.isdigit():  # only a generation of this shard, never another path
        return home
    chosen = home.with_name(name)
    return chosen if chosen.is_dir() else home


def _stored_vectors(path: Path) -> dict[str, Any] | None:
    """The vector params of the shard at `path` (its `edge_config.json`); None for a shard not created
    yet or whose config is unreadable (opening it then fails as damaged, and the engine rebuilds it)."""
    try:
        vectors = json.loads((path / "edge_config.json").read_text(encoding="utf-8"))["vectors"]
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return vectors if isinstance(vectors, dict) and isinstance(vectors.get(DENSE), dict) else None


def stored_datatype(path: Path) -> str | None:
    """The dense vectors' datatype of the shard at `path` (a config without one is Edge's default,
    float32); None for a shard not created yet or whose config is unreadable."""
    vectors = _stored_vectors(path)
    if vectors is None:
        return None
    named = str(vectors[DENSE].get("datatype", "float32")).lower()
    return named if named in DATATYPES else None


def stored_layout(path: Path) -> str | None:
    """The dense layout of the shard at `path` (base.py LAYOUTS); None for one not created yet."""
    vectors = _stored_vectors(path)
    if vectors is None:
        return None
    return "multivector" if "multivector_config" in vectors[DENSE] else "rescore"


def shards_exist(home: Path) -> bool:
    return bool(generations(home))


def remove_shards(home: Path) -> None:
    """Delete every generation of the shard at `home` and the pointer to the current one."""
    for path in generations(home):
        shutil.rmtree(path, ignore_errors=True)
    pointer_file(home).unlink(missing_ok=True)
    for path in [fresh_file(home), *builds_counts(home)]:
        path.unlink(missing_ok=True)
