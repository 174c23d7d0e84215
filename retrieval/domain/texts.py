"""What text a memory is embedded and indexed with, and the digests that key its cached vectors.

A memory is said by someone: its text is "speaker: content" when it has a speaker (a conversation's
speaker, a chat's role), else its content. The dense side embeds that text whole and, for a memory of
more than one sentence, each sentence as its own unit (the memory is matched by its best unit). BM25
indexes the text together with the turns written just before it in the same session (its stored
`context`) and the month it occurred. The embedding cache keys a vector by its tenant's digest of the
embedded text, so that one tenant's entries never make another's writes or queries fast.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from datetime import datetime

from .records import Memory
from .sentences import SENTENCE_END
from .writing_systems import word_count

__all__ = [
    "MAX_UNITS",
    "SESSION_CONTEXT_CHARS",
    "SESSION_CONTEXT_TURNS",
    "UNIT_MIN_WORDS",
    "bm25_text",
    "context_line",
    "embed_digest",
    "embedding_text",
    "encoded_texts",
    "memory_digest",
    "session_context",
    "spoken",
    "tenant_digest",
    "tenant_of",
    "text_sha256",
    "unit_texts",
]

# BM25 indexes a memory together with the turns written just before it in the same session: in a
# conversation, a turn's words often answer the previous turn, and questions use the words of both.
# Measured on LoCoMo dev (docs/evaluation.md): 0 turns R@10 0.687, 1 turn 0.733, 2 turns 0.760
# (hybrid). The dense vector embeds the memory alone, which measured better than with context.
SESSION_CONTEXT_TURNS = 2
SESSION_CONTEXT_CHARS = 600  # per turn (context_line)


# A memory of more than this many sentences is matched by this many units of consecutive sentences,
# so that one long text cannot cost more than this many vectors (64 KiB of content is ~700 sentences).
MAX_UNITS = 16
# A sentence of fewer words than this carries little a question asks for ("Wow!", "Thanks, Nate!",
# "I love it!"): in LoCoMo dev 20 % of the sentence units, replies whose vectors
# sit near every other such reply. It stays in the whole text's vector. Measured in docs/evaluation.md
# (2, 3 and 4 tried, 4 chosen on half a of the questions: the fewest texts for no loss beyond noise).
UNIT_MIN_WORDS = 4


def spoken(content: str, speaker: str | None) -> str:
    """A text as its speaker said it: "speaker: content", or the content when nobody is named."""
    return f"{speaker}: {content}" if speaker else content


def embedding_text(memory: Memory) -> str:
    """The text whose dense embedding represents a memory as a whole: what its speaker said."""
    return spoken(memory.content, memory.speaker)


def unit_texts(memory: Memory, pairs: bool = False) -> list[str]:
    """The units a memory is also matched by besides its whole text: its sentences ("speaker: sentence"),
    none for a single sentence; with `pairs`, also the turn after the question before it in its session.

    A turn of a conversation often says two things; embedded whole, each pulls the vector away from
    the other, and a question about one of them matches the sentence better than the turn (measured
    in docs/evaluation.md). Past MAX_UNITS sentences, consecutive ones are joined into MAX_UNITS units.
    A sentence of fewer than UNIT_MIN_WORDS words is no unit ("Wow!", "Thanks, Nate!"), nor is a unit
    the whole text or another unit already is: each would be one more text to encode for nothing.
    """
    if memory.derived_from:
        # reflect's summaries and promotions: their sentences are their members' own, already matched
        # as the members; as units they would let a summary outrank each member for its own question
        return []
    whole = embedding_text(memory)
    units = [spoken(s, memory.speaker) for s in _sentence_units(memory.content) if word_count(s) >= UNIT_MIN_WORDS]
    pair = _pair(memory) if pairs else None
    return [unit for unit in dict.fromkeys([*units, *([pair] if pair else [])]) if unit != whole]


def encoded_texts(memory: Memory) -> list[str]:
    """Every text the dense side may have encoded for a memory, under any setting and in any release:
    its whole text, every sentence unit however short (an earlier release encoded those too) and its
    pair. A hard forget purges the cache entries of them all."""
    units = [spoken(s, memory.speaker) for s in _sentence_units(memory.content)]
    pair = _pair(memory)
    return list(dict.fromkeys([embedding_text(memory), *units, *([pair] if pair else [])]))


def _sentence_units(content: str) -> list[str]:
    """The sentences of a text of more than one, joined into MAX_UNITS runs past that many; [] for one."""
    sentences = [s for s in SENTENCE_END.split(" ".join(content.split())) if s]
    if len(sentences) <= 1:
        return []
    size = -(-len(sentences) // MAX_UNITS)
    return [" ".join(sentences[i : i + size]) for i in range(0, len(sentences), size)]


def _pair(memory: Memory) -> str | None:
    """The question the turn before asked, then this turn: how a question about the answer is worded."""
    previous = memory.context.rsplit("\n", 1)[-1] if memory.context else ""
    return f"{previous}\n{embedding_text(memory)}" if "?" in previous else None


def bm25_text(memory: Memory) -> str:
    """The text BM25 indexes: the session context written before the memory, what its speaker said,
    and the month it occurred ("May 2023"), so that a question naming the month or the year finds it.
    Not the day: its number would match every number a question holds ("note 2" on the 2nd); the
    day is the date window's (ranking/dates.py)."""
    parts = [memory.context, embedding_text(memory), _month(memory.occurred_at)]
    return "\n".join(part for part in parts if part)


def _month(occurred_at: str) -> str | None:
    if not occurred_at:
        return None
    return f"{datetime.fromisoformat(occurred_at.replace('Z', '+00:00')):%B %Y}"


def context_line(content: str, speaker: str | None) -> str:
    """How an earlier turn appears in a later turn's context, on one line: its speaker and its first
    SESSION_CONTEXT_CHARS characters, so that one long turn cannot swamp its neighbour."""
    return spoken(" ".join(content[:SESSION_CONTEXT_CHARS].split()), speaker)


def session_context(lines: Sequence[str]) -> str | None:
    """The stored context of a memory from the context lines of the turns before it in its session."""
    kept = list(lines[-SESSION_CONTEXT_TURNS:])
    return "\n".join(kept) if kept else None


def text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# A cache shared across tenants is a timing oracle: remembering a text another tenant had stored took
# 10 ms against 500 ms for a fresh one, so anyone could test whether a text was stored anywhere. Cache
# keys therefore carry the tenant whose entry it is; the same text of two tenants is encoded twice.


def tenant_of(owner_id: str, team_id: str | None) -> str:
    """Whose cache entries these are: a team memory's team (its members share them), else the owner."""
    return f"team:{team_id}" if team_id else f"owner:{owner_id}"


def tenant_digest(tenant: str, text: str) -> str:
    """The cache key of `text` for `tenant`; the length prefix keeps every (tenant, text) pair apart."""
    return text_sha256(f"{len(tenant)}:{tenant}:{text}")


def memory_digest(memory: Memory, text: str) -> str:
    """The cache key of a memory's embedded `text`: its tenant's digest of it."""
    return tenant_digest(tenant_of(memory.owner_id, memory.team_id), text)


def embed_digest(memory: Memory) -> str:
    """The memory's embedding-cache key (stored as `embed_sha256`): its tenant's digest of embedding_text."""
    return memory_digest(memory, embedding_text(memory))
