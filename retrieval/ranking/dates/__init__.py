"""Dates in a query ("last Saturday", "Wednesday last week", "in May", "two weeks ago", "上周三", "昨天")
resolved against the time it is asked, as a window of time: one the ranking prefers, or, for a question
that is mostly its date, the one whose memories it reads (ranking/time_led.py).

A memory records when it occurred; a question about "last Saturday" is about what occurred then, and
the words of the answer rarely say so. The phrase is found by two tables of patterns, English
(english.py) and Chinese (chinese.py), and resolved relative to the day of `as_of` (a date named alone
is in the past); its window is as wide as the phrase is precise: a day for a day or a weekday, a
calendar week for "last week", a week around the day for "two weeks ago", a month for "in May", a
year for "in 2022". The phrase reported is the query's own text, its preposition included.

The patterns are plain regular expressions without nested repetition, and they read only the text
around the query's first MAX_DATE_WORDS date words (a month, a weekday, "last", "ago", "5/12", "上周"):
reading a query costs a bounded time whatever it holds, a long text full of numbers included (a recall
on the event loop never waits for it). A window the calendar cannot hold is no window.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from itertools import islice

from . import chinese, english
from .window import Days, TimeWindow, to_window

__all__ = ["DATE_BOOST", "MAX_DATE_WORDS", "TimeWindow", "query_window"]

# A memory that occurred inside the window gains this share of its relevance: as much as recency and
# importance together can move it (ranking/blend.py), so that a date in the question reorders close
# candidates without lifting one that does not match the question's words or meaning.
DATE_BOOST = 0.2
# The patterns read the text around a query's first this many date words, from this many characters
# before each (a preposition, "the 7th of") to this many after ("week before last's Wednesday, 2023").
MAX_DATE_WORDS = 8
REACH_BEFORE = 48
REACH_AFTER = 64


def query_window(query: str, as_of: datetime) -> TimeWindow | None:
    """The window of the query's first date phrase (the longest of those that start there), relative
    to the day of `as_of` in UTC; None when it names no date."""
    today = as_of.astimezone(UTC).date()
    found: list[tuple[int, int, Days]] = []
    for reader in (english, chinese):
        for start, end in _spans(reader.PRE_CHECK, query):
            found.extend(reader.matches(query, today, start, end))
    if not found:
        return None
    start, end, days = min(found, key=lambda match: (match[0], -match[1]))
    return to_window(days, query[start:end].strip())


def _spans(date_word: re.Pattern[str], query: str) -> Iterator[tuple[int, int]]:
    """The stretches of `query` around its first MAX_DATE_WORDS date words, overlapping ones merged."""
    current: tuple[int, int] | None = None
    for hit in islice(date_word.finditer(query), MAX_DATE_WORDS):
        here, there = max(0, hit.start() - REACH_BEFORE), min(len(query), hit.end() + REACH_AFTER)
        if current is not None and here > current[1]:
            yield current
            current = None
        current = (here, there) if current is None else (current[0], max(current[1], there))
    if current is not None:
        yield current
