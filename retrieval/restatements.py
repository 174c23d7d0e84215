"""Restatements: a pack never holds the same words twice.

Walking the ranking best first, a candidate collapses into a better-ranked one it restates:

- `contained`: one's normalised text contains the other's (a copy, or a line quoted in a longer note);
- `near-duplicate`: their dense vectors have cosine >= NEAR_DUPLICATE_COSINE;
- `derived`: one was made by reflect from the other (`derived_from`) and carries its words (the whole
  text, or the key sentence a summary took from it).

The better-ranked one is kept: the ranking already says which of the two answers the query better,
and a summary's other lines are still found through their own memories.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from .records import Memory
from .sentences import carries, normalise

__all__ = ["NEAR_DUPLICATE_COSINE", "Collapsed", "collapse_restatements"]

# all-MiniLM-L6-v2 puts two wordings of one sentence at about 0.9-0.97 and a sentence and its own
# quotation with a speaker label or a trailing remark at 0.95 and above.
NEAR_DUPLICATE_COSINE = 0.95


@dataclass(frozen=True, slots=True)
class Collapsed:
    id: str
    into: str
    reason: str

    def to_dict(self) -> dict[str, str]:
        return {"id": self.id, "into": self.into, "reason": self.reason}


def _unit(vector: np.ndarray) -> np.ndarray:
    return vector / max(float(np.linalg.norm(vector)), 1e-12)


def _restates(kept: Memory, candidate: Memory, kept_text: str, text: str, cosine: float | None) -> str | None:
    """Why `candidate` says nothing `kept` does not, if it does not."""
    if text in kept_text:
        return "contained"
    if cosine is not None and cosine >= NEAR_DUPLICATE_COSINE:
        return "near-duplicate"
    if candidate.id in kept.derived_from and carries(kept.content, candidate.content):
        return "derived"
    if kept.id in candidate.derived_from and carries(candidate.content, kept.content):
        return "derived"
    return None


@dataclass
class _Kept:
    position: int
    memory: Memory
    text: str
    unit: np.ndarray | None

    def cosine(self, unit: np.ndarray | None) -> float | None:
        return float(unit @ self.unit) if unit is not None and self.unit is not None else None


def collapse_restatements(
    ranked: Sequence[Memory], vectors: Mapping[str, np.ndarray], keep: int
) -> tuple[list[int], list[Collapsed]]:
    """Positions of `ranked` to keep (at most `keep`, in pack order), and what collapsed into what.

    A candidate that restates a kept memory collapses into it. A candidate that holds all of a kept
    memory's words and more takes that memory's place instead (nothing is lost, nothing said twice),
    and any other kept memory it holds collapses into it too.
    """
    kept: list[_Kept] = []
    collapsed: list[Collapsed] = []
    for position, memory in enumerate(ranked):
        if len(kept) == keep:
            break
        vector = vectors.get(memory.id)
        candidate = _Kept(position, memory, normalise(memory.content), _unit(vector) if vector is not None else None)
        reason = next(((k, r) for k in kept
                       if (r := _restates(k.memory, memory, k.text, candidate.text, k.cosine(candidate.unit)))), None)
        if reason is not None:
            collapsed.append(Collapsed(memory.id, reason[0].memory.id, reason[1]))
            continue
        held = [k for k in kept if k.text in candidate.text]
        if held:
            slot = kept.index(held[0])
            kept = [k for k in kept if k not in held]
            kept.insert(slot, candidate)
            collapsed += [Collapsed(k.memory.id, memory.id, "contained") for k in held]
        else:
            kept.append(candidate)
    return [k.position for k in kept], collapsed
