"""The embedding caches are per tenant: one tenant's stored texts and queries never serve another's.

Shown by behaviour, never by timing: a counting embedder (the Embedder port, implemented here) records
what reaches the model, and the cache file's rows are counted.
"""

from __future__ import annotations

import sqlite3

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from retrieval import Principal, RememberRequest, add_event, import_records, remember, update_state
from retrieval.domain import tenant_digest, tenant_of
from retrieval.encoding import CachedEmbedder, EmbeddingCache
from tests.support import FakeEmbedder, pack_for

ALICE = Principal(owner_id="alice", team_ids=("t1",))
BOB = Principal(owner_id="bob", team_ids=("t1",))
CAROL = Principal(owner_id="carol")
SECRET = "the merger with Initech closes on 3 March"


class CountingEmbedder(FakeEmbedder):
    """The fake embedder, recording every text that reaches the model."""

    def __init__(self) -> None:
        self.documents: list[str] = []
        self.queries: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.documents.extend(texts)
        return super().embed(texts)

    def embed_query(self, text: str) -> np.ndarray:
        self.queries.append(text)
        return FakeEmbedder.embed(self, [text])[0]


def cache_rows(engine) -> int:  # type: ignore[no-untyped-def]
    with sqlite3.connect(engine.settings.cache_path) as connection:
        return int(connection.execute("SELECT count(*) FROM embeddings").fetchone()[0])


def test_another_tenants_stored_text_is_encoded_afresh(make_engine):
    model = CountingEmbedder()
    engine = make_engine(model)
    remember(engine, ALICE, RememberRequest(content=SECRET, path="deals"))
    remember(engine, CAROL, RememberRequest(content=SECRET, path="guess"))
    assert model.documents == [SECRET, SECRET] and cache_rows(engine) == 2
    remember(engine, CAROL, RememberRequest(content=SECRET, path="again"))  # her own entry now serves her
    assert model.documents == [SECRET, SECRET] and cache_rows(engine) == 2


def test_team_members_share_the_team_entries_and_nothing_else(make_engine):
    model = CountingEmbedder()
    engine = make_engine(model)
    remember(engine, ALICE, RememberRequest(content=SECRET, path="deals", team_id="t1"))
    remember(engine, BOB, RememberRequest(content=SECRET, path="deals", team_id="t1"))
    assert model.documents == [SECRET]
    remember(engine, BOB, RememberRequest(content=SECRET, path="mine"))  # bob's personal space: his own key
    assert model.documents == [SECRET, SECRET]


def test_every_write_path_keys_by_tenant(make_engine):
    model = CountingEmbedder()
    engine = make_engine(model)
    remember(engine, ALICE, RememberRequest(content=SECRET, path="deals"))
    update_state(engine, CAROL, state_key="s", content=SECRET)
    add_event(engine, Principal(owner_id="dave"), content=SECRET, event_type="e", occurred_at="2026-01-01T00:00:00Z")
    import_records(engine, Principal.local("erin"), [{"content": SECRET, "path": "p"}])
    remember(engine, Principal(owner_id="frank"), RememberRequest(content=SECRET, path="p", semantic_key="k"))
    assert model.documents == [SECRET] * 5 and cache_rows(engine) == 5


def test_a_superseded_version_is_indexed_from_its_own_entry(make_engine):
    model = CountingEmbedder()
    engine = make_engine(model)
    remember(engine, ALICE, RememberRequest(content="version one", path="p", semantic_key="k"))
    remember(engine, ALICE, RememberRequest(content="version two", path="p", semantic_key="k"))
    assert model.documents == ["version one", "version two"]


def test_the_stored_digest_finds_the_vector_for_reflect(make_engine):
    engine = make_engine(CountingEmbedder())
    memory = remember(engine, ALICE, RememberRequest(content=SECRET, path="deals")).memory
    digest = engine.store.embed_shas([memory.id])[memory.id]
    assert list(engine.embedder.cached_vectors([digest])) == [digest]


def test_another_tenants_query_is_encoded_afresh(make_engine):
    model = CountingEmbedder()
    engine = make_engine(model)
    pack_for(engine, ALICE, "when does the merger close")
    pack_for(engine, CAROL, "when does the merger close")
    assert model.queries == ["when does the merger close"] * 2


def test_the_query_cache_serves_only_its_own_tenant(tmp_path):
    model = CountingEmbedder()
    cached = CachedEmbedder(model, EmbeddingCache(tmp_path / "cache.sqlite"))
    alice, carol = tenant_of("alice", None), tenant_of("carol", None)
    first = cached.embed_query("merger date", tenant=alice)
    assert np.array_equal(cached.embed_query("merger date", tenant=alice), first)
    assert model.queries == ["merger date"]
    cached.embed_query("merger date", tenant=carol)
    cached.embed_query("merger date")  # no tenant: encoded, never kept
    cached.embed_query("merger date")
    assert model.queries == ["merger date"] * 4
    cached.cache.close()


def test_owner_and_team_tenants_are_apart():
    assert tenant_of("t1", None) != tenant_of("alice", "t1")
    assert tenant_of("alice", "t1") == tenant_of("bob", "t1")


@given(st.text(max_size=8), st.text(max_size=8), st.text(max_size=8), st.text(max_size=8))
def test_distinct_tenant_text_pairs_have_distinct_keys(tenant_a, text_a, tenant_b, text_b):
    if (tenant_a, text_a) != (tenant_b, text_b):
        assert tenant_digest(tenant_a, text_a) != tenant_digest(tenant_b, text_b)
