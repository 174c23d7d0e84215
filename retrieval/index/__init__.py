"""The vector index port and its two backends: Qdrant Edge (embedded) and a Qdrant server.

`ServerIndex` is loaded on first use: importing qdrant-client takes 1-2 s, and only the server
backend needs it (`open_index` picks the backend from the settings).
"""

from typing import TYPE_CHECKING, Any

from .base import (
    DENSE,
    KEYWORD_FIELDS,
    RANKING_FIELDS,
    SEARCH_EF,
    SPARSE,
    UNITS,
    IndexFilter,
    IndexHit,
    IndexPoint,
    VectorIndex,
    payload_for,
    point_for,
)
from .edge import EdgeIndex
from .edge_files import DATATYPES as EDGE_DATATYPES
from .edge_files import remove_shards, shards_exist
from .factory import open_index

if TYPE_CHECKING:
    from .server import ServerIndex, counts_idf_per_corpus

__all__ = [
    "DENSE",
    "EDGE_DATATYPES",
    "KEYWORD_FIELDS",
    "RANKING_FIELDS",
    "SEARCH_EF",
    "SPARSE",
    "UNITS",
    "EdgeIndex",
    "IndexFilter",
    "IndexHit",
    "IndexPoint",
    "ServerIndex",
    "VectorIndex",
    "counts_idf_per_corpus",
    "open_index",
    "payload_for",
    "point_for",
    "remove_shards",
    "shards_exist",
]


def __getattr__(name: str) -> Any:
    if name in ("ServerIndex", "counts_idf_per_corpus"):
        from . import server

        return getattr(server, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
