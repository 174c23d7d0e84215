"""The reflect report (contract section 5) and its MCP text (`### Memory Reflect Report`)."""

from __future__ import annotations

from typing import Any

from retrieval.records import format_time

from .plan import Plan

__all__ = ["MAX_TEXT_AUDIT_IDS", "build_report", "render_reflect_text"]

MAX_TEXT_AUDIT_IDS = 20


def build_report(plan: Plan, audit_ids: list[str], *, dry_run: bool, with_content: bool = True) -> dict[str, Any]:
    """dry_run, actions, filters, summaries, promotions, lifecycle details, counts, audit_record_ids.

    A caller without memory:read (a write-only key doing a real run) gets ids and counts, not contents.
    """

    def shown(detail: Any) -> dict[str, Any]:
        item = dict(detail)
        if not with_content:
            item.pop("content", None)
        return item

    return {
        "dry_run": dry_run,
        "plan_id": plan.plan_id,
        "actions": list(plan.options.actions),
        "filters": plan.options.describe(),
        "now": format_time(plan.now),
        "candidates": dict(plan.candidates),
        "summaries": [shown(c.detail) | {"reason": c.reason} for c in plan.of("summarize")],
        "promotions": [shown(c.detail) | {"reason": c.reason} for c in plan.of("promote")],
        "lifecycle": {
            "expired": [dict(c.detail) for c in plan.of("expire")],
            "decayed": [dict(c.detail) for c in plan.of("decay")],
            "archived": [dict(c.detail) for c in plan.of("archive")],
        },
        "counts": plan.counts(),
        "audit_record_ids": list(audit_ids),
    }


def render_reflect_text(report: dict[str, Any]) -> str:
    """The MCP text: Dry Run, Actions, the five counts, Audit Records and at most 20 audit ids."""
    counts = report["counts"]
    ids = report["audit_record_ids"]
    lines = [
        "### Memory Reflect Report",
        f"Dry Run: {'true' if report['dry_run'] else 'false'}",
        f"Actions: {', '.join(report['actions'])}",
        f"Summarized: {counts['summarized']}",
        f"Promoted: {counts['promoted']}",
        f"Expired: {counts['expired']}",
        f"Decayed: {counts['decayed']}",
        f"Archived: {counts['archived']}",
        f"Audit Records: {len(ids)}",
    ]
    if ids:
        lines.append("Audit IDs:")
        lines += [f"- {audit_id}" for audit_id in ids[:MAX_TEXT_AUDIT_IDS]]
        if len(ids) > MAX_TEXT_AUDIT_IDS:
            lines.append(f"... and {len(ids) - MAX_TEXT_AUDIT_IDS} more")
    return "\n".join(lines)
