"""English date phrases, read by a table of patterns: each pattern names one kind of phrase and how its
window is computed from the day of asking. Every pattern is a plain regular expression without nested
repetition, so a query is read in time linear in its length, whatever it holds."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from datetime import date, timedelta

from .window import (
    Days,
    day,
    days_back,
    month_of,
    months_back,
    past_month,
    past_weekday,
    past_year_month,
    span_back,
    week_around,
    weekend_of,
    year_of,
)

__all__ = ["PRE_CHECK", "matches"]

_MONTH_NAMES = [
    "january", "february", "march", "april", "may", "june",
    "july", "august", "september", "october", "november", "december",
]  # fmt: skip
_MONTHS = {name: number for number, name in enumerate(_MONTH_NAMES, 1)}
_MONTHS.update({name[:3]: number for name, number in list(_MONTHS.items())})
_MONTHS["sept"] = 9
_WEEKDAY_NAMES = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]
_WEEKDAYS = {name: number for number, name in enumerate(_WEEKDAY_NAMES)}
_COUNTS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "couple of": 2, "a couple of": 2, "three": 3, "few": 3, "a few": 3,
    "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10,
}  # fmt: skip
_UNIT_DAYS = {"day": 1, "week": 7, "month": 30, "year": 365}

_MONTH = r"(?P<month>" + "|".join(_MONTH_NAMES) + ")"
_MONTH_ABBR = r"(?P<month>" + "|".join([*_MONTH_NAMES, "sept", *(m[:3] for m in _MONTH_NAMES)]) + r")\.?"
_WEEKDAY = r"(?P<weekday>" + "|".join(_WEEKDAY_NAMES) + ")"
_COUNT = r"(?P<count>\d{1,3}|a couple of|couple of|a few|few|an?|one|two|three|four|five|six|seven|eight|nine|ten)"
_UNIT = r"(?P<unit>day|week|month|year)s?"
_ORDINAL = r"(?P<day>[0-3]?\d)(?:st|nd|rd|th)?"
_YEAR = r"(?P<year>\d{4})"
# A preposition before a phrase belongs to it: "on Wednesday last week" is what the question says of
# time, and what a search of the rest of its words should not see.
_LEAD = r"(?:(?:on|in|during|from|since|over|at|around|within|for|of|throughout)\s+)?"

Resolver = Callable[[re.Match[str], date], Days | None]


def _count(match: re.Match[str]) -> int:
    text = match["count"].lower()
    return int(text) if text.isdigit() else _COUNTS[text]


def _weekday(match: re.Match[str]) -> int:
    return _WEEKDAYS[match["weekday"].lower()]


def _month(match: re.Match[str]) -> int:
    return _MONTHS[match["month"].lower().rstrip(".")]


def _this_monday(today: date) -> date:
    return today - timedelta(days=today.weekday())


def _ago(match: re.Match[str], today: date) -> Days:
    count, unit = _count(match), match["unit"].lower()
    if unit == "day":
        return days_back(today, count)
    if unit == "week":
        return week_around(today - timedelta(days=7 * count))
    if unit == "month":
        return months_back(today, count)
    return year_of(today.year - count)


def _span(match: re.Match[str], today: date) -> Days | None:
    """ "the past two weeks", "the last month"; "last week" without "the" is the calendar's (below)."""
    if not match["count"] and not match["the"]:
        return None
    count = _count(match) if match["count"] else 1
    return span_back(today, count * _UNIT_DAYS[match["unit"].lower()])


def _calendar(match: re.Match[str], today: date) -> Days:
    """this/last week, month or year, and the one before last."""
    unit, back = match["unit"].lower(), _back(match)
    if unit == "week":
        monday = _this_monday(today) - timedelta(days=7 * back)
        return monday, monday + timedelta(days=7)
    if unit == "month":
        return months_back(today, back)
    return year_of(today.year - back)


def _group(match: re.Match[str], name: str) -> str:
    return (match.groupdict().get(name) or "").lower()


