"""BM25 sparse vectors, computed in-process by Qdrant's own BM25 so both index backends agree.

Documents carry term-frequency weights (k1, b, avg_len); the index applies IDF at query time,
counted over the spaces the search reads, never the whole index (index/base.py VectorIndex.search;
Robertson & Zaragoza 2009, "The Probabilistic Relevance Framework: BM25 and Beyond").

Words come from Qdrant's multilingual tokenizer: English is stemmed and stop words dropped as before,
and Chinese and Japanese are segmented into words (the English tokenizer made a Chinese sentence two
terms). That tokenizer drops bare numbers and splits identifiers at their punctuation, so identifiers
are added as terms of their own: a ticket `PAY-2291`, a version `4.12.1`, a key `bug:PAY-2291` or a
path is also one whole term (and a key or path each of its `:` or `/` segments), and every number in
a token is a term too. Whole terms are spelled as plain words (`PAY-2291` -> `xpayh2291`) so the same
BM25 model weighs them with the rest of the text. A query naming `PAY-2291` then matches the memory
about it on `pay`, `2291` and the whole term, and a look-alike `NOT-2291` on `2291` alone. A memory's
`semantic_key` is indexed with its terms twice: an exact key match weighs more than a mention.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from qdrant_edge import Bm25, Bm25Config, TokenizerType

__all__ = ["BM25_AVG_LEN", "BM25_B", "BM25_K1", "SparseEncoder", "SparseVector", "identifier_terms"]

# k1 and b are the usual defaults (Robertson & Zaragoza 2009; Anserini uses 0.9/0.4 for its runs).
BM25_K1 = 1.2
BM25_B = 0.75
# Expected document length in tokens. Agent memories are short (a sentence or a turn, 10-40 tokens),
# so the 256 default of Qdrant would all but switch length normalisation off.
BM25_AVG_LEN = 64.0
# A token holding a digit (2291, p53, v2), or word characters joined by - _ . : / (PAY-2291, 4.12.1).
# Anchored at a word's start: unanchored, findall retried inside every long run of letters, which
# made 16,000 letters take 7.7 s; anchored, 64 KiB takes milliseconds.
_IDENTIFIER = re.compile(r"(?<![0-9A-Za-z])(?:[0-9A-Za-z]+(?:[-_.:/][0-9A-Za-z]+)+|[A-Za-z]*[0-9][0-9A-Za-z]*)")
_SEGMENT = re.compile(r"[:/]")
_DIGITS = re.compile(r"[0-9]+")
# Punctuation spelled as letters, so `4.12.1` and `41.2.1` stay different whole terms.
_SPELLING = str.maketrans({"-": "h", "_": "u", ".": "d", ":": "c", "/": "s"})


def identifier_terms(text: str) -> list[str]:
    """The extra terms of `text`: each identifier whole (and its key or path segments), each number."""
    terms: list[str] = []
    for token in _IDENTIFIER.findall(text):
        token = token.lower()
        wholes = [token] + [s for s in _SEGMENT.split(token) if s != token and not s.isalnum()]
        terms += ["x" + whole.translate(_SPELLING) for whole in wholes if not whole.isalnum()]
        terms += ["n" + digits for digits in _DIGITS.findall(token)]
    return terms


@dataclass(frozen=True, slots=True)
class SparseVector:
    indices: tuple[int, ...]
    values: tuple[float, ...]


class SparseEncoder:
    """Multilingual BM25 with identifier terms; query terms weigh 1, documents their BM25 tf part."""

    def __init__(self, k1: float = BM25_K1, b: float = BM25_B, avg_len: float = BM25_AVG_LEN) -> None:
        self.config = {"k1": k1, "b": b, "avg_len": avg_len}
        self._model = Bm25(
            Bm25Config(k=k1, b=b, avg_len=avg_len, language="english", tokenizer=TokenizerType.Multilingual)
        )

    @property
    def name(self) -> str:
        return "bm25-multilingual-ids:k1={k1}:b={b}:avg_len={avg_len}".format(**self.config)

    def document(self, text: str, key: str | None = None) -> SparseVector:
        """A memory's text, and its semantic_key (indexed twice) when it has one."""
        keyed = f"{key}\n{key}" if key else ""
        vector = self._model.embed_document(_expanded(f"{text}\n{keyed}" if keyed else text))
        return SparseVector(tuple(vector.indices), tuple(vector.values))

    def query(self, text: str) -> SparseVector:
        vector = self._model.embed_query(_expanded(text))
        return SparseVector(tuple(vector.indices), tuple(vector.values))


def _expanded(text: str) -> str:
    extra = identifier_terms(text)
    return f"{text}\n{' '.join(extra)}" if extra else text
