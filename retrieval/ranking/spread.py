"""Questions about several events ("which did I do first, the 5K or the league?", "how many road trips",
"how much in total"): their answer lies in several sessions, one event each, and a ranking by relevance
alone fills its top with the turns of the one session that matches best. For such a question each
further turn of a session already represented above it counts for less: the n-th turn of a session
(n = 0 for its best) keeps SESSION_DECAY ** n of its score, so the top spreads over the sessions that
match before it takes a session's second and third turns. A memory without a session is its own.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from .blend import Ranked

__all__ = ["SESSION_DECAY", "asks_several_events", "spread_sessions"]

SESSION_DECAY = 1.0  # off: measured below
# What asks about more than one event: an order, a count or a total, a comparison.
_SEVERAL = re.compile(
    r"\b(?:how\s+many|in\s+total|total|combined|altogether|order|first|earliest|latest|compared?|comparison"
    r"|difference|between|both|each|which\s+\w+\s+(?:did|happened|came|was)|more\s+\w+\s+than)\b",
    re.IGNORECASE,
)


def asks_several_events(query: str) -> bool:
    return _SEVERAL.search(query) is not None


def spread_sessions(ranked: Sequence[Ranked], decay: float = SESSION_DECAY) -> list[Ranked]:
    """`ranked` with each session's n-th turn at `decay ** n` of its score, best first, ties by id."""
    seen: dict[str, int] = {}
    spread = []
    for r in ranked:
        session = r.candidate.session
        if not session:
            spread.append(r)
            continue
        n = seen.get(session, 0)
        seen[session] = n + 1
        spread.append(replace(r, score=r.score * decay**n) if n else r)
    spread.sort(key=lambda r: (-r.score, r.id))
    return spread
