"""Choose the index backend from the settings: a Qdrant URL means the server, else Qdrant Edge."""

from __future__ import annotations

from ..domain import RetrievalSettings
from .base import VectorIndex

__all__ = ["open_index"]


def open_index(settings: RetrievalSettings, dimension: int) -> VectorIndex:
    if settings.qdrant_url:
        from .server import ServerIndex

        if settings.qdrant_url == ":memory:" or settings.qdrant_url.startswith("path:"):
            location = None if settings.qdrant_url.startswith("path:") else ":memory:"
            path = settings.qdrant_url.removeprefix("path:") if location is None else None
            return ServerIndex(
                dimension,
                settings.qdrant_collection,
                location=location,
                path=path,
                datatype=settings.index_vector_datatype,
            )
        return ServerIndex(
            dimension,
            settings.qdrant_collection,
            url=settings.qdrant_url,
            api_key=settings.qdrant_api_key,
            datatype=settings.index_vector_datatype,
        )
    from .edge import EdgeIndex

    return EdgeIndex(settings.edge_path, dimension, settings.edge_search_threads, settings.index_vector_datatype)
