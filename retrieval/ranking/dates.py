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
_DATE_TERMS = rf"{_MONTHS}|{_WEEKDAYS}|yesterday|today|tonight|ago|last|past|next|(?:day|week|month|year)s?"
# Only a phrase with one of these says a date; dateparser also reads words such as "we" as dates.
_DATE_WORD = re.compile(rf"\b({_DATE_TERMS}|\d{{4}}|\d{{1,2}}(st|nd|rd|th)?)\b", re.IGNORECASE)
# What sends a question to dateparser: a date word, a year of this or the last century, an ordinal day
# or a day/month; not any other number, which dateparser reads as a day of this month ("release 4.2",
# "ticket 12") or as a year ("incident 1234"). Parsing such numbers took 6 % of a loaded server's GIL
# (`python -m eval.load`, docs/evaluation.md) and gave no window on the evaluations' questions but three
# wrong ones ("up to 50%" read as a day, "7489 base pairs" as a year).
_PARSE_WORTHY = re.compile(
    rf"\b({_DATE_TERMS}|(?:19|20)\d{{2}}|\d{{1,2}}(st|nd|rd|th)|\d{{1,2}}/\d{{1,2}})\b", re.IGNORECASE
)
_DAY = re.compile(rf"\b({_WEEKDAYS}|yesterday|today|tonight|days?)\b|\b\d{{1,2}}(st|nd|rd|th)?\b", re.IGNORECASE)
_WEEK = re.compile(r"\bweeks?\b", re.IGNORECASE)
_MONTH = re.compile(rf"\b({_MONTHS}|months?)\b", re.IGNORECASE)
_YEAR = re.compile(r"\b(\d{4}|years?)\b", re.IGNORECASE)
# "may" alone is the verb far more often than the month.
_MODAL_MAY = re.compile(r"^may$", re.IGNORECASE)
# A span back from the time of asking, which dateparser does not read: "in the past few weeks",
# "over the last two months", "the past 3 days".
_COUNTS = {"a": 1, "one": 1, "two": 2, "couple of": 2, "three": 3, "few": 3, "four": 4, "five": 5, "six": 6}
_SPAN = re.compile(
    r"\b(?:past|last|previous)\s+(?:(\d{1,3}|a|one|two|three|four|five|six|few|couple of)\s+)?"
    r"(day|week|month|year)s?\b",
    re.IGNORECASE,
)
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}


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
    """The window of the first date phrase of `query` relative to `as_of`; None when it names no date.

    A span ("the past two weeks") runs from that long before `as_of` to the end of its day; "last
    week" and "last month" alone are the calendar week and month before (dateparser's reading)."""
    if not _PARSE_WORTHY.search(query):  # most questions: no parse at all
        return None
    span = _SPAN.search(query)
    if span is not None and span.group(1) is not None:
        count = int(span.group(1)) if span.group(1).isdigit() else _COUNTS[span.group(1).lower()]
        end = as_of.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        start = end - timedelta(days=1 + count * _UNIT_DAYS[span.group(2).lower()])
        return TimeWindow(start.timestamp(), end.timestamp(), span.group(0))
    if span is not None and query[max(0, span.start() - 4) : span.start()].lower().strip() == "the":
        end = as_of.astimezone(UTC).replace(hour=0, minute=0, second=0, microsecond=0) + timedelta(days=1)
        start = end - timedelta(days=1 + _UNIT_DAYS[span.group(2).lower()])  # "the past month": 30 days back
        return TimeWindow(start.timestamp(), end.timestamp(), span.group(0))
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
