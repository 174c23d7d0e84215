"""Sentences of a memory: its key sentence, whether a text carries all of them, the normal form texts
compare in, and a text clipped for a person to read."""

from __future__ import annotations

import re

__all__ = ["INFORMATIVE_WORDS", "SENTENCE_END", "carries", "clipped", "key_sentence", "normalise", "sentences_of"]

SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_SPEAKER = re.compile(r"^[A-Z][\w.' -]{0,39}: ")  # "Caroline: " in a transcript
_SPACE = re.compile(r"\s+")
# A sentence shorter than this says little on its own: in LoCoMo, replies such as "Thanks, Nate!".
INFORMATIVE_WORDS = 8


def normalise(text: str) -> str:
    """Lower case, one space between words: the form in which one text is looked for inside another."""
    return _SPACE.sub(" ", text).strip().lower()


def key_sentence(content: str) -> str:
    """The first sentence of at least INFORMATIVE_WORDS words, else the longest; a leading speaker
    label ("Caroline: ...") stays in front of it."""
    text = " ".join(content.split())
    label = ""
    found = _SPEAKER.match(text)
    if found:
        label, text = found.group(0), text[found.end() :]
    sentences = [s for s in SENTENCE_END.split(text) if s] or [text]
    chosen = next((s for s in sentences if len(s.split()) >= INFORMATIVE_WORDS), None)
    if chosen is None:
        chosen = max(sentences, key=lambda s: (len(s.split()), -sentences.index(s)))
    return label + chosen


def sentences_of(content: str) -> list[str]:
    """The normalised sentences of `content`, a leading speaker label left out."""
    text = " ".join(content.split())
    found = _SPEAKER.match(text)
    if found:
        text = text[found.end() :]
    return [normalise(s) for s in SENTENCE_END.split(text) if s.strip()]


def carries(text: str, content: str) -> bool:
    """`text` holds every sentence of `content`, word for word (normalised): what a summary must do
    before recall may show it in a member's place. A summary that took one sentence of two does not."""
    holder = normalise(text)
    return normalise(content) in holder or all(sentence in holder for sentence in sentences_of(content))


def clipped(text: str, chars: int) -> str:
    """`text` when it has at most `chars` characters, else its first `chars` - 1 (trailing space dropped)
    and an ellipsis: a line a reviewer reads, never a text anything matches."""
    return text if len(text) <= chars else text[: chars - 1].rstrip() + "…"
