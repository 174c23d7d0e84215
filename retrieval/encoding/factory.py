"""Which encoder a store uses: the configured model on the configured backend."""

from __future__ import annotations

from ..domain import RetrievalSettings
from .base import Embedder
from .multilingual_encoder import E5Embedder, UseEmbedder
from .onnx_encoder import OnnxEmbedder, exportable
from .torch_encoder import SentenceTransformerEmbedder

__all__ = ["open_embedder"]

# What the first part of a stored model name says ran it (the torch encoder's names start with
# `sentence-transformers:`); `auto` keeps a store on it.
_STORED_BACKENDS = {"onnx": "onnx", "onnx-int8": "onnx-int8", "sentence-transformers": "torch"}


def open_embedder(settings: RetrievalSettings, stored: str | None = None) -> Embedder:
    """The configured encoder (`XMEMO_ENCODER`) on the configured backend (`XMEMO_EMBEDDING_BACKEND`).

    `multilingual` and `multilingual-e5` run on their packages' own engines
    (encoding/multilingual_encoder.py). For minilm, `auto` keeps
    a store on the backend it was embedded with (`stored`, the store's recorded model name), so that
    an upgrade never asks for a reindex; a new store, or one embedded by another model (the engine then
    refuses it until `xmemo reindex`), gets ONNX Runtime when the model is one the export reproduces
    (encoding/onnx_encoder.py), else PyTorch."""
    if settings.encoder == "multilingual":
        return UseEmbedder(settings.encoder_threads)
    if settings.encoder == "multilingual-e5":
        return E5Embedder(settings.encoder_threads)
    backend: str = settings.embedding_backend
    if backend == "auto":
        kept = _STORED_BACKENDS.get(stored.split(":", 1)[0]) if stored is not None else None
        backend = kept or ("onnx" if exportable(settings.embedding_model) else "torch")
    if backend in ("onnx", "onnx-int8"):
        return OnnxEmbedder(
            settings.embedding_model,
            settings.models_path,
            settings.embedding_batch_size,
            quantized=backend == "onnx-int8",
            threads=settings.encoder_threads,
        )
    return SentenceTransformerEmbedder(settings.embedding_model, settings.embedding_batch_size)
