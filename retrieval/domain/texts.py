"""What text a memory is embedded and indexed with, and the digests that key its cached vectors.

The dense vector embeds a memory's content alone; BM25 indexes the content together with the turns
written just before it in the same session (its stored `context`). The embedding cache keys a vector
by its tenant's digest of the embedded text, so that one tenant's entries never make another's
writes or queries fast.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

from .records import Memory

__all__ = [
    "SESSION_CONTEXT_CHARS",
    "SESSION_CONTEXT_TURNS",
    "bm25_text",
    "embed_digest",
    "embedding_text",
    "memory_digest",
    "session_context",
    "tenant_digest",
    "tenant_of",
    "text_sha256",
]

# BM25 indexes a memory together with the turns written just before it in the same session: in a
# conversation, a turn's words often answer the previous turn, and questions use the words of both.
# Measured on LoCoMo dev (docs/evaluation.md): 0 turns R@10 0.687, 1 turn 0.733, 2 turns 0.760
# (hybrid). The dense vector embeds the memory alone, which measured better than with context.
SESSION_CONTEXT_TURNS = 2
SESSION_CONTEXT_CHARS = 600  # per turn, so that one long turn cannot swamp its neighbour


def embedding_text(memory: Memory) -> str:
    """The text whose dense embedding represents a memory: its content alone."""
    return memory.content


def bm25_text(memory: Memory) -> str:
    """The text BM25 indexes: the session context written before the memory, then its content."""
    return f"{memory.context}\n{memory.content}" if memory.context else memory.content


def session_context(turns: Sequence[str]) -> str | None:
    """The stored context of a memory from the contents that precede it in its session."""
    kept = [turn[:SESSION_CONTEXT_CHARS] for turn in turns[-SESSION_CONTEXT_TURNS:]]
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
