"""The reflect report and its MCP text (`### Memory Reflect Report`)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from retrieval.domain import clipped, format_time

from .plan import Change, Declined, Plan

__all__ = [
    "MAX_TEXT_AUDIT_IDS",
    "MAX_TEXT_CANDIDATES",
    "PLAN_DIGEST_PATTERN",
    "ReflectReport",
    "build_report",
    "plan_digest",
    "render_reflect_text",
]

MAX_TEXT_AUDIT_IDS = 20
MAX_TEXT_CANDIDATES = 50  # a dry run's text lists this many candidates, then says how many more
PREVIEW_CHARS = 100
MAX_TEXT_MEMBERS = 12  # members listed under a summary or promotion in the text
MEMBER_CHARS = 160
PLAN_DIGEST_PATTERN = r"^[0-9a-f]{64}$"


@dataclass(frozen=True, slots=True)
class ReflectReport:
    """What one pass did (or, dry, would do): the contract's report, and for review each proposal's
    `preview` and the proposals `excluded`. Each summary, promotion and lifecycle entry is the change's
    detail (compactor/plan.py), with its reason."""

    dry_run: bool
    plan_id: str
    plan_digest: str
    actions: tuple[str, ...]
    filters: Mapping[str, Any]
    now: str
    candidates: Mapping[str, int]
    summaries: tuple[Mapping[str, Any], ...]
    promotions: tuple[Mapping[str, Any], ...]
    lifecycle: Mapping[str, tuple[Mapping[str, Any], ...]]
    counts: Mapping[str, int]
    audit_record_ids: tuple[str, ...]
    excluded: tuple[str, ...]
    preview: tuple[Mapping[str, Any], ...]
    held_back: tuple[Mapping[str, Any], ...] = ()


def plan_digest(plan: Plan) -> str:
    """SHA-256 of what the plan changes: each change's action and the ids and versions it plans on.

    Unlike `plan_id` it leaves out `now` and the values a later clock moves (a decayed importance),
    so a reviewed dry run and a real run planned a little later agree unless a memory changed, a
    change was added or one fell away. A memory the plan creates counts as version 0.
    """
    changes = [
        [change.action, [[after.id, before.version if before is not None else 0] for before, after in change.pairs]]
        for change in plan.changes
    ]
    return hashlib.sha256(json.dumps(changes, separators=(",", ":")).encode()).hexdigest()


def build_report(plan: Plan, audit_ids: list[str], *, dry_run: bool, with_content: bool = True) -> ReflectReport:
    """dry_run, actions, filters, summaries, promotions, lifecycle details, counts, audit_record_ids,
    and for review: each change's `proposal_id`, the proposals `excluded`, and a `preview` of each.

    A caller without memory:read (a write-only key doing a real run) gets ids and counts, not contents.
    """

    def shown(change: Change) -> dict[str, Any]:
        item = dict(change.detail)
        if not with_content:
            item.pop("content", None)
        return item | {"reason": change.reason}

    return ReflectReport(
        dry_run=dry_run,
        plan_id=plan.plan_id,
        plan_digest=plan_digest(plan),
        actions=tuple(plan.options.actions),
        filters=plan.options.describe(),
        now=format_time(plan.now),
        candidates=dict(plan.candidates),
        summaries=tuple(shown(c) for c in plan.of("summarize")),
        promotions=tuple(shown(c) for c in plan.of("promote")),
        lifecycle={
            "expired": tuple(dict(c.detail) for c in plan.of("expire")),
            "decayed": tuple(dict(c.detail) for c in plan.of("decay")),
            "archived": tuple(dict(c.detail) for c in plan.of("archive")),
        },
        counts=plan.counts(),
        audit_record_ids=tuple(audit_ids),
        excluded=tuple(plan.excluded),
        preview=tuple(_preview(change, with_content) for change in plan.changes),
        held_back=tuple(_held(declined) for declined in plan.held),
    )


def _held(declined: Declined) -> dict[str, Any]:
    """A proposal an earlier review turned down, as the report lists what it holds back and why."""
    return {
        "proposal_id": declined.proposal_id,
        "action": declined.action,
        "memory_ids": [member for member, _ in declined.members],
        "declined_at": declined.declined_at,
        "declined_by": declined.actor,
        "reason": f"turned down on {declined.declined_at[:10]} by {declined.actor}; proposed again when one of "
        "its memories changes or another joins (reconsider clears every refusal)",
    }


def _preview(change: Change, with_content: bool) -> dict[str, Any]:
    """One candidate as a person reviews it: the action, the memories, a short text, the reason.

    For summarize and promote the text is the new memory's first line of content and the ids are the
    new memory's, then its members'; otherwise the changed memory's own text.
    """
    subject = change.pairs[0][1]
    lines = subject.content.splitlines()
    text = lines[1] if change.action in ("summarize", "promote") and len(lines) > 1 else subject.content
    text = " ".join(text.split())
    item: dict[str, Any] = {
        "proposal_id": change.proposal_id,
        "action": change.action,
        "memory_ids": change.memory_ids,
        "path": subject.path,
        "reason": change.reason,
    }
    if with_content:
        item["text"] = clipped(text, PREVIEW_CHARS)
        item["content"] = subject.content
    if change.action in ("summarize", "promote"):  # the members, each with when it occurred
        members = [after for before, after in change.pairs if before is not None]
        item["members"] = [
            {"id": m.id, "occurred_at": m.occurred_at or m.created_at, "path": m.path}
            | ({"content": m.content} if with_content else {})
            for m in members
        ]
    return item


def _whole_lines(item: Mapping[str, Any]) -> list[str]:
    """Under a summary's or a promotion's line, what a person judges it by: its path, its whole text and
    each member with when it occurred and its text (at most MAX_TEXT_MEMBERS of them)."""
    if "members" not in item:
        return []
    lines = [f"  path: {item['path']}"]
    if "content" in item:
        lines += [f"  | {line}" for line in str(item["content"]).splitlines() if line.strip()]
    members = item["members"]
    for member in members[:MAX_TEXT_MEMBERS]:
        said = clipped(" ".join(str(member.get("content", "")).split()), MEMBER_CHARS)
        when = str(member["occurred_at"])[:16].replace("T", " ")
        lines.append(f"  * {when} {member['id']} {member['path']}: {said}".rstrip())
    if len(members) > MAX_TEXT_MEMBERS:
        lines.append(f"  * ... and {len(members) - MAX_TEXT_MEMBERS} more members")
    return lines


def render_reflect_text(report: ReflectReport) -> str:
    """The MCP text: Dry Run, Actions, the five counts, Audit Records and at most 20 audit ids."""
    counts = report.counts
    ids = report.audit_record_ids
    lines = [
        "### Memory Reflect Report",
        f"Dry Run: {'true' if report.dry_run else 'false'}",
        f"Actions: {', '.join(report.actions)}",
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
    if report.dry_run:
        lines += _candidate_lines(report)
    return "\n".join(lines)


def _candidate_lines(report: ReflectReport) -> list[str]:
    """After the contract's lines: each candidate of a dry run, and what the candidate limit left out."""
    preview = report.preview
    lines = ["", f"Candidates: {len(preview)}"]
    for item in preview[:MAX_TEXT_CANDIDATES]:
        ids = item["memory_ids"]
        shown = ", ".join(ids[:3]) + (f" (+{len(ids) - 3} more)" if len(ids) > 3 else "")
        text = f' "{item["text"]}"' if "text" in item else ""
        lines.append(f"- {item['proposal_id']} [{shown}]{text}: {item['reason']}")
        lines += _whole_lines(item)
    if len(preview) > MAX_TEXT_CANDIDATES:
        lines.append(f"... and {len(preview) - MAX_TEXT_CANDIDATES} more candidates")
    if report.held_back:
        lines.append(f"Held back: {len(report.held_back)} (turned down by an earlier review)")
        for held in report.held_back[:MAX_TEXT_CANDIDATES]:
            lines.append(f"- {held['proposal_id']}: {held['reason']}")
    left_out = report.candidates.get("left_out", 0)
    if left_out:
        lines.append(
            f"Left out: {left_out} episodes of the window were beyond the limit of "
            f"{report.filters['limit']}; run again, or raise the limit, to look at them"
        )
    return lines
