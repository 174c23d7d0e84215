"""Reads of a query, run as the service runs them: the request prepared, its vector awaited on the event
loop, then the use case on the loop itself when the read stays in this process, else on a worker thread."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import TypeVar

from anyio import to_thread

from retrieval import MemoryEngine, PreparedRead, Principal, prepare_read
from retrieval.usecases import ReadRequest

__all__ = ["read_for_query"]

Request = TypeVar("Request", bound=ReadRequest)
Result = TypeVar("Result")


async def read_for_query(
    engine: MemoryEngine,
    principal: Principal,
    request: Request,
    use_case: Callable[[MemoryEngine, PreparedRead[Request]], Result],
) -> Result:
    """Run `use_case` (recall_context, search_memory, recall) on `request` for `principal`.

    The read is prepared first (retrieval.prepare_read: a refused one never runs the model). The
    vector is awaited on the event loop: the model's thread batches it with every other request's
    texts, and no thread is held waiting meanwhile. The use case then runs on the event loop when the
    read is small and touches only this process's files, waiting for nothing (SQLite, an embedded Qdrant
    Edge shard, a pack of at most 8 items, no `%` path filter), else on a worker thread. Under 16
    clients the loop did the same reads for less CPU per request than 16 threads taking turns at the
    GIL (docs/evaluation.md#load).
    """
    prepared = prepare_read(engine, principal, request)
    await asyncio.wrap_future(prepared.vector)
    if prepared.in_process:
        return use_case(engine, prepared)
    return await to_thread.run_sync(use_case, engine, prepared)