def _back(match: re.Match[str]) -> int:
    """How many calendar weeks (months, years) back: this one, the last, or the one before last."""
    if _group(match, "before_last"):
        return 2
    return 0 if " ".join(_group(match, "which").split()) in ("this", "earlier this") else 1


def _earlier_this(match: re.Match[str], today: date) -> Days:
    first = _calendar(match, today)[0]
    return first, today + timedelta(days=1)


def _weekday_of_week(match: re.Match[str], today: date) -> Days:
    """ "Wednesday last week", "last week's Wednesday", "Wednesday of this week"."""
    monday = _this_monday(today) - timedelta(days=7 * _back(match))
    return day(monday + timedelta(days=_weekday(match)))


def _weekday_before_last(match: re.Match[str], today: date) -> Days:
    return day(past_weekday(today, _weekday(match), strictly=True) - timedelta(days=7))


def _last_weekday(match: re.Match[str], today: date) -> Days:
    return day(past_weekday(today, _weekday(match), strictly=True))


def _weekday_alone(match: re.Match[str], today: date) -> Days:
    return day(past_weekday(today, _weekday(match), strictly=False))


def _weekend(match: re.Match[str], today: date) -> Days:
    monday = _this_monday(today)
    which = _group(match, "which")
    if which == "last" or (which != "this" and today.weekday() < 5):
        return weekend_of(monday)
    return weekend_of(monday + timedelta(days=7))  # this weekend, or the one under way


def _relative_day(match: re.Match[str], today: date) -> Days:
    word = " ".join(match["word"].lower().split())
    back = 2 if word.startswith("the day before") else 1 if word in ("yesterday", "last night") else 0
    return days_back(today, back)


def _full_date(match: re.Match[str], today: date) -> Days | None:
    month, day_of_month = _month(match), int(match["day"])
    if match["year"]:
        return day(date(int(match["year"]), month, day_of_month))
    return past_year_month(today, month, day_of_month)


def _numeric_date(match: re.Match[str], today: date) -> Days | None:
    """5/12 and 5/12/2023 (month first, as the evaluations' English writes it), 2023-05-12."""
    month, day_of_month = int(match["month"]), int(match["day"])
    if match["year"]:
        year = int(match["year"])
        return day(date(year + 2000 if year < 100 else year, month, day_of_month))
    return past_year_month(today, month, day_of_month)


def _month_named(match: re.Match[str], today: date) -> Days:
    month = _month(match)
    if match["year"]:
        return month_of(int(match["year"]), month)
    if _group(match, "which") == "last":
        return month_of(today.year - 1 if month >= today.month else today.year, month)
    return past_month(today, month)


def _year_named(match: re.Match[str], today: date) -> Days:
    return year_of(int(match["year"]))


