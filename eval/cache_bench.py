"""What per-tenant embedding caches cost: model encodes on a realistic multi-tenant mix, shared against keyed.

Each LoCoMo conversation is one tenant: it stores its turns and asks its questions twice (agents
repeat themselves). On top, every tenant stores the same company documents and asks the same generic
agent queries, the case where a shared cache saved the most. Both policies run through the real
CachedEmbedder with a counting model; the real model's time per text converts the extra encodes to
seconds.
"""

from __future__ import annotations

import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any

import numpy as np

from retrieval import RetrievalSettings
from retrieval.domain import tenant_digest, tenant_of, text_sha256
from retrieval.encoding import CachedEmbedder, Embedder, EmbeddingCache, SentenceTransformerEmbedder, completed

from .bench import synthetic_memories, synthetic_queries
from .datasets import Dataset

__all__ = ["run_cache_bench"]

Workload = list[tuple[str, list[str], list[str]]]  # (tenant, texts stored, queries asked)


class _Counting:
    """A model stand-in that counts the texts it is asked to encode (vectors of the right shape)."""

    name = "counting"
    dimension = 8

    def __init__(self) -> None:
        self.documents = 0
        self.queries = 0

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.documents += len(texts)
        return np.ones((len(texts), self.dimension), dtype=np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries += 1
        return np.ones(self.dimension, dtype=np.float32)

    def embed_query_later(self, text: str) -> Future[np.ndarray]:
        return completed(self.embed_query(text))


def workload(dataset: Dataset, common_docs: int, common_queries: int) -> Workload:
    """Per tenant: its own turns plus the common documents; its questions twice plus the common queries."""
    shared_texts = [line["content"] for line in synthetic_memories(common_docs, seed=31)]
    shared_queries = synthetic_queries(common_queries, seed=32)
    tenants: Workload = []
    for group in sorted({doc.group for doc in dataset.docs}):
        texts = [doc.text for doc in dataset.docs if doc.group == group] + shared_texts
        questions = [q.text for q in dataset.queries if q.group == group]
        tenants.append((tenant_of(group, None), texts, questions * 2 + shared_queries))
    return tenants


def _encodes(tenants: Workload, key: Callable[[str, str], str], query_tenant: Callable[[str], str]) -> _Counting:
    model = _Counting()
    with tempfile.TemporaryDirectory(prefix="xmemo-cache-bench-") as tmp:
        cached = CachedEmbedder(model, EmbeddingCache(Path(tmp) / "cache.sqlite"))
        cached.QUERY_CACHE_SIZE = 1_000_000  # measure the keying, not evictions
        for tenant, texts, queries in tenants:
            cached.embed_with_digests(texts, [key(tenant, text) for text in texts])
            for query in queries:
                cached.embed_query(query, tenant=query_tenant(tenant))
        cached.cache.close()
    return model


def _seconds_per_text(model: Embedder, texts: list[str], queries: list[str]) -> dict[str, float]:
    model.embed(texts[:8])  # load and warm
    model.embed_query(queries[0])
    started = time.perf_counter()
    model.embed(texts)
    per_document = (time.perf_counter() - started) / len(texts)
    started = time.perf_counter()
    for query in queries:
        model.embed_query(query)
    return {"document": per_document, "query": (time.perf_counter() - started) / len(queries)}


def run_cache_bench(
    dataset: Dataset, common_docs: int = 50, common_queries: int = 20, sample: int = 128
) -> dict[str, Any]:
    """Encodes under a shared cache and under per-tenant keys, the ratio, and the time they cost."""
    tenants = workload(dataset, common_docs, common_queries)
    shared = _encodes(tenants, lambda _, text: text_sha256(text), lambda _: "everyone")
    keyed = _encodes(tenants, tenant_digest, lambda tenant: tenant)
    texts = [text for _, stored, _ in tenants for text in stored][:sample]
    queries = [query for _, _, asked in tenants for query in asked][: sample // 4]
    model = SentenceTransformerEmbedder(RetrievalSettings().embedding_model)
    cost = _seconds_per_text(model, texts, queries)
    extra_documents = keyed.documents - shared.documents
    extra_queries = keyed.queries - shared.queries
    return {
        "tenants": len(tenants),
        "stored": sum(len(stored) for _, stored, _ in tenants),
        "asked": sum(len(asked) for _, _, asked in tenants),
        "encodes": {
            "shared": {"documents": shared.documents, "queries": shared.queries},
            "per_tenant": {"documents": keyed.documents, "queries": keyed.queries},
        },
        "extra": {"documents": extra_documents, "queries": extra_queries},
        "ratio": {
            "documents": round(keyed.documents / shared.documents, 4),
            "queries": round(keyed.queries / shared.queries, 4),
        },
        "model_ms_per_text": {name: round(value * 1000, 2) for name, value in cost.items()},
        "extra_model_seconds": round(extra_documents * cost["document"] + extra_queries * cost["query"], 2),
    }
