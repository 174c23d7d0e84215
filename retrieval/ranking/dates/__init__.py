"""Dates in a query ("last Saturday", "Wednesday last week", "in May", "two weeks ago", "上周三", "昨天")
resolved against the time it is asked, as a window of time: one the ranking prefers, or, for a question
that is mostly its date, the one whose memories it reads (ranking/time_led.py).

A memory records when it occurred; a question about "last Saturday" is about what occurred then, and
the words of the answer rarely say so. The phrase is found by two tables of patterns, English
(english.py) and Chinese (chinese.py), and resolved relative to the day of `as_of` (a date named alone
is in the past); its window is as wide as the phrase is precise: a day for a day or a weekday, a
calendar week for "last week", a week around the day for "two weeks ago", a month for "in May", a
year for "in 2022". The phrase reported is the query's own text, its preposition included.

The patterns are plain regular expressions without nested repetition, and only a query with a date
word is read at all, so that reading a query costs time linear in its length whatever it holds (a
recall on the event loop never waits for it). A window the calendar cannot hold is no window.
"""

from __future__ import annotations

from datetime import UTC, datetime

from . import chinese, english
from .window import Days, TimeWindow, to_window

__all__ = ["DATE_BOOST", "TimeWindow", "query_window"]

# A memory that occurred inside the window gains this share of its relevance: as much as recency and
# importance together can move it (ranking/blend.py), so that a date in the question reorders close
# candidates without lifting one that does not match the question's words or meaning.
DATE_BOOST = 0.2


def query_window(query: str, as_of: datetime) -> TimeWindow | None:
    """The window of the query's first date phrase (the longest of those that start there), relative
    to the day of `as_of` in UTC; None when it names no date."""
    today = as_of.astimezone(UTC).date()
    found: list[tuple[int, int, Days]] = []
    for reader in (english, chinese):
        if reader.PRE_CHECK.search(query):
            found.extend(reader.matches(query, today))
    if not found:
        return None
    start, end, days = min(found, key=lambda match: (match[0], -match[1]))
    return to_window(days, query[start:end].strip())
