"""The `Embedder` port: what every dense encoder offers, and what its model directory declares."""

from __future__ import annotations

import json
from collections.abc import Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Protocol

import numpy as np

__all__ = ["Embedder", "completed", "declared_dimension", "model_label"]


def model_label(model_path: str) -> str:
    """How a model directory is named in stores and caches (the packaged model has a bare `model` dir)."""
    name = Path(model_path).name
    return "all-MiniLM-L6-v2" if name == "model" else name


def declared_dimension(model_path: str) -> int | None:
    """The vector size a sentence-transformers directory declares (its pooling's input size, or the
    output size of a Dense module after it), read from its JSON files; None when they do not say."""
    root = Path(model_path)
    try:
        dimension = None
        for module in json.loads((root / "modules.json").read_text()):
            kind = module["type"].rsplit(".", 1)[-1]
            if kind == "Pooling":
                dimension = int(
                    json.loads((root / module["path"] / "config.json").read_text())["word_embedding_dimension"]
                )
            elif kind == "Dense":
                dimension = int(json.loads((root / module["path"] / "config.json").read_text())["out_features"])
            elif kind not in ("Transformer", "Normalize"):
                return None  # a module whose output size is not declared
        return dimension
    except (OSError, ValueError, KeyError, TypeError):
        return None


class Embedder(Protocol):
    """Turns texts into L2-normalised float32 vectors of a fixed dimension."""

    @property
    def name(self) -> str: ...

    @property
    def dimension(self) -> int: ...

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...

    def embed_query(self, text: str) -> np.ndarray: ...

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        """The vector `embed_query` returns, as a future that the model's thread completes: an event
        loop awaits it (`asyncio.wrap_future`) instead of holding a thread while the model runs."""
        ...


def completed(vector: np.ndarray) -> Future[np.ndarray]:
    """A future that already holds `vector` (a cached vector, or a model that answers at once)."""
    done: Future[np.ndarray] = Future()
    done.set_result(vector)
    return done
