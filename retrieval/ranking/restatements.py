"""Restatements: a pack never holds the same words twice.

Walking the ranking best first, a candidate collapses into a better-ranked one it restates:

- `contained`: one's normalised text contains the other's (a copy, or a line quoted in a longer note);
- `carried`: one holds every sentence of the other, word for word (a summary of it that kept all
  it said, a note that restates it sentence by sentence);
- `near-duplicate`: their dense vectors have cosine >= NEAR_DUPLICATE_COSINE.

Carriage is checked on the words themselves, never on `derived_from`: a summary that kept one
sentence of a member's two does not carry it, and the member stays in the pack. The better-ranked
one is kept: the ranking already says which of the two answers the query better, and a summary's
other lines are still found through their own memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ..domain import Memory, normalise, sentences_of

__all__ = ["NEAR_DUPLICATE_COSINE", "Collapsed", "collapse_restatements"]

# all-MiniLM-L6-v2 puts two wordings of one sentence at about 0.9-0.97 and a sentence and its own
# quotation with a speaker label or a trailing remark at 0.95 and above.
NEAR_DUPLICATE_COSINE = 0.95
# Texts up to this long keep their compared forms in a cache of 4,096 (at most ~50 MB).
MAX_CACHED_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Collapsed:
    id: str
    into: str
    reason: str


@dataclass
class _Kept:
    position: int
    memory: Memory
    text: str
    sentences: tuple[str, ...]

    def carries(self, other: _Kept) -> bool:
        return bool(other.sentences) and all(sentence in self.text for sentence in other.sentences)


def _forms(content: str) -> tuple[str, tuple[str, ...]]:
    """A text's normal form and its normalised sentences: what the word tests compare."""
    return normalise(content), tuple(sentences_of(content))


# once per text: the same memories come back as candidates request after request
_cached_forms = lru_cache(maxsize=4096)(_forms)


def _compared(memory: Memory) -> tuple[str, tuple[str, ...]]:
    content = memory.content
    return _cached_forms(content) if len(content) <= MAX_CACHED_CHARS else _forms(content)


class _Pack:
    """The memories kept so far, in pack order, with their texts joined for one substring search."""

    def __init__(self) -> None:
        self.kept: list[_Kept] = []
        self.joined = ""

    def add(self, candidate: _Kept) -> None:
        self.kept.append(candidate)
        self.joined = f"{self.joined}\x00{candidate.text}" if self.joined else candidate.text

    def replace(self, held: list[_Kept], candidate: _Kept) -> None:
        """`candidate` in the slot of the first of `held`, the others of `held` gone."""
        slot = self.kept.index(held[0])
        self.kept = [k for k in self.kept if k not in held]
        self.kept.insert(slot, candidate)
        self.joined = "\x00".join(k.text for k in self.kept)

    def restated_by(self, candidate: _Kept, near: np.ndarray) -> tuple[int, str] | None:
        """The first kept memory (its slot) that `candidate` restates, and why; None if it says something new.

        `near` holds the ranked positions of the memories its vector nearly duplicates. The word tests
        run over all kept memories at once (one substring search over their joined texts): a pack walk
        compares each candidate with up to a hundred kept ones.
        """
        found: list[tuple[int, str]] = []
        text, kept = candidate.text, self.kept
        if text in self.joined:  # one search; a hit across two joined texts is none
            slot = next((i for i, k in enumerate(kept) if text in k.text), None)
            if slot is not None:
                found.append((slot, "contained"))
        if not found and len(candidate.sentences) > 1 and all(s in self.joined for s in candidate.sentences):
            slot = next((i for i, k in enumerate(kept) if k.carries(candidate)), None)
            if slot is not None:
                found.append((slot, "carried"))
        if near.size:
            close = set(near.tolist())
            slot = next((i for i, k in enumerate(kept) if k.position in close), None)
            if slot is not None:
                found.append((slot, "near-duplicate"))
        return min(found) if found else None


def _similarities(ranked: Sequence[Memory], vectors: Mapping[str, np.ndarray]) -> np.ndarray:
    """Cosine of every two ranked memories in one product; -1 where a vector is missing."""
    present = [i for i, m in enumerate(ranked) if m.id in vectors]
    if not present:
        return np.full((len(ranked), len(ranked)), -1.0, dtype=np.float32)
    unit = np.zeros((len(ranked), len(vectors[ranked[present[0]].id])), dtype=np.float32)
    unit[present] = np.stack([vectors[ranked[i].id] for i in present])
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    similarity = unit @ unit.T
    missing = sorted(set(range(len(ranked))) - set(present))
    similarity[missing, :] = -1.0
    similarity[:, missing] = -1.0
    return similarity


def collapse_restatements(
    ranked: Sequence[Memory], vectors: Mapping[str, np.ndarray], keep: int
) -> tuple[list[int], list[Collapsed]]:
    """Positions of `ranked` to keep (at most `keep`, in pack order), and what collapsed into what.

    A candidate that restates a kept memory collapses into the first such one. A candidate that holds
    all of a kept memory's words and more takes that memory's place instead (nothing is lost,
    nothing said twice), and any other kept memory it holds collapses into it too.
    """
    near = _similarities(ranked, vectors) >= NEAR_DUPLICATE_COSINE
    pack = _Pack()
    collapsed: list[Collapsed] = []
    for position, memory in enumerate(ranked):
        if len(pack.kept) == keep:
            break
        candidate = _Kept(position, memory, *_compared(memory))
        restated = pack.restated_by(candidate, np.flatnonzero(near[position, :position]))
        if restated is not None:
            collapsed.append(Collapsed(memory.id, pack.kept[restated[0]].memory.id, restated[1]))
            continue
        # A copy that holds a kept memory whole and more takes its place; a summary that merely carries a
        # kept member's sentences among others does not (it would spend the member's budget on the rest).
        text = candidate.text
        held = [k for k in pack.kept if k.text in text]
        if held:
            pack.replace(held, candidate)
            collapsed += [Collapsed(k.memory.id, memory.id, "contained") for k in held]
        else:
            pack.add(candidate)
    return [k.position for k in pack.kept], collapsed
