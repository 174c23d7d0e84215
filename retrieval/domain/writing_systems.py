"""The writing system of a memory, from Unicode's character names, and the words two memories share.

Reflect clusters by embedding similarity, and an embedding model trained on English text places
texts of a script it never learned close to each other whatever they say: with all-MiniLM-L6-v2,
three unrelated Chinese notes (a refund rule, a contact, a bug) sit nearer to each other than two
English notes about one bug. So a cluster never mixes scripts, and inside a script the model does not
embed by meaning (`ReflectSettings.embedded_scripts`) members must also share words.

The script is the one most of a text's words are written in. Han, Kana and Hangul count one word per
character (they are not written with spaces); other scripts count one per run of letters, so an
English product name inside a Chinese sentence does not make it English. Japanese (Kana with or
without Han) is told apart from Chinese (Han alone) because the two languages share characters but
not meaning.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from functools import lru_cache

__all__ = ["NO_SCRIPT", "lexical_units", "script_of", "shared_fraction", "word_count"]

NO_SCRIPT = "None"  # a text without letters (numbers, symbols): clustered with its own kind only
_CHARACTER_SCRIPTS = {"CJK": "Han", "HIRAGANA": "Kana", "KATAKANA": "Kana", "HANGUL": "Hangul"}
_NAMED_SCRIPTS = (
    "LATIN",
    "CYRILLIC",
    "GREEK",
    "ARABIC",
    "HEBREW",
    "DEVANAGARI",
    "BENGALI",
    "TAMIL",
    "THAI",
    "ARMENIAN",
    "GEORGIAN",
    "ETHIOPIC",
)
_LETTER_RUN = re.compile(r"[^\W\d_]+")


@lru_cache(maxsize=4096)
def _script_of_char(char: str) -> str | None:
    name = unicodedata.name(char, "")
    first = name.split(" ", 1)[0]
    if first in _CHARACTER_SCRIPTS:
        return _CHARACTER_SCRIPTS[first]
    if first == "FULLWIDTH" and "LATIN" in name:
        return "Latin"
    if first in _NAMED_SCRIPTS:
        return first.title()
    return "Other" if char.isalpha() else None


def _words_by_script(text: str) -> Counter[str]:
    counts: Counter[str] = Counter()
    for run in _LETTER_RUN.findall(text):
        scripts = [s for s in map(_script_of_char, run) if s]
        for script, n in Counter(scripts).items():
            counts[script] += n if script in ("Han", "Kana", "Hangul") else 1
    return counts


def word_count(text: str) -> int:
    """How many words `text` holds: a run of letters each, a character each in Han, Kana and Hangul."""
    return sum(_words_by_script(text).values())


def script_of(text: str) -> str:
    """The script most of the text's words are written in ("Latin", "Han", "Japanese", "Cyrillic", ...).

    A text with any Kana among mostly Han and Kana words is "Japanese"; ties go to the name first in
    alphabetical order, so the answer is deterministic.
    """
    counts = _words_by_script(text)
    if not counts:
        return NO_SCRIPT
    if counts["Kana"] and counts["Kana"] + counts["Han"] >= max(counts.values()):
        return "Japanese"
    best = max(counts.values())
    return min(script for script, n in counts.items() if n == best)


def lexical_units(text: str) -> frozenset[str]:
    """What two texts can share: character pairs of Han, Kana and Hangul runs, lower-cased words else."""
    units: set[str] = set()
    for run in _LETTER_RUN.findall(text.lower()):
        if any(_script_of_char(c) in ("Han", "Kana", "Hangul") for c in run):
            units.update(run[i : i + 2] for i in range(max(len(run) - 1, 1)))
        elif len(run) > 1:
            units.add(run)
    return frozenset(units)


def shared_fraction(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two sets of lexical units (0 when either is empty)."""
    if not a or not b:
        return 0.0
    return len(a & b) / len(a | b)
