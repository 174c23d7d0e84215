"""Copying one system of record into another (`xmemo migrate-store`): records with their ids and
versions, the audit log, the embedding cache and the model settings; safe to run again.

A record already in the target at the same version is left alone; one at an older version (the source
changed since the last run) is brought up to the source's; the rest are inserted. Inserts go through
the target's unit of work, so on PostgreSQL they join the change sequence and running replicas index
them. Audit records and cached vectors are copied by id and key, each once.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Protocol

from sqlalchemy.exc import SQLAlchemyError

from ..domain import Memory, StoreError, holds_nul
from .store import MODEL_KEYS, MemoryStore

__all__ = ["CachedVectors", "CopyCounts", "copy_store"]

BATCH = 500


@dataclass(frozen=True, slots=True)
class CopyCounts:
    """What a run did, and what the check after it found (source rows present in the target)."""

    memories_inserted: int
    memories_updated: int
    memories_in_source: int
    memories_matched: int
    audit_copied: int
    audit_in_source: int
    audit_matched: int
    embeddings_copied: int


class CachedVectors(Protocol):
    """The embedding cache as the copy sees it (encoding/cache.py EmbeddingCache): rows out, rows in."""

    def batches(self, batch: int = 1000) -> Iterator[list[tuple[str, str, bytes]]]: ...

    def put_rows(self, rows: Sequence[tuple[str, str, bytes]]) -> None: ...


def copy_store(
    source: MemoryStore, target: MemoryStore, source_cache: CachedVectors, target_cache: CachedVectors
) -> CopyCounts:
    """Copy, then check that every source record (at its version) and audit record is in the target."""
    model = source.get_metas(MODEL_KEYS)
    stored = target.ensure_metas(model) if model else {}
    for key, value in model.items():
        if stored.get(key) != value:
            raise StoreError(
                f"the target's {key} is {stored.get(key)}, the source's {value}; "
                "reindex one of them with the other's model first"
            )
    inserted = updated = 0
    batch: list[Memory] = []
    for memory in source.iterate(batch=BATCH):
        batch.append(memory)
        if len(batch) == BATCH:
            done = _copy_records(target, batch)
            inserted, updated, batch = inserted + done[0], updated + done[1], []
    done = _copy_records(target, batch)
    inserted, updated = inserted + done[0], updated + done[1]
    audit_copied = 0
    for rows in source.audit_batches(BATCH):
        present = target.audit_ids([row["id"] for row in rows])
        fresh = [{k: v for k, v in row.items() if k != "seq"} for row in rows if row["id"] not in present]
        with target.unit_of_work() as work:
            work.audit(fresh)
        audit_copied += len(fresh)
    embeddings_copied = 0
    for cached in source_cache.batches(BATCH):
        target_cache.put_rows(cached)
        embeddings_copied += len(cached)
    return CopyCounts(
        inserted,
        updated,
        source.count(),
        _matched(source, target),
        audit_copied,
        source.count_audit(),
        _audit_matched(source, target),
        embeddings_copied,
    )


def _copy_records(target: MemoryStore, batch: list[Memory]) -> tuple[int, int]:
    """Copy one batch in one transaction. A record the target cannot hold is named by its id, never
    shown: an error of the database driver would print the batch's rows, other tenants' content with them."""
    if not batch:
        return 0, 0
    if target.sql_engine.dialect.name == "postgresql":
        for memory in batch:
            if holds_nul(memory.to_dict()):
                raise StoreError(
                    f"record {memory.id} holds the NUL character (U+0000), which PostgreSQL cannot store; "
                    "edit or forget it in the source store and run again (records before it were copied)"
                )
    try:
        with target.unit_of_work() as work:
            stored = work.versions([m.id for m in batch])
            fresh = [m for m in batch if m.id not in stored]
            behind = [(m, stored[m.id]) for m in batch if m.id in stored and stored[m.id] < m.version]
            work.insert(fresh)
            work.replace_many(behind)
    except SQLAlchemyError as error:
        cause = type(getattr(error, "orig", None) or error).__name__
        raise StoreError(
            f"the target refused the batch of records {batch[0].id} to {batch[-1].id} ({cause}); "
            "records before it were copied, this batch was not"
        ) from None
    return len(fresh), len(behind)


def _matched(source: MemoryStore, target: MemoryStore) -> int:
    """Source records that the target holds at the source's version."""
    matched = 0
    batch: dict[str, int] = {}
    for memory in source.iterate(batch=BATCH):
        batch[memory.id] = memory.version
        if len(batch) == BATCH:
            matched += _same(target, batch)
            batch = {}
    return matched + _same(target, batch)


def _same(target: MemoryStore, versions: dict[str, int]) -> int:
    with target.reading() as connection:
        stored = target.versions(list(versions), connection)
    return sum(1 for memory_id, version in versions.items() if stored.get(memory_id) == version)


def _audit_matched(source: MemoryStore, target: MemoryStore) -> int:
    return sum(len(target.audit_ids([row["id"] for row in rows])) for rows in source.audit_batches(BATCH))
