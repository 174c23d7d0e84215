"""The window a date phrase names: calendar arithmetic on days, shared by the English and the Chinese
readers. Every window is [start, end) in whole UTC days; a window that falls outside the calendar
(`as_of` near year 1 or 9999) is no window, never an error."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta

__all__ = [
    "Days",
    "TimeWindow",
    "day",
    "days_back",
    "month_of",
    "months_back",
    "past_month",
    "past_weekday",
    "past_year_month",
    "span_back",
    "to_window",
    "week_around",
    "week_of",
    "weekend_of",
    "year_of",
]

Days = tuple[date, date]  # [first day, day after the last)


@dataclass(frozen=True, slots=True)
class TimeWindow:
    """[start, end) in seconds since the epoch, and the phrase it was read from, as the query spells it."""

    start: float
    end: float
    phrase: str

    def holds(self, timestamp: float) -> bool:
        return self.start <= timestamp < self.end


def to_window(days: Days, phrase: str) -> TimeWindow:
    first, after = days
    start = datetime(first.year, first.month, first.day, tzinfo=UTC)
    end = datetime(after.year, after.month, after.day, tzinfo=UTC)
    return TimeWindow(start.timestamp(), end.timestamp(), phrase)


def day(moment: date) -> Days:
    return moment, moment + timedelta(days=1)


def days_back(today: date, count: int) -> Days:
    return day(today - timedelta(days=count))


def week_of(moment: date) -> Days:
    """The calendar week (Monday to Sunday) that holds `moment`."""
    monday = moment - timedelta(days=moment.weekday())
    return monday, monday + timedelta(days=7)


def week_around(moment: date) -> Days:
    """A week centred on `moment`: "two weeks ago" is about then, give or take three days."""
    return moment - timedelta(days=3), moment + timedelta(days=4)


def weekend_of(monday: date) -> Days:
    """The Saturday and Sunday before the week that starts on `monday`."""
    return monday - timedelta(days=2), monday


def month_of(year: int, month: int) -> Days:
    first = date(year, month, 1)
    return first, (first + timedelta(days=32)).replace(day=1)


def months_back(today: date, count: int) -> Days:
    index = today.year * 12 + today.month - 1 - count
    return month_of(index // 12, index % 12 + 1)


def past_month(today: date, month: int) -> Days:
    """The latest `month` that has begun by `today` (a month named alone is in the past)."""
    return month_of(today.year if month <= today.month else today.year - 1, month)


def past_year_month(today: date, month: int, day_of_month: int) -> Days:
    """The latest `month`/`day_of_month` on or before `today`."""
    moment = date(today.year, month, day_of_month)
    if moment > today:
        moment = date(today.year - 1, month, day_of_month)
    return day(moment)


def year_of(year: int) -> Days:
    return date(year, 1, 1), date(year + 1, 1, 1)


def past_weekday(today: date, weekday: int, *, strictly: bool) -> date:
    """The latest `weekday` (0 is Monday) on or before `today`, or before it when `strictly`."""
    back = (today.weekday() - weekday) % 7
    if back == 0 and strictly:
        back = 7
    return today - timedelta(days=back)


def span_back(today: date, count_days: int) -> Days:
    """From `count_days` before today through today: "the past two weeks"."""
    return today - timedelta(days=count_days), today + timedelta(days=1)
