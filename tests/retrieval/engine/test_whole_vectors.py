"""`MemoryEngine.whole_vectors` reads the embedding cache first and the index for the rest: the same
vectors either way (to the float16 the index keeps them in), so the restatement check that uses it
decides as before."""

from __future__ import annotations

import numpy as np

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, remember
from retrieval.domain import embed_digest

ALICE = Principal.local("alice")


def test_cached_and_indexed_vectors_agree_and_a_cache_miss_falls_back_to_the_index(tmp_path, fake_embedder):
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=fake_embedder) as engine:
        memories = [
            remember(
                engine, ALICE, RememberRequest(content=f"the {word} shipment left on time. It rained.", path="notes")
            ).memory
            for word in ("copper", "timber", "grain")
        ]
        from_index = engine.index.dense_vectors([m.id for m in memories])
        from_cache = engine.whole_vectors(memories)
        assert set(from_cache) == {m.id for m in memories}
        for memory in memories:
            assert np.allclose(from_cache[memory.id], from_index[memory.id], atol=1e-3)
        engine.embedder.cache.delete_many([embed_digest(memories[0])])
        assert engine.embedder.cached_vectors([embed_digest(memories[0])]) == {}
        again = engine.whole_vectors(memories)
        assert np.array_equal(again[memories[0].id], from_index[memories[0].id])  # this one from the index
