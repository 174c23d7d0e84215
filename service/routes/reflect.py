"""The reflect routes: a maintenance pass (dry run first) and the audit log (the XMemo contract)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from compactor import ReflectRequest, list_audit, reflect
from compactor.audit import MAX_AUDIT_LIMIT

from .bodies import AuditActionList, ReflectPlanBody, Timestamp, iso
from .deps import Caller, Engine, SettingsOf
from .responses import AuditListOut, ReflectReportOut, answer

__all__ = ["router"]

router = APIRouter(prefix="/api/v1", tags=["reflect"])


@router.post("/reflect", response_model=ReflectReportOut)
def reflect_route(body: ReflectPlanBody, engine: Engine, principal: Caller, settings: SettingsOf) -> ReflectReportOut:
    fields = body.model_dump(exclude={"expected_plan", "exclude", "reconsider"})
    fields["since"], fields["until"] = iso(body.since), iso(body.until)
    report = reflect(
        engine,
        principal,
        ReflectRequest(**fields),
        settings.reflect,
        expected_plan=body.expected_plan,
        exclude=body.exclude,
        reconsider=body.reconsider,
    )
    return answer(ReflectReportOut, report)


@router.get("/audit", response_model=AuditListOut)
def audit_route(
    engine: Engine,
    principal: Caller,
    since: Timestamp | None = None,
    until: Timestamp | None = None,
    action: AuditActionList | None = None,
    limit: int = Query(default=100, ge=1, le=MAX_AUDIT_LIMIT),
) -> AuditListOut:
    records = list_audit(engine, principal, since=iso(since), until=iso(until), action=action or None, limit=limit)
    return AuditListOut(records=records)
