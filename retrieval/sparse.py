"""BM25 sparse vectors, computed in-process by Qdrant's own BM25 so both index backends agree.

Documents carry term-frequency weights (k1, b, avg_len); the index applies IDF at query time
(Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond").
"""

from __future__ import annotations

from dataclasses import dataclass

from qdrant_edge import Bm25, Bm25Config

__all__ = ["BM25_AVG_LEN", "BM25_B", "BM25_K1", "SparseEncoder", "SparseVector"]

# k1 and b are the usual defaults (Robertson & Zaragoza 2009; Anserini uses 0.9/0.4 for its runs).
BM25_K1 = 1.2
BM25_B = 0.75
# Expected document length in tokens. Agent memories are short (a sentence or a turn, 10-40 tokens),
# so the 256 default of Qdrant would all but switch length normalisation off.
BM25_AVG_LEN = 64.0


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]


class SparseEncoder:
    """English BM25 with stemming and stop words; query terms weigh 1, documents their BM25 tf part."""

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B, avg_len: float = BM25_AVG_LEN) -> None:
        self.config = {"k1": k1, "b": b, "avg_len": avg_len}
        self._model = Bm25(Bm25Config(k=k1, b=b, avg_len=avg_len, language="english"))

    @property
    def name(self) -> str:
        return "bm25:k1={k1}:b={b}:avg_len={avg_len}".format(**self.config)

    def document(self, text: str) -> SparseVector:
        vector = self._model.embed_document(text)
        return SparseVector(tuple(vector.indices), tuple(vector.values))

    def query(self, text: str) -> SparseVector:
        vector = self._model.embed_query(text)
        return SparseVector(tuple(vector.indices), tuple(vector.values))
