"""Applying a plan: every change and its audit record in one transaction, then the index catches up."""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from retrieval import ConflictError, MemoryEngine, StoreError
from retrieval.embedding import memory_digest
from retrieval.engine import embedding_text

from .audit import write_audit
from .plan import Plan

__all__ = ["apply_plan"]


def apply_plan(engine: MemoryEngine, plan: Plan, actor: str) -> list[str]:
    """Write the plan's changes and one audit record per change; return the audit record ids.

    Each changed memory must still be at the version the plan read (else ConflictError); a record or
    audit write that fails rolls the whole transaction back, so a run applies all of its plan or none.
    The index is brought up to date after the commit, as every write does (repair covers a crash there).
    """
    if not plan.changes:
        return []
    created = [after for change in plan.changes for before, after in change.pairs if before is None]
    engine.vectors_for(created)  # encode new summaries into the cache before taking the write lock
    updates = [(after, before.version) for change in plan.changes for before, after in change.pairs if before is not None]
    with engine.write_lock:
        try:
            with engine.store.engine.begin() as connection:
                existing = sorted(engine.store.versions([m.id for m in created], connection))
                if existing:
                    raise ConflictError(f"memories this plan creates already exist ({', '.join(existing[:3])}); plan again")
                engine.store.insert([(m, memory_digest(m, embedding_text(m))) for m in created], connection)
                engine.store.replace_many(updates, connection)
                audit_ids = write_audit(connection, plan, actor)
        except SQLAlchemyError as error:
            raise StoreError(f"reflect could not write its changes and audit records; nothing was applied ({error})") from error
        final = {after.id: after for change in plan.changes for _, after in change.pairs}
        engine.sync(list(final.values()))
        engine.index.flush()
    return audit_ids
