"""The vector index port and its two backends: Qdrant Edge (embedded) and a Qdrant server."""

from .base import IndexFilter, IndexHit, IndexPoint, VectorIndex, point_for
from .factory import open_index

__all__ = ["IndexFilter", "IndexHit", "IndexPoint", "VectorIndex", "open_index", "point_for"]
