"""What a query names exactly: an identifier the writer used in a memory's `semantic_key`.

A `semantic_key` (`bug:PAY-2291`, `release:v2.3`) is the name the writer gave a fact; a query that
says `PAY-2291` asks for that fact, more surely than for a note that mentions the id in passing,
whose words BM25 matches just as well. A key's segments (split at `:` and `/`) that hold a letter
and a digit are its identifiers; a word like `user` in `user:preferences` is not one, so "what are
the user's preferences" gains nothing from it. The whole key said verbatim counts as well when it
has more than one segment.
"""

from __future__ import annotations

import re

__all__ = ["KEY_BOOST", "may_name_keys", "names_key", "query_terms"]

# How much a memory whose key the query names gains: as much again as everything else scored it,
# enough for the named fact to lead a note that only mentions its id, not enough to lift a key match
# the query's meaning is far from above every match of it.
KEY_BOOST = 1.0

_TERM = re.compile(r"[\w][\w.:/-]*[\w]|[\w]")
_SEGMENTS = re.compile(r"[:/]")


def query_terms(query: str) -> frozenset[str]:
    """The query's words and identifiers, case folded, with the pieces a `:` or `/` joins."""
    terms: set[str] = set()
    for match in _TERM.finditer(query):
        term = match.group().casefold()
        terms.add(term)
        terms.update(piece for piece in _SEGMENTS.split(term) if piece)
    return frozenset(terms)


def _identifier(segment: str) -> bool:
    return any(ch.isdigit() for ch in segment) and any(ch.isalpha() for ch in segment)


def may_name_keys(terms: frozenset[str]) -> bool:
    """Whether any key could be named by these terms: one of them is an identifier or a whole key."""
    return any(_identifier(term) or _SEGMENTS.search(term) for term in terms)


def names_key(terms: frozenset[str], semantic_key: str) -> bool:
    """Whether a query with these `terms` (query_terms) names this key or one of its identifiers."""
    key = semantic_key.casefold().strip()
    if not key:
        return False
    if key in terms and _SEGMENTS.search(key):
        return True
    return any(_identifier(segment) and segment in terms for segment in _SEGMENTS.split(key))
