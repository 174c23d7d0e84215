"""Turning text into vectors: the `Embedder` port, the batching base, the ONNX, torch and multilingual encoders, the
embedding cache, the factory that picks an encoder, and the BM25 sparse encoder."""

from .base import Embedder, completed, declared_dimension, model_label
from .batching import BatchingEmbedder, BatchRecord, InferenceBatcher
from .cache import CachedEmbedder, EmbeddingCache
from .factory import open_embedder
from .multilingual_encoder import E5_DIMENSION, E5_MODEL, USE_DIMENSION, USE_MODEL, E5Embedder, UseEmbedder
from .onnx_encoder import MAX_PADDING, OnnxEmbedder, exportable, exported_model, length_groups
from .sparse import BM25_AVG_LEN, BM25_B, BM25_K1, SparseEncoder, SparseVector, identifier_terms
from .torch_encoder import SentenceTransformerEmbedder, load_sentence_transformer, mean_pooled

__all__ = [
    "BM25_AVG_LEN",
    "BM25_B",
    "BM25_K1",
    "E5_DIMENSION",
    "E5_MODEL",
    "MAX_PADDING",
    "USE_DIMENSION",
    "USE_MODEL",
    "BatchRecord",
    "BatchingEmbedder",
    "CachedEmbedder",
    "E5Embedder",
    "Embedder",
    "EmbeddingCache",
    "InferenceBatcher",
    "OnnxEmbedder",
    "SentenceTransformerEmbedder",
    "SparseEncoder",
    "SparseVector",
    "UseEmbedder",
    "completed",
    "declared_dimension",
    "exportable",
    "exported_model",
    "identifier_terms",
    "length_groups",
    "load_sentence_transformer",
    "mean_pooled",
    "model_label",
    "open_embedder",
]
