"""The texts a memory is matched by: what its speaker said, its sentence units, and its BM25 text."""

from __future__ import annotations

from retrieval.domain import MAX_UNITS, Memory, MemoryType, bm25_text, context_line, embedding_text, unit_texts


def _memory(content: str, speaker: str | None = None, context: str | None = None) -> Memory:
    return Memory(
        id="m",
        owner_id="alice",
        content=content,
        path="p",
        type=MemoryType.EPISODIC,
        speaker=speaker,
        context=context,
        occurred_at="2023-05-08T13:56:00.000000Z",
    )


def test_the_whole_text_names_its_speaker():
    assert embedding_text(_memory("I painted a lake.", "Melanie")) == "Melanie: I painted a lake."
    assert embedding_text(_memory("I painted a lake.")) == "I painted a lake."


def test_a_memory_of_several_sentences_is_also_matched_by_each():
    memory = _memory("I painted a lake last week. My kids loved it! Want to see?", "Melanie")
    assert unit_texts(memory) == [
        "Melanie: I painted a lake last week.",
        "Melanie: My kids loved it!",
        "Melanie: Want to see?",
    ]
    assert unit_texts(_memory("Just one sentence here.", "Melanie")) == []


def test_a_long_memory_costs_at_most_max_units_vectors():
    content = " ".join(f"Sentence number {i} is here." for i in range(100))
    units = unit_texts(_memory(content))
    assert len(units) <= MAX_UNITS
    assert " ".join(units) == content  # consecutive sentences joined, none lost


def test_a_pair_unit_joins_a_reply_to_the_question_before_it():
    question = context_line("Where did you go on holiday?", "Caroline")
    reply = _memory("Spain.", "Melanie", context=question)
    assert unit_texts(reply, pairs=True) == ["Caroline: Where did you go on holiday?\nMelanie: Spain."]
    assert unit_texts(_memory("Spain.", "Melanie", context="Caroline: I went home."), pairs=True) == []


def test_bm25_reads_the_context_the_speaker_and_the_month_but_not_the_day():
    memory = _memory("I painted a lake.", "Melanie", context="Caroline: what did you do?")
    assert bm25_text(memory) == "Caroline: what did you do?\nMelanie: I painted a lake.\nMay 2023"
    assert "8" not in bm25_text(memory).split()


def test_a_context_line_is_one_line():
    assert context_line("first line\nsecond   line", None) == "first line second line"
