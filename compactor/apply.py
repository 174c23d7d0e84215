"""Applying a plan: every change and its audit record in one unit of work, then the index catches up."""

from __future__ import annotations

from sqlalchemy.exc import SQLAlchemyError

from retrieval import ConflictError, MemoryEngine, StoreError

from .audit import audit_rows, review_rows
from .plan import Plan

__all__ = ["apply_plan"]


def apply_plan(engine: MemoryEngine, plan: Plan, actor: str) -> list[str]:
    """Write the plan's changes and one audit record per change; return the audit record ids.

    A plan that changes nothing still records the proposals its review turned down (and a clearing of
    the earlier ones). Each changed memory must still be at the version the plan read (else ConflictError); a record or
    audit write that fails rolls the whole transaction back, so a run applies all of its plan or none.
    Two processes of one PostgreSQL store never apply a pass for the same owner at once: the second
    finds the owner's lock taken and gets a ConflictError (run it again: it plans on what the first
    wrote). The index is brought up to date after the commit (engine.writing; repair covers a crash).
    """
    if not plan.changes and not plan.declined and not plan.reconsidered:
        return []
    created = [after for change in plan.changes for before, after in change.pairs if before is None]
    engine.vectors_for(created)  # encode new summaries into the cache before taking the write lock
    updates = [
        (after, before.version) for change in plan.changes for before, after in change.pairs if before is not None
    ]
    owner = plan.options.filters.owner_id
    try:
        with engine.writing() as work:
            if not work.try_lock(f"reflect:{owner}"):
                raise ConflictError(f"another reflect pass is applying changes for owner {owner}; run it again")
            existing = sorted(work.versions([m.id for m in created]))
            if existing:
                raise ConflictError(f"memories this plan creates already exist ({', '.join(existing[:3])}); plan again")
            work.insert(created)
            work.replace_many(updates)
            audit_ids = work.audit(audit_rows(plan, actor))
            work.audit(review_rows(plan, actor))
    except SQLAlchemyError as error:
        raise StoreError(
            f"reflect could not write its changes and audit records; nothing was applied ({error})"
        ) from error
    engine.index.flush()
    return audit_ids
