"""The status page: counts by type and status, index health, request rates and latencies, and the newest
evaluation report with its chart."""

from __future__ import annotations

from fastapi import APIRouter, Request
from fastapi.responses import FileResponse, HTMLResponse, Response

from retrieval import MemoryStatus, NotFoundError, ReadFilters
from retrieval.domain import READ, require

from ...routes.deps import Caller, Engine, context_of
from ..eval_reports import CHART, find_reports, read_report
from ..rendering import render

__all__ = ["router"]

router = APIRouter()


@router.get("/status", response_class=HTMLResponse)
def status_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """Counts by type and status, index health, request rates and latencies, the newest evaluation report."""
    require(principal, READ)
    visible = ReadFilters(owner_id=principal.owner_id, team_ids=principal.team_ids, statuses=tuple(MemoryStatus))
    tally = engine.store.tally(visible)
    requests: dict[str, dict[str, float]] = {}
    for metric in context_of(request).metrics.registry.collect():
        for sample in metric.samples:
            route = sample.labels.get("route", "")
            if sample.name == "xmemo_http_requests_total":
                requests.setdefault(route, {"count": 0.0, "seconds": 0.0})["count"] += sample.value
            elif sample.name == "xmemo_http_request_seconds_sum":
                requests.setdefault(route, {"count": 0.0, "seconds": 0.0})["seconds"] += sample.value
    reports_dir = context_of(request).settings.reports_dir()
    report, report_error = None, ""
    reports = find_reports(reports_dir)
    if reports:
        name, directory = next(iter(reports.items()))
        try:
            report = read_report(name, directory)
        except ValueError as error:
            report_error = str(error)
    return render(
        request,
        "status.html",
        title="Status",
        tally=sorted(tally.items()),
        total=sum(tally.values()),
        index_points=engine.index.count(),
        stored=engine.store.count(),
        indexed=engine.store.count_indexed(),
        backend=engine.index.backend,
        requests=sorted(requests.items()),
        report=report,
        report_error=report_error,
        reports_dir=reports_dir,
    )


@router.get("/status/eval-chart.png")
def eval_chart(request: Request, principal: Caller, report: str = "") -> Response:
    """The chart of a report the status page found (by its directory's name); nothing else is served."""
    require(principal, READ)
    directory = find_reports(context_of(request).settings.reports_dir()).get(report)
    if directory is None or not (directory / CHART).is_file():
        raise NotFoundError("no evaluation chart by that name")
    return FileResponse(directory / CHART, media_type="image/png", headers={"Cache-Control": "no-store"})
