"""The optional background reflect pass: off by default; a dry run unless configured to apply."""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import Callable

from anyio import to_thread

from compactor import ReflectRequest, reflect
from retrieval import ConflictError, MemoryEngine, Principal
from retrieval.domain import READ, WRITE

from .settings import ServiceSettings

__all__ = ["reflect_every_owner", "run_periodically"]

log = logging.getLogger("xmemo.maintenance")
AGENT_ID = "background-reflect"


def reflect_every_owner(engine: MemoryEngine, settings: ServiceSettings) -> dict[str, dict[str, int]]:
    """One pass over each owner's personal memories; returns the counts per owner and logs them.

    An owner whose memories changed during the pass is skipped with a warning and tried next time.
    """
    counts: dict[str, dict[str, int]] = {}
    request = ReflectRequest(
        actions_csv=settings.reflect_actions or None,
        dry_run=not settings.reflect_apply,
        time_window_hours=settings.reflect_time_window_hours,
    )
    for owner in engine.store.owners():
        principal = Principal(owner_id=owner, agent_id=AGENT_ID, scopes=frozenset({READ, WRITE}))
        try:
            report = reflect(engine, principal, request, settings.reflect)
        except ConflictError as error:
            log.warning(json.dumps({"event": "reflect_conflict", "owner_id": owner, "message": error.message}))
            continue
        counts[owner] = dict(report.counts)
        log.info(
            json.dumps(
                {
                    "event": "reflect",
                    "owner_id": owner,
                    "dry_run": request.dry_run,
                    "counts": counts[owner],
                    "audit_records": len(report.audit_record_ids),
                }
            )
        )
    return counts


async def run_periodically(engine_of: Callable[[], MemoryEngine], settings: ServiceSettings) -> None:
    """Sleep, pass, repeat until cancelled. A failing pass is logged and the loop goes on."""
    while True:
        await asyncio.sleep(settings.reflect_interval_seconds)
        try:
            await to_thread.run_sync(lambda: reflect_every_owner(engine_of(), settings))
        except Exception:  # the process edge of a background task: log, keep maintaining
            log.exception("background reflect pass failed")
