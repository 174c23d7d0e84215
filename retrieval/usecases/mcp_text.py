"""The MCP texts XMemo clients expect, rendered from structured results."""

from __future__ import annotations

import itertools
import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

from ..ranking import PackCandidate, TokenCounter, pack_context
from .results import ContextPack, PackItem, SearchResult

__all__ = ["NO_MATCH", "render_context_text", "render_identity_text", "render_search_text"]

NO_MATCH = "No matching XMemo memory was found."
MIN_BLOCK_TOKENS = 4  # a shortened top item smaller than this says nothing: the budget is too small


def render_context_text(pack: ContextPack, counter: TokenCounter) -> str:
    """`### XMemo Context` text of a structured recall_context pack, counted whole against `max_tokens`.

    What the agent receives is this text, so its `Budget:` line reports the tokens of all of it: the
    heading, the Items, Budget and Reference lines, `Context:` and the body. There is a Reference line
    per memory shown, and `Items:` counts them: a block grouping a summary's members under its header
    cites each member, in line order (`_references`). The body is `context_text`
    cut further when the whole does not fit: whole items are left out from the end (with their
    Reference lines), then the one left is shortened. When not even the heading, the Items line and one
    Reference line fit, the text is those and a Budget line saying that the budget is too small and the
    least `max_tokens` that holds them; nothing else (contract section 7), even when that is over the budget.
    """
    if not pack.items:
        return NO_MATCH
    fitted = _fitted(pack, counter, len(pack.items))
    if fitted is not None:
        return fitted
    return "\n".join(
        [
            "### XMemo Context",
            "Items: 1",
            f"Budget: too small: max_tokens {pack.budget.max_tokens} cannot hold the heading, the Items line "
            f"and one reference; they need max_tokens {_least_budget(pack, counter)}",
            _references(pack.items[:1])[0],
        ]
    )


def _fitted(pack: ContextPack, counter: TokenCounter, most: int) -> str | None:
    """The text of the first `most` items or fewer that fits `max_tokens`, the last one shortened if need
    be; None when not even one item does."""
    blocks = list(pack.blocks) or [pack.context_text]
    for shown in range(most, 0, -1):
        text = _whole(pack, shown, "".join(blocks[:shown]), counter, shortened=0)
        if counter.count(text) <= pack.budget.max_tokens:
            return text
    return _first_cut(pack, blocks[0], counter)


def _least_budget(pack: ContextPack, counter: TokenCounter) -> int:
    """The least `max_tokens` over this pack's budget whose text holds the heading, the Items line and
    one Reference line: counted, from the tokens of those lines alone upwards."""
    first = _references(pack.items[:1])[0]
    lines = counter.count("\n".join(["### XMemo Context", "Items: 1", first, "Context:", ""]))
    return next(
        max_tokens
        for max_tokens in itertools.count(max(lines, pack.budget.max_tokens + 1))
        if _fitted(replace(pack, budget=replace(pack.budget, max_tokens=max_tokens)), counter, 1) is not None
    )


def _references(items: Sequence[PackItem]) -> list[str]:
    """A Reference line per memory the items show: a group's block (a summary or promotion over the
    memories the pack holds) cites each of its lines' memories, in line order, never the summary."""
    return [
        f"Reference: {m.id} | Type: {m.type} | Location: {m.path}" for item in items for m in (item.members or (item,))
    ]


def _whole(pack: ContextPack, shown: int, body: str, counter: TokenCounter, *, shortened: int) -> str:
    """The text with the first `shown` items and `body`, its Budget line counting the text it is in."""
    budget = pack.budget
    dropped = budget.dropped_items + len(pack.items) - shown
    references = _references(pack.items[:shown])
    used = 0
    for _ in range(4):  # the count's own digits are in the text: settle it (twice is the most it takes)
        line = (
            f"Budget: used {used}/{budget.max_tokens} tokens, {shown}/{budget.max_items} items; "
            f"dropped {dropped}, shortened {budget.shortened_items + shortened}"
        )
        head = ["### XMemo Context", f"Items: {len(references)}", line, *references, "Context:"]
        text = "\n".join(head) + "\n" + body
        counted = counter.count(text)
        if counted == used:
            return text
        used = counted
    return text


def _first_cut(pack: ContextPack, block: str, counter: TokenCounter) -> str | None:
    """The text with the top item alone, its block shortened to fit, or None when nothing of it fits."""
    header, _, body = block.removeprefix("[1] ").partition("\n")
    overhead = counter.count(_whole(pack, 1, "", counter, shortened=1))
    room = pack.budget.max_tokens - overhead
    while room >= MIN_BLOCK_TOKENS:
        cut = pack_context([PackCandidate(pack.items[0].id, header, body.strip())], 1, room, counter)
        text = _whole(pack, 1, cut.context_text, counter, shortened=0 if pack.items[0].shortened else 1)
        if counter.count(text) <= pack.budget.max_tokens:
            return text
        room -= 1 + counter.count(text) - pack.budget.max_tokens
    return None


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
