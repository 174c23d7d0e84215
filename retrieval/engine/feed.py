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
        memory's team, else its owner), encoding the rest. Their units are encoded in the same call
        and kept in the cache, so that the write that follows finds them there: encoded under the
        write lock, they made every writer wait for the model (59 % of a loaded `remember`'s time)."""
        return self.vectors_and_units(memories)[0]

    def units_for(self, memories: Sequence[Memory]) -> list[np.ndarray | None]:
        """The vectors of each memory's dense units (domain/texts.py unit_texts), from the cache or
        encoded; None for a memory matched by its whole text alone."""
        per_memory = self._unit_texts(memories)
        return self._split(per_memory, self._encode(memories, per_memory, whole=False))

    def vectors_and_units(self, memories: Sequence[Memory]) -> tuple[np.ndarray, list[np.ndarray | None]]:
        """Whole-text vectors and unit vectors of these memories, asked of the cache and the model at once."""
        per_memory = self._unit_texts(memories)
        vectors = self._encode(memories, per_memory, whole=True)
        return vectors[: len(memories)], self._split(per_memory, vectors[len(memories) :])

    def _unit_texts(self, memories: Sequence[Memory]) -> list[list[str]]:
        if self.settings.dense_units == "whole":
            return [[] for _ in memories]
        pairs = self.settings.dense_units == "sentences+pairs"
        return [unit_texts(m, pairs) for m in memories]

    def _encode(self, memories: Sequence[Memory], per_memory: list[list[str]], *, whole: bool) -> np.ndarray:
        """The vectors of the whole texts (when `whole`), then of every unit in order."""
        texts = [embedding_text(m) for m in memories] if whole else []
        digests = [embed_digest(m) for m in memories] if whole else []
        for memory, units in zip(memories, per_memory, strict=True):
            texts += units
            digests += [memory_digest(memory, text) for text in units]
        if whole:
            self.space.check()
        with map_sql_faults("the embedding cache failed"):
            return self.embedder.embed_with_digests(texts, digests)

    @staticmethod
    def _split(per_memory: list[list[str]], vectors: np.ndarray) -> list[np.ndarray | None]:
        found: list[np.ndarray | None] = []
        start = 0
        for units in per_memory:
            found.append(vectors[start : start + len(units)] if units else None)
            start += len(units)
        return found

    def points(self, memories: Sequence[Memory], dense: np.ndarray | None = None) -> list[IndexPoint]:
        """The index points of these memories; `dense` when their whole-text vectors are at hand."""
        if dense is None:
            dense, units = self.vectors_and_units(memories)
        else:
            units = self.units_for(memories)
        return [
            point_for(m, dense[i], self.sparse.document(bm25_text(m), m.semantic_key), units[i])
            for i, m in enumerate(memories)
        ]
