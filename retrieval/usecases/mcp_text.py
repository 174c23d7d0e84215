"""The MCP texts XMemo clients expect, rendered from structured results."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from .results import ContextPack, SearchResult

__all__ = ["NO_MATCH", "render_context_text", "render_identity_text", "render_search_text"]

NO_MATCH = "No matching XMemo memory was found."


def render_context_text(pack: ContextPack) -> str:
    """`### XMemo Context` text of a structured recall_context pack."""
    items = pack.items
    if not items:
        return NO_MATCH
    budget = pack.budget
    lines = ["### XMemo Context", f"Items: {len(items)}"]
    if budget.dropped_items or budget.shortened_items:
        lines.append(
            f"Budget: used {budget.used_tokens}/{budget.max_tokens} tokens, "
            f"{budget.used_items}/{budget.max_items} items; "
            f"dropped {budget.dropped_items}, shortened {budget.shortened_items}"
        )
    lines.extend(f"Reference: {i.id} | Type: {i.type} | Location: {i.path}" for i in items)
    lines.append("Context:")
    return "\n".join(lines) + "\n" + pack.context_text


def render_search_text(results: Sequence[SearchResult], title: str) -> str:
    """A plain list of matches for the `search_memory` and `recall` tools."""
    if not results:
        return NO_MATCH
    lines = [f"### {title}", f"Items: {len(results)}"]
    for r in results:
        lines.append(f"Reference: {r.id} | Type: {r.type} | Location: {r.path} | Score: {r.score:.3f}")
        lines.append(r.content)
    return "\n".join(lines)


def render_identity_text(identity: dict[str, Any]) -> str:
    tenant = {
        "organization_id": identity["organization_id"],
        "workspace_id": identity["workspace_id"],
        "project_id": identity["project_id"],
    }
    return "\n".join(
        [
            f"Owner ID: {identity['owner_id']}",
            f"Agent ID: {identity['agent_id']}",
            f"Tenant: {json.dumps(tenant)}",
            f"Scopes: {', '.join(sorted(identity['scopes']))}",
        ]
    )
