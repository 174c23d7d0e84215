"""Priors on fused relevance from what a query says besides its words: the speaker it asks about
(ranking/speakers.py), the time it names (ranking/dates.py) and a memory's key it names exactly
(ranking/semantic_keys.py). Each scales relevance, none filters."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import replace

from .dates import DATE_BOOST, TimeWindow
from .fusion import FusedCandidate
from .semantic_keys import KEY_BOOST
from .speakers import SPEAKER_PRIOR

__all__ = ["with_priors"]


def with_priors(
    candidates: Sequence[FusedCandidate],
    speaker: str | None,
    window: TimeWindow | None,
    keyed: Collection[str] = (),
) -> list[FusedCandidate]:
    """Another speaker's memory keeps SPEAKER_PRIOR of its relevance (a memory nobody is named for
    keeps all of it); one that occurred in `window` gains DATE_BOOST; one whose key the query names
    (its id in `keyed`) gains KEY_BOOST. Best first, ties by id."""
    if speaker is None and window is None and not keyed:
        return list(candidates)
    addressed = speaker.casefold() if speaker is not None else None
    weighed = []
    for candidate in candidates:
        factor = 1.0
        if addressed is not None and candidate.speaker is not None and candidate.speaker.casefold() != addressed:
            factor *= SPEAKER_PRIOR
        if window is not None and window.holds(candidate.occurred_ts):
            factor *= 1.0 + DATE_BOOST
        if candidate.id in keyed:
            factor *= 1.0 + KEY_BOOST
        weighed.append(replace(candidate, relevance=candidate.relevance * factor) if factor != 1.0 else candidate)
    weighed.sort(key=lambda c: (-c.relevance, c.id))
    return weighed
