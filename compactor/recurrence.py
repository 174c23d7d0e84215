"""Whether a cluster holds a fact that recurs: the same thing said again on another occasion.

A cluster only says its members are near one another, and in a small store every note on a project is
near every other. Promotion makes a durable fact, so it needs more: two members from different
occasions (sessions; days, for memories without a session) that *restate* each other. They restate
when they agree closely (cosine at least `min_agreement`, measured in docs/reflect.md) and both state
something, or when they name the same thing: an identifier with a digit in it (`PAY-2291`, `v2.3`,
`17:00`) or a `semantic_key`, one equal to or under the other (`bug:PAY-2291`, `bug:PAY-2291/fix`).

A question states nothing, and in a dialogue neither does a short turn ("Bye Nate!") or a reply that
speaks of the listener as much as of its speaker ("Glad I could help. You've got this!"): recurring
small talk is near itself across sessions and never a fact.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from retrieval import Memory
from retrieval.domain import INFORMATIVE_WORDS, SENTENCE_END, clipped, key_sentence

from .clustering import unit_rows

__all__ = ["Recurrence", "find_recurrence", "states_something"]

_WORD = re.compile(r"[^\W\d_]+(?:'[^\W\d_]+)?")
_SPEAKER_SELF = frozenset({"i", "i'm", "i've", "i'll", "i'd", "me", "my", "mine", "we", "we're", "our", "us"})
_LISTENER = frozenset({"you", "you're", "you've", "you'll", "you'd", "your", "yours", "yourself", "ya"})
_IDEOGRAPH = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af]")
_ASIDE = re.compile(r"\[[^\]]*\]")  # "[shares a photo: ...]" in a transcript
_QUESTION = ("?", "？")
QUOTE_CHARS = 100  # of the recurring sentence, in the reason a reviewer reads
# A word joined to another by - _ . : / (PAY-2291, v2.3.1, 17:00), or letters and digits in one word (p53, v2).
_IDENTIFIER = re.compile(r"(?<![\w])(?:\w+(?:[-_.:/]\w+)+|[^\W\d_]+\d\w*|\d+[^\W\d_]\w*)")


@dataclass(frozen=True, slots=True)
class Recurrence:
    """The members (rows of the cluster) that restate one another, the occasions and days they span,
    and what showed it: the closest agreement between occasions and the names they share."""

    rows: tuple[int, ...]
    sessions: int
    days: tuple[str, ...]
    agreement: float
    names: tuple[str, ...]
    said: str  # the key sentence of the earliest member that restates it

    def describe(self) -> str:
        """What recurred, when, and what showed it, for a reviewer."""
        span = self.days[0] if len(self.days) == 1 else f"{self.days[0]} to {self.days[-1]}"
        said = clipped(self.said, QUOTE_CHARS)
        shown = [f"cosine up to {self.agreement:.2f}"] if self.agreement else []
        shown += [f"both name {', '.join(self.names)}"] if self.names else []
        return (
            f'"{said}" restated in {len(self.rows)} memories over {self.sessions} sessions and '
            f"{len(self.days)} days ({span}): {'; '.join(shown)}"
        )


def find_recurrence(cluster: Sequence[Memory], vectors: np.ndarray, min_agreement: float) -> Recurrence | None:
    """The members that restate one another across occasions, or None when nothing recurs."""
    unit = unit_rows(vectors)
    similarity = unit @ unit.T
    stating = [states_something(m) for m in cluster]
    names = [_identifiers(m) for m in cluster]
    rows: set[int] = set()
    agreement = 0.0
    shared: set[str] = set()
    keys: set[str] = set()
    for a in range(len(cluster)):
        for b in range(a + 1, len(cluster)):
            if _occasion(cluster[a]) == _occasion(cluster[b]):
                continue
            agrees = stating[a] and stating[b] and float(similarity[a, b]) >= min_agreement
            common = names[a] & names[b]
            key = _common_key(cluster[a].semantic_key, cluster[b].semantic_key)
            if agrees or common or key:
                rows.update((a, b))
                agreement = max(agreement, float(similarity[a, b])) if agrees else agreement
                shared |= common
                keys |= {key} if key else set()
    if not rows:
        return None
    members = [cluster[r] for r in sorted(rows)]
    sessions = len({m.session_id for m in members if m.session_id}) or 1
    days = tuple(sorted({m.occurred_at[:10] for m in members}))
    earliest = min(members, key=lambda m: (m.occurred_at, m.id))
    return Recurrence(
        tuple(sorted(rows)),
        sessions,
        days,
        round(agreement, 4),
        tuple(sorted(shared)) + tuple(sorted(keys)),
        key_sentence(earliest.content),
    )


def states_something(memory: Memory) -> bool:
    """False for a question; for a dialogue turn, also for a short one ("Bye Nate!") and for one that
    speaks of the listener as much as of its speaker ("Glad I could help. You've got this!")."""
    text = _ASIDE.sub(" ", memory.content).strip()
    sentences = [s for s in SENTENCE_END.split(text) if s.strip()] or [text]
    if 2 * sum(s.rstrip().endswith(_QUESTION) for s in sentences) >= len(sentences):
        return False
    if memory.speaker is None:
        return True
    words = [w.casefold() for w in _WORD.findall(text)]
    size = sum(len(_IDEOGRAPH.findall(w)) or 1 for w in words)  # Han, Kana, Hangul: a word per character
    listener = sum(w in _LISTENER for w in words)
    return size >= INFORMATIVE_WORDS and (listener == 0 or sum(w in _SPEAKER_SELF for w in words) > listener)


def _occasion(memory: Memory) -> str:
    return f"session:{memory.session_id}" if memory.session_id else f"day:{memory.occurred_at[:10]}"


def _identifiers(memory: Memory) -> frozenset[str]:
    """The memory's identifiers that hold a digit, as written."""
    return frozenset(token for token in _IDENTIFIER.findall(memory.content) if any(c.isdigit() for c in token))


def _common_key(a: str | None, b: str | None) -> str | None:
    """The semantic_key two memories share, when one's key is the other's or lies under it
    (`bug:PAY-2291` and `bug:PAY-2291/fix`): the shorter of the two; None otherwise."""
    if not a or not b:
        return None
    first, second = sorted((a.strip(), b.strip()), key=len)
    return first if second == first or second.startswith((first + "/", first + ":")) else None
