"""A hard forget leaves nothing of the memory on disk (issue 36): no text, vector or cache key derived
from any version of it, in any file of the data dir, write-ahead logs included."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import numpy as np

from retrieval import MemoryEngine, Principal, RememberRequest, RetrievalSettings, remember
from retrieval.domain import memory_digest, spoken, unit_texts
from retrieval.usecases import edit_memory, forget_memory
from tests.support import FakeEmbedder

ALICE = Principal.local("alice")

QUESTION = "Where did you bury the brass compass? My uncle wants it back before the regatta."
EDITED = "Where did you bury the copper sextant? My uncle wants it back before the harbour festival."
ANSWER = "Under the third quince tree behind the boathouse."


def _data_bytes(data_dir: Path) -> dict[str, bytes]:
    """Every file's bytes, each run of 64 KiB of zeros (the holes of Edge's sparse files) cut to 1 KiB:
    what is looked for is shorter, so nothing it could match is lost."""
    return {
        str(p.relative_to(data_dir)): p.read_bytes().replace(bytes(65536), bytes(1024))
        for p in data_dir.rglob("*")
        if p.is_file()
    }


def _turn(engine: MemoryEngine, content: str, speaker: str, minute: int) -> str:
    request = RememberRequest(
        content=content,
        path="trips/sailing",
        session_id="s1",
        speaker=speaker,
        occurred_at=f"2026-11-29T10:0{minute}:00Z",
    )
    return remember(engine, ALICE, request).memory.id


def test_a_hard_forget_leaves_no_vector_text_or_key_of_any_version_in_the_data_dir(tmp_path):
    """Before: the cache kept the sentence units' vectors, the next turn's question-and-answer pair and,
    for a memory with a speaker, the earlier version's whole vector (its key was the bare content)."""
    embedder = FakeEmbedder()
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=embedder) as engine:
        _turn(engine, "We sailed out at dawn, the wind was steady.", "Jo", 0)
        question = _turn(engine, QUESTION, "Mel", 1)
        answer = _turn(engine, ANSWER, "Jo", 2)
        first = engine.store.get(question)
        edit_memory(engine, ALICE, question, 1, {"content": EDITED})
        reply = engine.store.get(answer)
        assert reply is not None and reply.context is not None and "brass compass" in reply.context
        # what was derived from the question, version by version: its texts, their cache keys, their vectors
        texts: list[str] = []
        for content in (QUESTION, EDITED):
            assert first is not None
            version = replace(first, content=content)
            texts += [spoken(content, "Mel"), *unit_texts(version, pairs=True)]
        texts += [u for u in unit_texts(reply, pairs=True) if "compass" in u]  # the answer's pair
        assert len(texts) >= 7
        keys = [memory_digest(first, t) for t in texts]
        cached = engine.embedder.cached_vectors(keys)
        assert len(cached) >= 6, "the cache held what the check below could find"
        vectors = [embedder.embed([t])[0].astype(np.float32).tobytes() for t in texts]
        forget_memory(engine, ALICE, question)
        words = [QUESTION, EDITED, "brass compass", "copper sextant", "harbour festival", "regatta"]
        files = _data_bytes(tmp_path)
        left = [
            (name, what)
            for name, data in files.items()
            for what, needles in (("text", [w.encode() for w in words]), ("key", [k.encode() for k in keys]))
            for needle in needles
            if needle in data
        ]
        left += [(name, "vector") for name, data in files.items() for v in vectors if v in data]
        assert not left, sorted(set(left))
        assert engine.embedder.cached_vectors(keys) == {}


def test_a_unit_another_memory_still_gives_stays_in_the_cache(tmp_path, database_url):
    """The same sentence said by the same speaker in another memory keeps its vector: a rebuild reads it."""
    settings = RetrievalSettings(data_dir=tmp_path, database_url=database_url)
    with MemoryEngine(settings, embedder=FakeEmbedder()) as engine:
        gone = remember(
            engine,
            ALICE,
            RememberRequest(content="Thanks for the chart. The road was wet all day.", path="p", speaker="Mel"),
        )
        kept = remember(
            engine, ALICE, RememberRequest(content="Thanks for the chart. See you.", path="p", speaker="Mel")
        )
        shared = memory_digest(kept.memory, "Mel: Thanks for the chart.")
        own = memory_digest(gone.memory, "Mel: The road was wet all day.")
        assert set(engine.embedder.cached_vectors([shared, own])) == {shared, own}
        forget_memory(engine, ALICE, gone.id)
        assert set(engine.embedder.cached_vectors([shared, own])) == {shared}


def test_a_forget_purges_a_short_sentence_an_earlier_release_encoded_as_a_unit(tmp_path):
    """Sentences of fewer than four words are no units now, but a store written before kept their
    vectors: a hard forget finds those cache entries too."""
    with MemoryEngine(RetrievalSettings(data_dir=tmp_path), embedder=FakeEmbedder()) as engine:
        made = remember(
            engine, ALICE, RememberRequest(content="Wow, okay! The quince tree is ours.", path="p", speaker="Mel")
        ).memory
        earlier = memory_digest(made, "Mel: Wow, okay!")
        assert "Mel: Wow, okay!" not in unit_texts(made, pairs=True)
        engine.embedder.cache.put_many(engine.embedder.name, [(earlier, np.ones(FakeEmbedder().dimension))])
        assert set(engine.embedder.cached_vectors([earlier])) == {earlier}
        forget_memory(engine, ALICE, made.id)
        assert engine.embedder.cached_vectors([earlier]) == {}
