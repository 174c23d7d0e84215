"""The texts a memory is matched by: what its speaker said, its sentence units, and its BM25 text."""

from __future__ import annotations

from retrieval.domain import (
    MAX_UNITS,
    Memory,
    MemoryType,
    bm25_text,
    context_line,
    embedding_text,
    encoded_texts,
    unit_texts,
    word_count,
)


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
    memory = _memory("I painted a lake last week. My kids loved it! Do you want to see it?", "Melanie")
    assert unit_texts(memory) == [
        "Melanie: I painted a lake last week.",
        "Melanie: My kids loved it!",
        "Melanie: Do you want to see it?",
    ]
    assert unit_texts(_memory("Just one sentence here.", "Melanie")) == []


def test_a_sentence_too_short_to_say_anything_is_no_unit_of_its_own():
    memory = _memory("Wow! Thanks, Nate! So cool! I painted a lake last week. My kids loved it.", "Melanie")
    assert unit_texts(memory) == ["Melanie: I painted a lake last week.", "Melanie: My kids loved it."]
    # one sentence left that says anything: it is still a unit, the whole text holds the "Wow!" too
    assert unit_texts(_memory("Wow! I painted a lake last week.", "Melanie")) == [
        "Melanie: I painted a lake last week."
    ]
    assert unit_texts(_memory("Wow! Great!", "Melanie")) == []


def test_a_sentence_said_twice_in_a_memory_is_one_unit():
    memory = _memory("I painted a lake. Then I slept a while. I painted a lake.")
    assert unit_texts(memory) == ["I painted a lake.", "Then I slept a while."]


def test_words_are_counted_a_character_each_in_chinese_and_japanese():
    assert word_count("Thanks, Nate!") == 2
    assert word_count("我们决定了。") == 5
    assert word_count("PAY-2291 is fixed.") == 3
    assert unit_texts(_memory("OK then. 金曜日に出します。")) == ["金曜日に出します。"]


def test_a_forget_finds_every_text_an_earlier_release_encoded_too():
    question = context_line("Where did you go on holiday?", "Caroline")
    memory = _memory("Wow! We went to Spain in May.", "Melanie", context=question)
    assert encoded_texts(memory) == [
        "Melanie: Wow! We went to Spain in May.",
        "Melanie: Wow!",
        "Melanie: We went to Spain in May.",
        "Caroline: Where did you go on holiday?\nMelanie: Wow! We went to Spain in May.",
    ]
    assert set(unit_texts(memory, pairs=True)) < set(encoded_texts(memory))


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
