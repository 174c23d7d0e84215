"""Date phrases read against a fixed time of asking, in English and Chinese: the window each names and
the phrase exactly as the query spells it; what names no date; and queries built to be slow or to
fall off the calendar, which give an answer (a window or none) instead of an error."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from retrieval.ranking import query_window

ASKED = datetime(2026, 12, 3, 10, tzinfo=UTC)  # a Thursday


def _day(moment: float) -> str:
    return datetime.fromtimestamp(moment, UTC).strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("query", "phrase", "start", "end"),
    [
        ("What happened yesterday?", "yesterday", "2026-12-02", "2026-12-03"),
        ("what did we do today", "today", "2026-12-03", "2026-12-04"),
        ("what came up the day before yesterday", "the day before yesterday", "2026-12-01", "2026-12-02"),
        ("What did we decide last week?", "last week", "2026-11-23", "2026-11-30"),
        ("What happened 10 days ago?", "10 days ago", "2026-11-23", "2026-11-24"),
        ("What did we decide on Wednesday last week?", "on Wednesday last week", "2026-11-25", "2026-11-26"),
        ("what was agreed last week's Wednesday", "last week's Wednesday", "2026-11-25", "2026-11-26"),
        ("notes from Wednesday of last week", "from Wednesday of last week", "2026-11-25", "2026-11-26"),
        ("what did we ship the Monday before last", "the Monday before last", "2026-11-23", "2026-11-24"),
        ("what did we ship last Monday", "last Monday", "2026-11-30", "2026-12-01"),
        ("what did we ship on Monday", "on Monday", "2026-11-30", "2026-12-01"),
        ("the standup on Thursday", "on Thursday", "2026-12-03", "2026-12-04"),
        ("what broke last Thursday", "last Thursday", "2026-11-26", "2026-11-27"),
        ("decisions earlier this month", "earlier this month", "2026-12-01", "2026-12-04"),
        ("what changed earlier this week", "earlier this week", "2026-11-30", "2026-12-04"),
        ("what did I do over the weekend", "over the weekend", "2026-11-28", "2026-11-30"),
        ("what did I do last weekend", "last weekend", "2026-11-28", "2026-11-30"),
        ("what happened two weeks ago about the migration", "two weeks ago", "2026-11-16", "2026-11-23"),
        ("what happened the week before last", "the week before last", "2026-11-16", "2026-11-23"),
        ("what did we decide this week", "this week", "2026-11-30", "2026-12-07"),
        ("what did I do last month", "last month", "2026-11-01", "2026-12-01"),
        ("releases in the past two weeks about the parser", "in the past two weeks", "2026-11-19", "2026-12-04"),
        ("the races I ran during the past month", "during the past month", "2026-11-03", "2026-12-04"),
        ("anything from March?", "from March", "2026-03-01", "2026-04-01"),
        ("What did I buy in May?", "in May", "2026-05-01", "2026-06-01"),
        ("what happened in December", "in December", "2026-12-01", "2027-01-01"),
        ("what did we plan last March", "last March", "2026-03-01", "2026-04-01"),
        ("What did we discuss on 7 May 2023?", "on 7 May 2023", "2023-05-07", "2023-05-08"),
        ("the call on May 7th, 2023 about rates", "on May 7th, 2023", "2023-05-07", "2023-05-08"),
        ("the review on the 7th of May", "on the 7th of May", "2026-05-07", "2026-05-08"),
        ("what did we ship on 5/12", "on 5/12", "2026-05-12", "2026-05-13"),
        ("the outage on 2026-11-20", "on 2026-11-20", "2026-11-20", "2026-11-21"),
        ("where did we travel in 2022", "in 2022", "2022-01-01", "2023-01-01"),
        ("what happened 3 months ago", "3 months ago", "2026-09-01", "2026-10-01"),
        ("上周三我们决定了什么？", "上周三", "2026-11-25", "2026-11-26"),
        ("昨天发生了什么", "昨天", "2026-12-02", "2026-12-03"),
        ("前天的会议", "前天", "2026-12-01", "2026-12-02"),
        ("两周前讨论的方案", "两周前", "2026-11-16", "2026-11-23"),
        ("这个月初做了哪些决定", "这个月初", "2026-12-01", "2026-12-04"),
        ("上周做了什么", "上周", "2026-11-23", "2026-11-30"),
        ("上个月的发布", "上个月", "2026-11-01", "2026-12-01"),
        ("三天前的记录", "三天前", "2026-11-30", "2026-12-01"),
        ("三个月前的计划", "三个月前", "2026-09-01", "2026-10-01"),
        ("上周末去了哪里", "上周末", "2026-11-28", "2026-11-30"),
        ("最近两周的问题", "最近两周", "2026-11-19", "2026-12-04"),
        ("2023年5月7日的会议", "2023年5月7日", "2023-05-07", "2023-05-08"),
        ("五月份的账单", "五月份", "2026-05-01", "2026-06-01"),
        ("去年的目标", "去年", "2025-01-01", "2026-01-01"),
        ("星期一的站会", "星期一", "2026-11-30", "2026-12-01"),
    ],
)
def test_a_phrase_reads_as_its_window_and_is_reported_as_written(query, phrase, start, end):
    window = query_window(query, ASKED)
    assert window is not None
    assert (window.phrase, _day(window.start), _day(window.end)) == (phrase, start, end)


@pytest.mark.parametrize(
    "query",
    [
        "I may go to the gym",
        "we should order 3 pizzas",
        "why did release 4.2 fail (12)",
        "what caused incident 1234",
        "purity rate of up to 50%",
        "7489 base pairs",
        "year 9999",
        "what is the plan for next week",
        "一个月有多少天",
        "How many days ago did I meet Emma?",
    ],
)
def test_a_query_that_names_no_past_date_has_no_window(query):
    assert query_window(query, ASKED) is None


@pytest.mark.parametrize("as_of", [datetime(1, 1, 1, tzinfo=UTC), datetime(9999, 12, 31, 23, tzinfo=UTC)])
@pytest.mark.parametrize(
    "query",
    ["in the past 3 days", "the past month", "12/31", "last monday", "两周前", "the week before last", "上上周末"],
)
def test_a_window_off_the_calendar_is_no_window_and_no_error(query, as_of):
    window = query_window(query, as_of)
    assert window is None or window.start < window.end


@pytest.mark.parametrize(
    "query",
    [("12/11 1/2 3/4 " * 700)[:8192], "1 " * 4096, ("last week " * 900)[:8192], ("上上上个" * 2000)[:8192]],
)
def test_a_long_adversarial_query_reads_its_first_phrase(query):
    window = query_window(query, ASKED)
    first = query.split()[0] if query[0].isascii() else None
    assert (window.phrase if window else None) == {"12/11": "12/11", "1": None, "last": "last week", None: None}[first]


def test_a_phrase_far_into_a_long_query_is_read_where_it_is():
    window = query_window("the notes " * 800 + "from last week", ASKED)
    assert window is not None and window.phrase == "from last week"


def test_the_patterns_read_only_around_the_first_date_words():
    """The cost of reading a query is bounded: a phrase after its first MAX_DATE_WORDS date words, far
    from them, is not read."""
    from retrieval.ranking import MAX_DATE_WORDS

    crowded = "this " * MAX_DATE_WORDS + "notes " * 100
    assert query_window(crowded + "from last week", ASKED) is None
    assert query_window("this " * (MAX_DATE_WORDS - 1) + "notes " * 100 + "from last week", ASKED) is not None