_WHICH = r"(?P<which>earlier\s+this|this|last|previous|past)"
_PATTERNS: list[tuple[str, Resolver]] = [
    # spans back from today: "in the past two weeks", "over the last few days", "the past month"
    (rf"{_LEAD}(?P<the>the\s+)?(?:past|last|previous)\s+(?:{_COUNT}\s+)?{_UNIT}\b(?!'s)", _span),
    (rf"{_LEAD}{_COUNT}\s+{_UNIT}\s+ago", _ago),
    (
        rf"{_LEAD}(?P<word>the\s+day\s+before\s+yesterday|yesterday|today|tonight|last\s+night"
        r"|this\s+(?:morning|afternoon|evening))\b",
        _relative_day,
    ),
    (
        rf"{_LEAD}(?:the\s+)?(?:(?P<which>this|last|past)\s+)?weekend",
        _weekend,
    ),
    # a weekday of a named week, either way round
    (
        rf"{_LEAD}(?:the\s+)?{_WEEKDAY}\s+(?:of\s+)?(?:the\s+week\s+before\s+(?P<before_last>last)|"
        rf"{_WHICH}\s+week)",
        _weekday_of_week,
    ),
    (
        rf"{_LEAD}(?:the\s+week\s+before\s+(?P<before_last>last)|{_WHICH}\s+week)'s\s+{_WEEKDAY}",
        _weekday_of_week,
    ),
    (rf"{_LEAD}(?:the\s+)?{_WEEKDAY}\s+before\s+last", _weekday_before_last),
    (rf"{_LEAD}(?:last|past|previous)\s+{_WEEKDAY}", _last_weekday),
    (rf"{_LEAD}{_WEEKDAY}(?!'s)", _weekday_alone),
    # the calendar's week, month and year: "last week", "the month before last", "earlier this month"
    (
        rf"{_LEAD}(?:the\s+)?(?P<unit>week|month|year)\s+before\s+(?P<before_last>last)",
        _calendar,
    ),
    (rf"{_LEAD}(?P<which>earlier\s+this)\s+(?P<unit>week|month|year)\b", _earlier_this),
    (rf"{_LEAD}(?P<which>this|last|previous)\s+(?P<unit>week|month|year)\b", _calendar),
    # dates: "7 May 2023", "May 7th, 2023", "the 7th of May", "5/12", "2023-05-12"
    (rf"{_LEAD}(?:the\s+)?{_ORDINAL}\s+(?:of\s+)?{_MONTH_ABBR}(?:,?\s+{_YEAR})?\b", _full_date),
    (rf"{_LEAD}{_MONTH_ABBR}\s+{_ORDINAL}\b(?:,?\s+{_YEAR}\b)?", _full_date),
    (
        rf"{_LEAD}(?P<year>\d{{4}})-(?P<month>[01]\d)-(?P<day>[0-3]\d)\b",
        _numeric_date,
    ),
    (
        rf"{_LEAD}(?<![\d/.])(?P<month>1[0-2]|0?[1-9])/(?P<day>[0-3]?\d)(?:/(?P<year>\d{{4}}|\d{{2}}))?(?![\d/.])",
        _numeric_date,
    ),
    # months: "in May", "last March", "March 2023"; "may" alone is the verb
    (rf"{_LEAD}(?:(?P<which>last|this)\s+)?{_MONTH}(?:,?\s+{_YEAR})?\b", _month_named),
    # years, with a word that makes a number a year: "in 2022", "during the year 2021"
    (
        r"(?:in|during|since|from|throughout|of)\s+(?:the\s+year\s+)?(?P<year>(?:19|20)\d{2})\b(?![.,]\d)",
        _year_named,
    ),
]
_COMPILED = [(re.compile(rf"\b{pattern}", re.IGNORECASE), resolver) for pattern, resolver in _PATTERNS]
# Most questions hold no date word: they are not read further.
PRE_CHECK = re.compile(
    r"\b(?:" + "|".join([*_MONTH_NAMES, *_WEEKDAY_NAMES]) + r"|yesterday|today|tonight|ago|last|past|previous"
    r"|this|weekend|week|month|year|(?:19|20)\d{2}|\d{1,4}[/-]\d)",
    re.IGNORECASE,
)


def _plain_may(match: re.Match[str]) -> bool:
    """ "may" as the verb: the month needs a preposition, a "last"/"this", a day or a year beside it."""
    if _group(match, "month") != "may" or _group(match, "day"):
        return False
    return len(match.group(0).split()) == 1 and not _group(match, "year")


def matches(text: str, today: date, pos: int = 0, endpos: int | None = None) -> Iterator[tuple[int, int, Days]]:
    """(start, end, window) of each pattern's first phrase in `text[pos:endpos]`, relative to `today`."""
    for pattern, resolver in _COMPILED:
        for match in pattern.finditer(text, pos, len(text) if endpos is None else endpos):
            if _plain_may(match):
                continue
            try:
                days = resolver(match, today)
            except (ValueError, OverflowError):  # no such day (5/31 of June), or outside the calendar
                continue
            if days is not None:
                yield match.start(), match.end(), days
                break
