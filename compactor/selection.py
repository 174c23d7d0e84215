"""Reading what a pass plans on: one read snapshot of the system of record, plus stored vectors."""

from __future__ import annotations

from dataclasses import replace
from datetime import datetime, timedelta

import numpy as np

from retrieval import MemoryEngine, MemoryStatus
from retrieval.domain import format_time

from .options import ReflectOptions
from .plan import Snapshot

__all__ = ["read_snapshot"]


def read_snapshot(engine: MemoryEngine, options: ReflectOptions, now: datetime, lookback: timedelta) -> Snapshot:
    """The memories the requested actions look at, as one consistent snapshot (store.reading).

    Episodes come from the window, widened back by `lookback` (the recurrence lookback), so that a
    new cluster can be seen to recur with earlier episodes.

    Vectors come from the embedding cache, else from the index; a memory with neither is counted as
    unvectored and left out of clustering. Nothing is encoded here.
    """
    wanted = set(options.actions)
    store = engine.store
    # Episodes of every status fill the `limit`, so that the candidate set does not shift when a pass
    # archives or expires some of them; the planner then looks at the active ones only.
    any_status = replace(options.filters, statuses=tuple(MemoryStatus))
    consolidating = bool(wanted & {"summarize", "promote"})
    since, until = format_time(min(options.since, options.until - lookback)), format_time(options.until)
    with store.reading() as connection:
        episodes = store.window_episodes(any_status, since, until, options.limit, connection) if consolidating else []
        window_since = format_time(options.since)
        in_window = sum(1 for memory, _ in episodes if memory.occurred_at >= window_since)
        left_out = store.count_window(any_status, window_since, until, connection) - in_window if consolidating else 0
        overdue = (
            store.overdue(options.filters, format_time(now), options.limit, connection) if "expire" in wanted else []
        )
        stalest = store.stalest(options.filters, options.limit, connection) if wanted & {"decay", "archive"} else []
    fetched = [memory.id for memory, _ in episodes if memory.access_count > 0] if "promote" in wanted else []
    return Snapshot(
        episodes=tuple(memory for memory, _ in episodes),
        overdue=tuple(overdue),
        stalest=tuple(stalest),
        vectors=_stored_vectors(engine, episodes),
        left_out=left_out,
        questions=store.questions_read(fetched),
    )


def _stored_vectors(engine: MemoryEngine, episodes: list) -> dict[str, np.ndarray]:  # type: ignore[type-arg]
    by_digest = engine.embedder.cached_vectors(sorted({digest for _, digest in episodes}))
    vectors = {memory.id: by_digest[digest] for memory, digest in episodes if digest in by_digest}
    missing = [memory.id for memory, _ in episodes if memory.id not in vectors]
    if missing:
        vectors.update(engine.index.dense_vectors(missing))
    return vectors
