"""Dates in a query ("last Saturday", "in May", "two weeks ago", "on 7 May 2023") resolved against the
time it is asked, as a window of time that the ranking prefers, never a filter.

A memory records when it occurred; a question about "last Saturday" is about what occurred then, and
the words of the answer rarely say so. The phrase is found and resolved by dateparser (relative to
`as_of`, preferring the past); its window is as wide as the phrase is precise: a day for a day or a
weekday, a week for "last week" or "two weeks ago", a month for "in May", a year for "in 2022".
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

__all__ = ["DATE_BOOST", "TimeWindow", "query_window"]

# A memory that occurred inside the window gains this share of its relevance: as much as recency and
# importance together can move it (ranking/blend.py), so that a date in the question reorders close
# candidates without lifting one that does not match the question's words or meaning.
DATE_BOOST = 0.2

_MONTHS = "january|february|march|april|may|june|july|august|september|october|november|december"
_WEEKDAYS = "monday|tuesday|wednesday|thursday|friday|saturday|sunday"
# Only a phrase with one of these says a date; dateparser also reads words such as "we" as dates.
_DATE_WORD = re.compile(
    rf"\b({_MONTHS}|{_WEEKDAYS}|yesterday|today|tonight|ago|last|next|week|month|year|\d{{4}}|\d{{1,2}}(st|nd|rd|th)?)\b",
    re.IGNORECASE,
)
_DAY = re.compile(rf"\b({_WEEKDAYS}|yesterday|today|tonight|days?)\b|\b\d{{1,2}}(st|nd|rd|th)?\b", re.IGNORECASE)
_WEEK = re.compile(r"\bweeks?\b", re.IGNORECASE)
_MONTH = re.compile(rf"\b({_MONTHS}|months?)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(\d{4}|years?)\b", re.IGNORECASE)
# "may" alone is the verb far more often than the month.
_MODAL_MAY = re.compile(r"^may$", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """[start, end) in seconds since the epoch, and the phrase it was read from."""

    start: float
    end: float
    phrase: str

    def holds(self, timestamp: float) -> bool:
        return self.start <= timestamp < self.end


def _window(phrase: str, day: datetime) -> tuple[datetime, datetime]:
    midnight = day.replace(hour=0, minute=0, second=0, microsecond=0)
    if _DAY.search(phrase) and not _WEEK.search(phrase):
        return midnight, midnight + timedelta(days=1)
    if _WEEK.search(phrase):
        return midnight - timedelta(days=3), midnight + timedelta(days=4)
    if _MONTH.search(phrase):
        start = midnight.replace(day=1)
        return start, (start + timedelta(days=32)).replace(day=1)
    start = midnight.replace(month=1, day=1)
    return start, start.replace(year=start.year + 1)


def query_window(query: str, as_of: datetime) -> TimeWindow | None:
    """The window of the first date phrase of `query` relative to `as_of`; None when it names no date."""
    if not _DATE_WORD.search(query):  # most questions: no parse at all
        return None
    from dateparser.search import search_dates

    found = search_dates(
        query,
        languages=["en"],
        settings={
            "RELATIVE_BASE": as_of.astimezone(UTC).replace(tzinfo=None),
            "PREFER_DATES_FROM": "past",
            "RETURN_AS_TIMEZONE_AWARE": False,
        },
    )
    for phrase, moment in found or []:
        if (
            _DATE_WORD.search(phrase)
            and not _MODAL_MAY.match(phrase.strip())
            and (_DAY.search(phrase) or _WEEK.search(phrase) or _MONTH.search(phrase) or _YEAR.search(phrase))
        ):
            start, end = _window(phrase, moment.replace(tzinfo=UTC))
            return TimeWindow(start.timestamp(), end.timestamp(), phrase)
    return None
