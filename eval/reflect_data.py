"""LoCoMo turns as reflect's benchmark input: episodic records (one per turn, session dates as times)
and, for the clustering comparison, their stored vectors, conversations and evidence pairs."""

from __future__ import annotations

import itertools
import uuid
from datetime import timedelta
from pathlib import Path
from typing import Any

import numpy as np

from retrieval import RetrievalSettings
from retrieval.domain import format_time, parse_time, spoken
from retrieval.encoding import CachedEmbedder, EmbeddingCache, SentenceTransformerEmbedder

from .datasets import SHARED_DATA, Dataset, load_dataset
from .runner import DEFAULT_CACHE

__all__ = ["clustering_inputs", "locomo_records"]

_NAMESPACE = uuid.UUID("0b7e3f7c-2d7a-4c1e-8f59-7d3a61c2b0a4")
COPY_SHIFT = timedelta(days=365)


def _dataset(spec: str, shared_data: Path | None) -> Dataset:
    dataset = load_dataset(spec, shared_data or SHARED_DATA)
    if dataset.kind != "locomo":
        raise ValueError(f"bench-reflect needs a LoCoMo file, not {spec}")
    return dataset


def locomo_records(spec: str = "locomo", copies: int = 1, shared_data: Path | None = None) -> list[dict[str, Any]]:
    """One episodic record per turn; each conversation in its own scope (its own memory boundary).

    Copy k (k >= 1) repeats every conversation k years later, in new sessions, so that a large
    store can be built from the 2,760 dev turns; created_at is the turn's time, as if written live.
    """
    docs = _dataset(spec, shared_data).docs
    records = []
    for copy in range(copies):
        shift = COPY_SHIFT * copy
        for doc in docs:
            when = format_time(parse_time(doc.occurred_at) + shift)
            suffix = f"#copy{copy}" if copy else ""
            records.append(
                {
                    "id": str(uuid.uuid5(_NAMESPACE, f"{doc.id}{suffix}")),
                    "content": doc.text,
                    "path": f"locomo/{doc.group}",
                    "scope": f"conversation:{doc.group}",
                    "type": "episodic",
                    "occurred_at": when,
                    "created_at": when,
                    "session_id": f"{doc.session_id}{suffix}",
                    "speaker": doc.speaker,
                }
            )
    return records


def clustering_inputs(
    spec: str = "locomo", shared_data: Path | None = None
) -> tuple[np.ndarray, list[str], list[tuple[int, int]]]:
    """Vectors of every turn (from the evaluation's embedding cache), each turn's conversation, and
    the pairs of turns that are evidence for the same question."""
    dataset = _dataset(spec, shared_data)
    settings = RetrievalSettings()
    embedder = CachedEmbedder(SentenceTransformerEmbedder(settings.embedding_model), EmbeddingCache(DEFAULT_CACHE))
    try:
        vectors = embedder.embed([spoken(doc.text, doc.speaker) for doc in dataset.docs])
    finally:
        embedder.cache.close()
    row = {doc.id: i for i, doc in enumerate(dataset.docs)}
    pairs = [
        pair
        for query in dataset.queries
        for pair in itertools.combinations(sorted(row[d] for d in query.relevant if d in row), 2)
    ]
    return vectors, [doc.group for doc in dataset.docs], pairs
