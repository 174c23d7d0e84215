"""Priors on fused relevance from what a query says besides its words: the speaker it asks about
(ranking/speakers.py) and the time it names (ranking/dates.py). Both scale relevance, neither filters."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from .dates import DATE_BOOST, TimeWindow
from .fusion import FusedCandidate
from .speakers import SPEAKER_PRIOR

__all__ = ["with_priors"]


def with_priors(
    candidates: Sequence[FusedCandidate], speaker: str | None, window: TimeWindow | None
) -> list[FusedCandidate]:
    """Another speaker's memory keeps SPEAKER_PRIOR of its relevance (a memory nobody is named for
    keeps all of it); one that occurred in `window` gains DATE_BOOST. Best first, ties by id."""
    if speaker is None and window is None:
        return list(candidates)
    addressed = speaker.casefold() if speaker is not None else None
    weighed = []
    for candidate in candidates:
        factor = 1.0
        if addressed is not None and candidate.speaker is not None and candidate.speaker.casefold() != addressed:
            factor *= SPEAKER_PRIOR
        if window is not None and window.holds(candidate.occurred_ts):
            factor *= 1.0 + DATE_BOOST
        weighed.append(replace(candidate, relevance=candidate.relevance * factor) if factor != 1.0 else candidate)
    weighed.sort(key=lambda c: (-c.relevance, c.id))
    return weighed
