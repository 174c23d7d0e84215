"""Reads that need a query's vector, run as the service runs them: the vector awaited on the event
loop, the read then on the loop itself when it stays in this process, else on a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
from anyio import to_thread

from retrieval import MemoryEngine, Principal, prepare_read

__all__ = ["read_for_query"]

Result = TypeVar("Result")


async def read_for_query(
    engine: MemoryEngine,
    principal: Principal,
    query: str,
    read: Callable[[np.ndarray], Result],
    *,
    items: Any = None,
    **filter_args: Any,
) -> Result:
    """Run `read` (given the query's vector) for `query` under these filters; `items` as in
    retrieval.prepare_read.

    The request is checked first (retrieval.prepare_read: a refused one never runs the model). The
    vector is awaited on the event loop: the model's thread batches it with every other request's
    texts, and no thread is held waiting meanwhile. The read then runs on the event loop when it is
    small and touches only this process's files, waiting for nothing (SQLite, an embedded Qdrant
    Edge shard, a pack of at most 8 items, no `%` path filter), else on a worker thread. Under 16
    clients the loop did the same reads for less CPU per request than 16 threads taking turns at the
    GIL (docs/evaluation.md#load).
    """
    prepared = prepare_read(engine, principal, query, items=items, **filter_args)
    vector = await asyncio.wrap_future(prepared.vector)
    if prepared.in_process:
        return read(vector)
    return await to_thread.run_sync(read, vector)
