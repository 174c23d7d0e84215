"""Questions led by their time: "what happened yesterday?", "what did we decide last week?", "上周三我们
决定了什么？". When what a question says besides its date phrase is at most one word of content, its
answer is whatever occurred in the window, not whatever shares its words: the memories of the window
are its candidates (read from the record by `occurred_at`, retrieval/usecases/retrieve.py) and lead
the ranking, ordered by what words remain. A question that names a topic and a time ("what did Marco
say about the settlement window last week?") keeps the window as a preference (ranking/priors.py).

Either way a relative date phrase ("10 days ago", "last week") is taken out of the words both channels
search: it carries no topic, and "10 days ago" would match any "10" and "days". A phrase that names a
calendar date ("on 7 May 2023", "in March") stays in them: memories write such dates out, and a
conversation's turn often tells of an event on a date other than the one it occurred on.

A question without a date that asks for what is recent ("recent decisions on the project", "the latest
build", "what is Dana working on these days?", "最近的决定") ranks the newest of the memories that
answer first: those whose score is within RECENT_MATCH of the best, newest first. Elsewhere recency is
a tie-breaker (ranking/blend.py); here it ranks, among answers only, so that a fresh note about
something else never leads. The word stays in the searched text: it is often the topic too ("the
current owner of the rewrite").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TypeVar

from .blend import Ranked
from .dates import TimeWindow, query_window

__all__ = [
    "GENERIC_WORDS",
    "RECENT_MATCH",
    "TIME_LED_MAX_TERMS",
    "QueryTime",
    "content_words",
    "lead_with_window",
    "newest_first",
    "read_time",
]

# A question is led by its time when at most this many of its words are content: "what did we decide
# last week" asks for the decisions of the window, "what did Marco say about rates last week" for a topic.
TIME_LED_MAX_TERMS = 1
# What a question about a time says without naming a topic: question words, pronouns, auxiliaries and
# the verbs of telling and happening.
_GENERIC = """a about all an and any anything are as at be been being can could did do does doing done else
    events everything from get go going got had happen happened happening happens has have he her him his
    how i in is it its just me my new news of on or our ours she so some something tell that the their
    them then there these they thing things this those to up us was we went were what whatever when where
    which who whom why will with would you your"""
GENERIC_WORDS = frozenset(_GENERIC.split())
# The same in Chinese, taken out of the text before its characters are counted.
_GENERIC_CHINESE = re.compile(r"什么|哪些|哪个|发生|我们|你们|他们|我|你|了|的|吗|呢|啊|有|过|事情|事|都|做|些|请|告诉")
_WORD = re.compile(r"[^\W\d_]+|\d+", re.UNICODE)
_CJK = re.compile(r"[\u3400-\u9fff]")
# A phrase that names a calendar date rather than a span back from the question.
_ABSOLUTE = re.compile(
    r"january|february|march|april|may|june|july|august|september|october|november|december"
    r"|\b\d{4}\b|\d{1,2}/\d{1,2}|\d+\s*[年月日号]|[一二三四五六七八九十]+月",
    re.IGNORECASE,
)
# Words that ask for the newest of what answers.
_RECENT = re.compile(
    r"\b(?:(?:most\s+)?recent(?:ly)?|latest|newest|lately|current(?:ly)?|these\s+days|nowadays|right\s+now)\b"
    r"|最近的?|最新的?|目前|当前|近来",
    re.IGNORECASE,
)
# Of those, the ones that say when something happened, not what: like a relative date phrase they leave
# the words searched ("What workshop did Caroline attend recently?" searched with "recently" lifted a
# turn that asks "Is that recent?" among the answers, then first as the newest). Adjectives stay: "recent
# decisions", "the current owner" may name the topic.
_RECENT_ADVERB = re.compile(
    r"(?:most\s+)?recently|lately|currently|these\s+days|nowadays|right\s+now|近来", re.IGNORECASE
)
# A candidate answers a question about what is recent when its score is at least this share of the
# best one's; those lead, newest first. Chosen on LoCoMo dev's first half (eval/metrics.py half_of): 0.8
# put a newer, less fitting turn first for a conv-26 question; at 0.9 every half-a answer stayed in the
# top five (one moved from first to fifth: "her current group of friends").
RECENT_MATCH = 0.9


@dataclass(frozen=True, slots=True)
class QueryTime:
    """What a query says of time: its window (None: no date), the words both channels search, whether
    the window leads (a time-led question) or is only preferred, and, for a question without a window,
    the word that asks for what is recent (None: it does not)."""

    window: TimeWindow | None
    words: str
    led: bool
    recent: str | None = None

    @property
    def path(self) -> str | None:
        return None if self.window is None else "time-led" if self.led else "preferred"


def content_words(text: str) -> list[str]:
    """The words of `text` that name something: not generic, not a number; a run of Chinese characters
    counts one word per two characters that remain once the generic ones are out."""
    words = [w for w in _WORD.findall(text.casefold()) if not w.isdigit() and not _CJK.match(w)]
    chinese = "".join(_CJK.findall(_GENERIC_CHINESE.sub("", text)))
    return [w for w in words if w not in GENERIC_WORDS] + [chinese[i : i + 2] for i in range(0, len(chinese), 2)]


def read_time(query: str, as_of: datetime) -> QueryTime:
    """The window `query` names relative to `as_of`, the words to search for it, and whether it leads."""
    window = query_window(query, as_of)
    if window is None:
        recent = _RECENT.search(query)
        if recent is None:
            return QueryTime(None, query, False)
        if not _RECENT_ADVERB.fullmatch(recent.group(0)):
            return QueryTime(None, query, False, recent.group(0))
        rest = " ".join(f"{query[: recent.start()]} {query[recent.end() :]}".split())
        return QueryTime(None, rest or query, False, recent.group(0))
    rest = " ".join(query.replace(window.phrase, " ", 1).split())
    led = len(content_words(rest)) <= TIME_LED_MAX_TERMS
    words = query if _ABSOLUTE.search(window.phrase) else rest
    return QueryTime(window, words or query, led)


Item = TypeVar("Item", bound=Ranked)


def lead_with_window(ranked: Sequence[Item], window: TimeWindow) -> list[Item]:
    """The candidates that occurred in `window` first, each part in its own order."""
    inside = [r for r in ranked if window.holds(r.candidate.occurred_ts)]
    return inside + [r for r in ranked if not window.holds(r.candidate.occurred_ts)]


def newest_first(ranked: Sequence[Item], share: float = RECENT_MATCH) -> list[Item]:
    """The candidates whose score is at least `share` of the best first, newest first (ties by rank),
    then the rest in their order."""
    best = max((r.score for r in ranked), default=0.0)
    answers = [r for r in ranked if r.score >= share * best]
    newest = sorted(answers, key=lambda r: -r.candidate.occurred_ts)  # stable: equal times keep their order
    return newest + [r for r in ranked if r.score < share * best]
