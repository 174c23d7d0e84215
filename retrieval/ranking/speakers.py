"""Who a query asks about: a question naming one speaker prefers that speaker's memories.

In a conversation both speakers talk about each other; "What did Caroline paint?" is answered by
what Caroline said far more often than by what her friend said about her. A memory's speaker
(domain/records.py) is in its index payload. When a query names exactly one of the speakers among
its candidates, the others' memories keep SPEAKER_PRIOR of their relevance, and the query is matched
again without the name (every one of that speaker's memories carries it; it would favour the other
speaker's memories that mention the name, and let a question that names the wrong person match on
the name alone). A chat's roles are named by person instead: a question
in the first person ("what did I buy") asks about the user's turns, one about what "you said" or
recommended about the assistant's.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

__all__ = ["SPEAKER_PRIOR", "Addressed", "addressed_speaker"]

# The share of its relevance a memory of another speaker keeps: a prior, not a filter; the answer to
# "what did Caroline say about Melanie's kids" may still be Melanie's own turn.
SPEAKER_PRIOR = 0.9

USER_ROLE = "user"
ASSISTANT_ROLE = "assistant"
_FIRST_PERSON = re.compile(r"\b(i|i'm|i've|i'd|i'll|me|my|mine|myself)\b", re.IGNORECASE)
_TO_THE_ASSISTANT = re.compile(
    r"\b(remind me|you (mentioned|said|told|recommended|suggested|gave|provided|listed|shared|wrote|"
    r"explained|described|came up with|helped)|your (suggestion|recommendation|advice|answer|list))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True, slots=True)
class Addressed:
    """The speaker a query asks about, and the query without that speaker's name."""

    speaker: str
    query: str


def _names_in(query: str, speakers: Iterable[str]) -> list[str]:
    return [s for s in speakers if re.search(rf"(?<!\w){re.escape(s)}(?!\w)", query, re.IGNORECASE)]


def addressed_speaker(query: str, speakers: Iterable[str]) -> Addressed | None:
    """The one speaker among `speakers` that `query` asks about; None for none or several."""
    known = {s for s in speakers if s and s.strip()}
    named = _names_in(query, known - {USER_ROLE, ASSISTANT_ROLE})
    if len(named) == 1:
        name = named[0]
        stripped = re.sub(rf"(?<!\w){re.escape(name)}('s)?(?!\w)", " ", query, flags=re.IGNORECASE)
        return Addressed(name, " ".join(stripped.split()) or query)
    if named or not {USER_ROLE, ASSISTANT_ROLE} <= known:
        return None
    if _TO_THE_ASSISTANT.search(query):
        return Addressed(ASSISTANT_ROLE, query)
    if _FIRST_PERSON.search(query):
        return Addressed(USER_ROLE, query)
    return None
