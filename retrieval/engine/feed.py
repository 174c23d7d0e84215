"""What the index holds for a memory, made from the record and the embedding cache: the engine's
writes and the rebuild in another process (engine/rebuild.py) make points the same way."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ..domain import Memory, RetrievalSettings, bm25_text, embed_digest, embedding_text, memory_digest, unit_texts
from ..encoding import CachedEmbedder, SparseEncoder
from ..index import IndexPoint, point_for
from ..storage import FreeSpace, map_sql_faults

__all__ = ["IndexFeed"]


class IndexFeed:
    """Dense vectors (the cache first, the model for the rest), BM25 vectors and payloads of memories."""

    def __init__(
        self, settings: RetrievalSettings, embedder: CachedEmbedder, sparse: SparseEncoder, space: FreeSpace
    ) -> None:
        self.settings = settings
        self.embedder = embedder
        self.sparse = sparse
        self.space = space

    def vectors_for(self, memories: Sequence[Memory]) -> np.ndarray:
        """Dense vectors of these memories from their tenants' cache entries (domain/texts.py: a team
        memory's team, else its owner), encoding the rest."""
        self.space.check()
        texts = [embedding_text(m) for m in memories]
        with map_sql_faults("the embedding cache failed"):
            return self.embedder.embed_with_digests(texts, [embed_digest(m) for m in memories])

    def units_for(self, memories: Sequence[Memory]) -> list[np.ndarray | None]:
        """The vectors of each memory's dense units (domain/texts.py unit_texts), from the cache or
        encoded; None for a memory matched by its whole text alone."""
        if self.settings.dense_units == "whole":
            return [None] * len(memories)
        pairs = self.settings.dense_units == "sentences+pairs"
        per_memory = [unit_texts(m, pairs) for m in memories]
        texts = [text for units in per_memory for text in units]
        if not texts:
            return [None] * len(memories)
        digests = [memory_digest(m, text) for m, units in zip(memories, per_memory, strict=True) for text in units]
        with map_sql_faults("the embedding cache failed"):
            vectors = self.embedder.embed_with_digests(texts, digests)
        found: list[np.ndarray | None] = []
        start = 0
        for units in per_memory:
            found.append(vectors[start : start + len(units)] if units else None)
            start += len(units)
        return found

    def points(self, memories: Sequence[Memory], dense: np.ndarray | None = None) -> list[IndexPoint]:
        """The index points of these memories; `dense` when their whole-text vectors are at hand."""
        if dense is None:
            dense = self.vectors_for(memories)
        units = self.units_for(memories)
        return [
            point_for(m, dense[i], self.sparse.document(bm25_text(m), m.semantic_key), units[i])
            for i, m in enumerate(memories)
        ]
