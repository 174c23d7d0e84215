"""Writes ask the model before they take the write lock, sentence units and question-answer pairs
included: every writer of the process queues on that lock, so one that waited there for the model
made all the others wait for it too (under load, most of a `remember`'s time)."""

from __future__ import annotations

import numpy as np
import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, add_event, remember, update_state
from retrieval.usecases import edit_memory, remember_batch
from tests.support import FakeEmbedder

ALICE = Principal.local("alice")


class LockWatchingEmbedder(FakeEmbedder):
    """The test embedder, noting every text it encodes and which of them it encoded under the write lock."""

    def __init__(self) -> None:
        self.engine: MemoryEngine | None = None
        self.encoded: list[str] = []
        self.under_lock: list[str] = []

    def embed(self, texts: list[str]) -> np.ndarray:
        self.encoded += texts
        if self.engine is not None and self.engine.write_lock._is_owned():  # type: ignore[attr-defined]
            self.under_lock += texts
        return super().embed(texts)


@pytest.fixture
def watched(tmp_path):
    embedder = LockWatchingEmbedder()
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=embedder) as engine:
        embedder.engine = engine
        yield engine, embedder


def test_remember_encodes_a_notes_sentences_before_the_write_lock(watched):
    engine, embedder = watched
    note = "The copper shipment left late. It rained all week."
    made = remember(engine, ALICE, RememberRequest(content=note, path="n")).memory
    assert "It rained all week." in embedder.encoded  # the sentence is a unit of its own
    assert embedder.under_lock == []
    scores = engine.index.dense_scores(embedder.embed_query("It rained all week."), [made.id])
    assert scores[made.id] > 0.99  # the index holds the unit's vector (the whole text's is farther)


def test_a_turn_after_a_question_is_paired_with_it_before_the_write_lock(watched):
    engine, embedder = watched
    for content, speaker in (("Where did you go in May?", "Ana"), ("Spain.", "Bo")):
        remember(engine, ALICE, RememberRequest(content=content, path="chat", session_id="s1", speaker=speaker))
    assert "Ana: Where did you go in May?\nBo: Spain." in embedder.encoded
    assert embedder.under_lock == []


def test_state_events_batches_and_edits_encode_before_the_write_lock(watched):
    engine, embedder = watched
    update_state(engine, ALICE, state_key="plan", content="Ship on Monday. Then we review the notes.")
    add_event(
        engine,
        ALICE,
        content="The deploy failed. It was rolled back.",
        event_type="deploy",
        occurred_at="2026-11-30T10:00:00Z",
    )
    made = remember_batch(engine, ALICE, [{"content": "Tea at four. Cake is served at five.", "path": "n"}])
    edit_memory(
        engine, ALICE, made[0].memory.id, made[0].memory.version, {"content": "Tea at three. Cake is served too."}
    )
    for sentence in (
        "Then we review the notes.",
        "It was rolled back.",
        "Cake is served at five.",
        "Cake is served too.",
    ):
        assert sentence in embedder.encoded
    assert embedder.under_lock == []
