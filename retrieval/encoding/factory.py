"""Which encoder a store uses: the configured model on the configured backend."""

from __future__ import annotations

from ..domain import RetrievalSettings
from .base import Embedder
from .onnx_encoder import OnnxEmbedder, exportable
from .torch_encoder import SentenceTransformerEmbedder

__all__ = ["open_embedder"]


def open_embedder(settings: RetrievalSettings, stored: str | None = None) -> Embedder:
    """The configured model on the configured backend (`XMEMO_EMBEDDING_BACKEND`).

    `auto` keeps a store on the backend it was embedded with (`stored`, the store's recorded model
    name), so that an upgrade never asks for a reindex; a new store gets ONNX Runtime when the model
    is one the export reproduces (encoding/onnx_encoder.py), else PyTorch."""
    backend: str = settings.embedding_backend
    if backend == "auto":
        if stored is not None:
            backend = stored.split(":", 1)[0]
        else:
            backend = "onnx" if exportable(settings.embedding_model) else "torch"
    if backend in ("onnx", "onnx-int8"):
        return OnnxEmbedder(
            settings.embedding_model,
            settings.models_path,
            settings.embedding_batch_size,
            quantized=backend == "onnx-int8",
            threads=settings.encoder_threads,
        )
    return SentenceTransformerEmbedder(settings.embedding_model, settings.embedding_batch_size)
