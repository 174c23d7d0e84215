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

import numpy as np

from ..domain import Memory, normalise, sentences_of

__all__ = ["NEAR_DUPLICATE_COSINE", "Collapsed", "collapse_restatements"]

# all-MiniLM-L6-v2 puts two wordings of one sentence at about 0.9-0.97 and a sentence and its own
# quotation with a speaker label or a trailing remark at 0.95 and above.
NEAR_DUPLICATE_COSINE = 0.95


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
    sentences: list[str]

    def carries(self, other: _Kept) -> bool:
        return bool(other.sentences) and all(sentence in self.text for sentence in other.sentences)


def _restated_by(kept: Sequence[_Kept], candidate: _Kept, cosines: np.ndarray) -> tuple[int, str] | None:
    """The first kept memory (its slot) that `memory` restates, and why; None if it says something new.

    The tests run over all kept memories at once where they can (one substring search over their
    joined texts, one vector comparison): a pack walk compares each candidate with up to 50 kept ones.
    """
    found: list[tuple[int, str]] = []
    text = candidate.text
    joined = "\x00".join(k.text for k in kept)
    if text in joined:  # one search; a hit across two joined texts is none
        slot = next((i for i, k in enumerate(kept) if text in k.text), None)
        if slot is not None:
            found.append((slot, "contained"))
    if not found and len(candidate.sentences) > 1 and all(s in joined for s in candidate.sentences):
        slot = next((i for i, k in enumerate(kept) if k.carries(candidate)), None)
        if slot is not None:
            found.append((slot, "carried"))
    close = np.flatnonzero(cosines >= NEAR_DUPLICATE_COSINE)
    if close.size:
        found.append((int(close[0]), "near-duplicate"))
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
    similarity = _similarities(ranked, vectors)
    kept: list[_Kept] = []
    collapsed: list[Collapsed] = []
    for position, memory in enumerate(ranked):
        if len(kept) == keep:
            break
        candidate = _Kept(position, memory, normalise(memory.content), sentences_of(memory.content))
        restated = _restated_by(kept, candidate, similarity[[k.position for k in kept], position])
        if restated is not None:
            collapsed.append(Collapsed(memory.id, kept[restated[0]].memory.id, restated[1]))
            continue
        # A copy that holds a kept memory whole and more takes its place; a summary that merely carries a
        # kept member's sentences among others does not (it would spend the member's budget on the rest).
        held = [k for k in kept if k.text in candidate.text]
        if held:
            slot = kept.index(held[0])
            kept = [k for k in kept if k not in held]
            kept.insert(slot, candidate)
            collapsed += [Collapsed(k.memory.id, memory.id, "contained") for k in held]
        else:
            kept.append(candidate)
    return [k.position for k in kept], collapsed
