"""The greedy token packer: ranked memories into a context body under an item and a token budget.

Walk the ranking. An item that fits whole is packed. One that does not is shortened at a sentence
or word boundary when at least MIN_SHORTENED_TOKENS remain, else skipped, while later, smaller items
may still be packed. The top item is always packed, shortened as far as needed, so a match never
yields an empty pack. A text of several lines (a summary) leaves out the lines that items packed
before it already hold word for word, and is skipped when nothing of it is left: a pack never
spends its budget on the same words twice. `dropped` counts the top-`max_items` memories that the token budget kept out.
`used_tokens` is the exact cl100k count of the body and never exceeds the budget.

Each block is "[n] header\\nbody\\n": blocks end in a newline and begin with "[", so cl100k never merges
tokens across two blocks and the body's count is the sum of its blocks' counts (checked at the end).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..domain import normalise
from .tokens import TokenCounter

__all__ = ["ELLIPSIS", "MIN_SHORTENED_TOKENS", "Pack", "PackCandidate", "PackedItem", "pack_context"]

MIN_SHORTENED_TOKENS = 24  # below this, a shortened block would be a header and a few words
ELLIPSIS = " …"
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s+")
_WORD_GAP = re.compile(r"\s+")
# Scripts written without spaces (Han, Kana, Hangul, full-width forms): a cut may fall after any of
# their characters, or a Chinese text would have no boundary to shorten at.
_UNSPACED = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\uff00-\uffef]")


@dataclass(frozen=True, slots=True)
class PackCandidate:
    id: str
    header: str
    body: str


@dataclass(frozen=True, slots=True)
class PackedItem:
    id: str
    rank: int  # position in the ranking the packer was given, from 0
    text: str
    tokens: int
    shortened: bool


@dataclass(frozen=True, slots=True)
class Pack:
    items: tuple[PackedItem, ...]
    context_text: str
    used_tokens: int
    dropped: int
    shortened: int


def _block(number: int, candidate: PackCandidate, body: str) -> str:
    return f"[{number}] {candidate.header}\n{body}\n"


def _cut_points(body: str) -> list[int]:
    """Candidate end offsets, longest first: sentence ends, word gaps, and after each character of a
    script written without spaces."""
    sentences = [m.start() for m in _SENTENCE_END.finditer(body)]
    words = [m.start() for m in _WORD_GAP.finditer(body)]
    characters = [m.end() for m in _UNSPACED.finditer(body)]
    return sorted(set(sentences + words + characters), reverse=True)


def _shorten(number: int, candidate: PackCandidate, budget: int, counter: TokenCounter) -> tuple[str, int] | None:
    """The longest block cut at a boundary that fits `budget` tokens, preferring sentence ends."""
    body = candidate.body.strip()
    points = _cut_points(body)
    fitting = _bisect_points(number, candidate, body, points, budget, counter)
    if not fitting:
        return None
    best = fitting[0]
    sentence_ends = {m.start() for m in _SENTENCE_END.finditer(body)}
    sentence_fits = [p for p in fitting if p in sentence_ends]
    if sentence_fits and sentence_fits[0] >= 0.6 * best:  # a whole sentence, unless it loses too much
        best = sentence_fits[0]
    text = _block(number, candidate, body[:best].rstrip() + ELLIPSIS)
    tokens = counter.count(text)
    if tokens > budget:  # BPE is not strictly monotone in the prefix; fall back to the verified cut
        text = _block(number, candidate, body[: fitting[0]].rstrip() + ELLIPSIS)
        tokens = counter.count(text)
    return text, tokens


def _bisect_points(
    number: int, candidate: PackCandidate, body: str, points: list[int], budget: int, counter: TokenCounter
) -> list[int]:
    """Binary-search the longest fitting cut (shorter cuts never count more); it and all below, longest first."""
    ascending = sorted(p for p in points if p > 0)
    low, high, found = 0, len(ascending) - 1, -1
    while low <= high:
        middle = (low + high) // 2
        text = _block(number, candidate, body[: ascending[middle]].rstrip() + ELLIPSIS)
        if counter.count(text) <= budget:
            found, low = middle, middle + 1
        else:
            high = middle - 1
    return list(reversed(ascending[: found + 1])) if found >= 0 else []


def _hard_cut(number: int, candidate: PackCandidate, budget: int, counter: TokenCounter) -> tuple[str, int]:
    """Last resort for the top item under a tiny budget: its header and the longest prefix of the body
    that fits (cut inside a word), or when not even the header fits, the longest prefix of the body."""
    body = candidate.body.strip()
    room = budget - counter.count(_block(number, candidate, ELLIPSIS.strip()))
    if room > 0:
        cut = counter.decode(counter.encode(body)[:room]).rstrip("\ufffd").rstrip()  # no split character
        while cut:
            text = _block(number, candidate, cut + ELLIPSIS)
            count = counter.count(text)
            if count <= budget:
                return text, count
            cut = cut[:-1].rstrip()
    cut = counter.decode(counter.encode(body)[:budget]).rstrip("\ufffd")
    while cut and counter.count(cut) > budget:
        cut = cut[:-1]
    return cut, counter.count(cut)


def _unsaid(body: str, said: str) -> tuple[str, bool] | None:
    """`body` without the lines (after its first, a heading) that `said` already holds, and whether
    any went; None when only the heading would be left."""
    lines = body.strip().split("\n")
    if len(lines) == 1 or not said:
        return body, False
    kept = [lines[0]] + [line for line in lines[1:] if normalise(line.removeprefix("- ")) not in said]
    if len(kept) == 1:
        return None
    return "\n".join(kept), len(kept) < len(lines)


def pack_context(ranked: Sequence[PackCandidate], max_items: int, max_tokens: int, counter: TokenCounter) -> Pack:
    """Pack `ranked` (best first) under `max_items` and `max_tokens`; see the module docstring.

    `dropped` is how many of the top `max_items` of the ranking are missing from the pack: the
    items an unlimited token budget would have packed that this budget left out.
    """
    items: list[PackedItem] = []
    used = 0
    said = ""  # the normalised bodies packed so far
    smallest = counter.count("[9] x\ny\n")
    for rank, candidate in enumerate(ranked):
        remaining = max_tokens - used
        if len(items) == max_items or (items and remaining < smallest):
            break
        unsaid = _unsaid(candidate.body, said)
        if unsaid is None:
            continue
        elided = unsaid[1]
        if elided:
            candidate = replace(candidate, body=unsaid[0])
        number = len(items) + 1
        whole = _block(number, candidate, candidate.body.strip())
        whole_tokens = counter.count(whole)
        if whole_tokens <= remaining:
            items.append(PackedItem(candidate.id, rank, whole, whole_tokens, elided))
            used += whole_tokens
            said += "\x00" + normalise(candidate.body)
            continue
        cut = (
            _shorten(number, candidate, remaining, counter) if remaining >= MIN_SHORTENED_TOKENS or not items else None
        )
        if cut is None and not items:
            cut = _hard_cut(number, candidate, remaining, counter)
        if cut is not None:
            items.append(PackedItem(candidate.id, rank, cut[0], cut[1], True))
            used += cut[1]
            said += "\x00" + normalise(cut[0])
    body = "".join(item.text for item in items)
    exact = counter.count(body)
    while exact > max_tokens and len(items) > 1:  # cannot happen by construction; kept as a guard
        items.pop()
        body = "".join(item.text for item in items)
        exact = counter.count(body)
    packed_ranks = {item.rank for item in items}
    dropped = sum(1 for rank in range(min(max_items, len(ranked))) if rank not in packed_ranks)
    return Pack(tuple(items), body, exact, dropped, sum(1 for item in items if item.shortened))
