"""Summaries of clusters. The default is extractive and deterministic; a language model can be plugged in
behind the same `Summarizer` interface later, and nothing here needs one.

Extractive selection is maximal marginal relevance (Carbonell and Goldstein, 1998) over the members'
stored vectors: pick the member closest to the cluster centroid, then each next member by
(1 - diversity) * cos(member, centroid) - diversity * max cos(member, picked), until the sentence or
token budget is spent (relevance is scaled down for replies shorter than INFORMATIVE_WORDS). Each
picked member contributes what it said, its speaker in front, less the sentences an earlier line
already holds (members that repeat each other are compressed by the repeats, never by cutting a
member to its first sentence); a line longer than MAX_LINE_TOKENS is cut, and recall then keeps that
member visible, because the summary no longer carries all its words (ranking/restatements.py). The
picks are listed in the order they happened, under a header with the count, the dates and the sessions.

A promotion is a durable fact, read in place of its members: it carries whole, uncut, each member
that restates the fact and each other member that states something (recurrence.py), in the order
they happened, up to the promotion's own token budget; questions and small talk stay out.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from retrieval import Memory
from retrieval.domain import INFORMATIVE_WORDS, SENTENCE_END, key_sentence, normalise, spoken
from retrieval.ranking import TokenCounter

from .clustering import unit_rows

__all__ = ["ClusterView", "ExtractiveSummarizer", "Summarizer", "heading_for", "informativeness", "representatives"]

MAX_LINE_TOKENS = 80  # a single long member cannot take the whole budget


@dataclass(frozen=True, slots=True)
class ClusterView:
    """What a summarizer sees: the members in the order they happened, their vectors in that order, and
    the rows its text should lead with (a promotion's: the members that restate the recurring fact),
    and the rows it carries whole instead of picking by MMR (a promotion's: those and every member that
    states something)."""

    members: tuple[Memory, ...]
    vectors: np.ndarray
    sessions: int
    days: tuple[str, ...]
    lead: tuple[int, ...] = ()
    whole: tuple[int, ...] = ()


class Summarizer(Protocol):
    """Turns a cluster into the text of one memory; `name` is recorded in the summary's metadata."""

    @property
    def name(self) -> str: ...

    def summarize(self, cluster: ClusterView, *, heading: str) -> str: ...


def informativeness(text: str) -> float:
    """min(1, words / INFORMATIVE_WORDS): a short reply ("Thanks, Nate!") says less than a full sentence."""
    return min(1.0, len(text.split()) / INFORMATIVE_WORDS)


def representatives(
    vectors: np.ndarray,
    count: int,
    diversity: float,
    weights: Sequence[float] | None = None,
    lead: Sequence[int] = (),
) -> list[int]:
    """Row indices chosen by MMR against the centroid, relevance scaled by `weights`, the `lead` rows
    before any other; ties go to the earlier row."""
    unit = unit_rows(vectors)
    centroid = unit.mean(axis=0)
    centroid /= max(float(np.linalg.norm(centroid)), 1e-12)
    relevance = unit @ centroid
    if weights is not None:
        relevance = relevance * np.asarray(weights, dtype=np.float64)
    similarity = unit @ unit.T
    chosen: list[int] = []
    while len(chosen) < min(count, len(unit)):
        best, best_score = -1, -np.inf
        waiting = [row for row in lead if row not in chosen]
        for row in waiting or range(len(unit)):
            if row in chosen:
                continue
            redundancy = max((similarity[row, c] for c in chosen), default=0.0)
            score = (1.0 - diversity) * relevance[row] - diversity * redundancy
            if score > best_score + 1e-12:
                best, best_score = row, score
        chosen.append(best)
    return chosen


class ExtractiveSummarizer:
    """Representative member sentences under a sentence and token budget (cl100k); a cluster's `whole`
    rows whole under `whole_max_tokens`."""

    name = "extractive-mmr-v3"

    def __init__(
        self, tokens: TokenCounter, max_sentences: int, max_tokens: int, diversity: float, whole_max_tokens: int
    ) -> None:
        self._tokens = tokens
        self._max_sentences = max_sentences
        self._max_tokens = max_tokens
        self._diversity = diversity
        self._whole_max_tokens = whole_max_tokens

    def summarize(self, cluster: ClusterView, *, heading: str) -> str:
        texts = [spoken(m.content, m.speaker) for m in cluster.members]
        if cluster.whole:
            rows = list(dict.fromkeys([*cluster.lead, *cluster.whole]))
            return self._compose(texts, rows, heading, self._whole_max_tokens, whole=True)
        weights = [informativeness(key_sentence(t)) for t in texts]
        rows = representatives(cluster.vectors, self._max_sentences, self._diversity, weights, cluster.lead)
        return self._compose(texts, rows, heading, self._max_tokens, whole=False)

    def _compose(self, texts: list[str], rows: list[int], heading: str, budget: int, *, whole: bool) -> str:
        """The lines of `rows`, in that order of preference, less the sentences an earlier line holds, to
        `budget` tokens, listed in the order they happened. A summary's lines are cut and it ends at the
        first line past the budget; a promotion's are whole, and one past the budget is left out."""
        used = self._tokens.count(heading)
        picked: dict[int, str] = {}
        said: set[str] = set()
        for row in rows:
            line, sentences = self._line(texts[row], said, cut=not whole)
            if not sentences:
                continue  # everything it says is already in the text
            cost = self._tokens.count("\n" + line)
            if picked and used + cost > budget:
                if whole:
                    continue
                break
            picked[row] = line
            said.update(sentences)
            used += cost
        return self._cut(heading + "".join("\n" + picked[row] for row in sorted(picked)), budget)

    def _line(self, text: str, said: set[str], cut: bool = True) -> tuple[str, list[str]]:
        """`- speaker: sentences` of a member without those already said (cut at MAX_LINE_TOKENS unless
        `cut` is False), and the new ones normalised."""
        label, _, body = text.partition(": ") if ": " in text[:42] else ("", "", text)
        fresh = [s for s in SENTENCE_END.split(" ".join(body.split())) if s and normalise(s) not in said]
        line = (f"{label}: " if label else "") + " ".join(fresh)
        tokens = self._tokens.encode(line) if cut else []
        if len(tokens) > MAX_LINE_TOKENS:
            line = self._tokens.decode(tokens[:MAX_LINE_TOKENS]).rsplit(" ", 1)[0] + " …"
        return f"- {line}", [normalise(s) for s in fresh]

    def _cut(self, text: str, max_tokens: int) -> str:
        tokens = self._tokens.encode(text)
        if len(tokens) <= max_tokens:
            return text
        return self._tokens.decode(tokens[: max_tokens - 1]).rsplit(" ", 1)[0] + " …"


def heading_for(kind: str, cluster: ClusterView) -> str:
    first, last = cluster.days[0], cluster.days[-1]
    span = first if first == last else f"{first} to {last}"
    sessions = f", {cluster.sessions} sessions" if cluster.sessions > 1 else ""
    return f"{kind} of {len(cluster.members)} related memories ({span}{sessions}):"
