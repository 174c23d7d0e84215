"""Sentences of a memory: the key sentence a summary takes from it, and the normal form texts compare in."""

from __future__ import annotations

import re

__all__ = ["INFORMATIVE_WORDS", "SENTENCE_END", "carries", "key_sentence", "normalise"]

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


def carries(text: str, content: str) -> bool:
    """`text` holds the words of `content`: all of them, or its key sentence (what a summary takes)."""
    holder = normalise(text)
    return normalise(content) in holder or normalise(key_sentence(content)) in holder
