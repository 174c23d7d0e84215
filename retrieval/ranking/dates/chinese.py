"""Chinese date phrases ("昨天", "上周三", "两周前", "这个月初", "2023年5月7日"), read by a table of
patterns as the English ones are: plain regular expressions, linear in the query's length."""

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

_DIGITS = {"零": 0, "〇": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_NUMBER = r"(?P<count>\d{1,3}|[零〇一二两三四五六七八九十]{1,3})"
_WEEK = r"(?:周|星期|礼拜|个星期|个礼拜)"
_WEEKDAY = r"(?P<weekday>[一二三四五六日天1-7])"
_UNIT_DAYS = {"天": 1, "日": 1, "周": 7, "星期": 7, "礼拜": 7, "月": 30, "年": 365}

Resolver = Callable[[re.Match[str], date], Days | None]


def number(text: str) -> int:
    """一 to 九十九, 两, and digits."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, ones = text.partition("十")
        return (_DIGITS[tens] if tens else 1) * 10 + (_DIGITS[ones] if ones else 0)
    value = 0
    for character in text:
        value = value * 10 + _DIGITS[character]
    return value


def _weekday(match: re.Match[str]) -> int:
    text = match["weekday"]
    return 6 if text in ("日", "天", "7") else number(text) - 1


def _monday(today: date, back: int) -> date:
    return today - timedelta(days=today.weekday() + 7 * back)


def _back(prefix: str) -> int:
    return {"上上": 2, "上": 1, "这": 0, "本": 0, "这个": 0, "本个": 0}[prefix]


def _relative_day(match: re.Match[str], today: date) -> Days:
    back = {"大前": 3, "前": 2, "昨": 1, "今": 0}[match["which"]]
    return days_back(today, back)


def _week_day(match: re.Match[str], today: date) -> Days:
    return day(_monday(today, _back(match["which"])) + timedelta(days=_weekday(match)))


def _weekday_alone(match: re.Match[str], today: date) -> Days:
    return day(past_weekday(today, _weekday(match), strictly=False))


def _week(match: re.Match[str], today: date) -> Days:
    monday = _monday(today, _back(match["which"]))
    return monday, monday + timedelta(days=7)


def _weekend(match: re.Match[str], today: date) -> Days:
    """上周末 is the weekend before this week (上上周末 the one before it); 这个周末 this week's; 周末
    alone the last one, or the one under way."""
    which = match["which"] or ""
    monday = _monday(today, 0)
    if which.startswith("上"):
        return weekend_of(monday - timedelta(days=7 * (len(which) - 1)))
    if which or today.weekday() >= 5:
        return weekend_of(monday + timedelta(days=7))
    return weekend_of(monday)


def _ago(match: re.Match[str], today: date) -> Days:
    count, unit = number(match["count"]), match["unit"].removeprefix("个")
    if unit in ("天", "日"):
        return days_back(today, count)
    if unit == "月":
        return months_back(today, count)
    if unit == "年":
        return year_of(today.year - count)
    return week_around(today - timedelta(days=7 * count))


def _span(match: re.Match[str], today: date) -> Days:
    unit = match["unit"].removeprefix("个")
    return span_back(today, number(match["count"]) * _UNIT_DAYS[unit])


def _month(match: re.Match[str], today: date) -> Days:
    return months_back(today, _back(match["which"]))


def _month_start(match: re.Match[str], today: date) -> Days:
    """月初: the first ten days of the month (up to today, for this month's)."""
    first = months_back(today, _back(match["which"] or "这"))[0]
    return first, min(first + timedelta(days=10), today + timedelta(days=1))


def _year(match: re.Match[str], today: date) -> Days:
    return year_of(today.year - {"前": 2, "去": 1, "今": 0}[match["which"]])


def _full_date(match: re.Match[str], today: date) -> Days:
    month, day_of_month = number(match["month"]), number(match["day"])
    if match["year"]:
        return day(date(int(match["year"]), month, day_of_month))
    return past_year_month(today, month, day_of_month)


def _month_named(match: re.Match[str], today: date) -> Days:
    month = number(match["month"])
    if match["year"]:
        return month_of(int(match["year"]), month)
    return past_month(today, month)


def _year_named(match: re.Match[str], today: date) -> Days:
    return year_of(int(match["year"]))


_PATTERNS: list[tuple[str, Resolver]] = [
    (r"(?P<which>大前|前|昨|今)(?:天|日|晚|早)", _relative_day),
    (rf"(?P<which>上上|上|这|本)个?{_WEEK}{_WEEKDAY}", _week_day),
    (rf"(?P<which>上上|上|这|本)个?{_WEEK}(?![一二三四五六日天1-7末])", _week),
    (r"(?P<which>上上|上|这个|这|本)?周末", _weekend),
    (rf"(?<![上这本个]){_WEEK}{_WEEKDAY}", _weekday_alone),
    (rf"{_NUMBER}(?P<unit>天|日|个?月|年|{_WEEK})(?:以)?前", _ago),
    (rf"(?:最近|过去|近|这)的?{_NUMBER}(?P<unit>天|日|个月|年|周|星期|礼拜)", _span),
    (r"(?P<which>上上|上|这|本)?个?月初", _month_start),
    (r"(?P<which>上上|上|这|本)个?月(?![初底中\d一二三四五六七八九十])", _month),
    (r"(?P<which>前|去|今)年", _year),
    (
        r"(?:(?P<year>\d{4})年)?(?P<month>\d{1,2}|[一二三四五六七八九十]{1,2})月"
        r"(?P<day>\d{1,2}|[一二三四五六七八九十]{1,3})[日号]",
        _full_date,
    ),
    (
        r"(?:(?P<year>\d{4})年)?(?<![个\d])(?P<month>1[0-2]|[1-9]|十[一二]?|[一二三四五六七八九])月份?(?![前初底中])",
        _month_named,
    ),
    (r"(?P<year>(?:19|20)\d{2})年(?!\d{0,2}月)", _year_named),
]


_COMPILED = [(re.compile(pattern), resolver) for pattern, resolver in _PATTERNS]
PRE_CHECK = re.compile(r"[天日晚早周星期礼拜月年前]")


def matches(text: str, today: date, pos: int = 0, endpos: int | None = None) -> Iterator[tuple[int, int, Days]]:
    """(start, end, window) of each pattern's first phrase in `text[pos:endpos]`, relative to `today`."""
    for pattern, resolver in _COMPILED:
        for match in pattern.finditer(text, pos, len(text) if endpos is None else endpos):
            try:
                days = resolver(match, today)
            except (ValueError, OverflowError, KeyError):  # no such day, outside the calendar, 十十
                continue
            if days is not None:
                yield match.start(), match.end(), days
                break
