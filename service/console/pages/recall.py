"""The recall page: the pack exactly as an agent gets it, the MCP text and the structured pack, with each
item's score components, what was dropped and what collapsed."""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, Response

from retrieval import RecallRequest, ValidationError, prepare_read, recall_context
from retrieval.domain import DEFAULT_PACK_ITEMS, DEFAULT_PACK_TOKENS
from retrieval.ranking import TokenCounter
from retrieval.usecases import render_context_text

from ...routes.deps import Caller, Engine
from ...routes.responses import ContextPackOut, answer
from ..rendering import render
from .forms import first_lines

__all__ = ["router"]

router = APIRouter()

# Why a memory read for a pack is not in it (retrieval_plan.dropped) or is there as another's words
# (retrieval_plan.collapsed: retrieval/ranking/restatements.py, and grouping.py for `grouped`), in words a
# person reads.
LEFT_OUT_REASONS = {
    "budget": "budget: among the top max items, kept out by the token budget",
    "item_limit": "item limit: beyond max items",
    "floor": "floor: scored below the relevance floor",
    "contained": "contained: its words are in the kept memory",
    "near-duplicate": "near-duplicate: almost the same meaning as the kept memory",
    "carried": "carried: the kept memory holds every sentence of it",
    "grouped": "grouped: shown as a line under the summary that holds it, with its other members",
}


# The MCP text's own Items and Budget lines (contract §4: "Budget: used 1187/1200 tokens, 6/6 items; dropped 2,
# shortened 1"): the page names the MCP text's counts as that text states them.
MCP_ITEMS = re.compile(r"^Items: (\d+)$", re.MULTILINE)
MCP_BUDGET = re.compile(r"^Budget: used \d+/\d+ tokens, \d+/\d+ items; dropped (\d+), shortened (\d+)$", re.MULTILINE)


@dataclass(frozen=True, slots=True)
class McpCounts:
    """What the MCP text counts: its own tokens (the whole text), its items, and its Budget line's dropped and
    shortened (None when the text has no such line: no match, or a budget too small for one reference)."""

    tokens: int
    items: int
    dropped: int | None
    shortened: int | None


def count_mcp_text(text: str, counter: TokenCounter) -> McpCounts:
    """The counts of the recall_context MCP text `text`, read from it as an agent reads them."""
    items, budget = MCP_ITEMS.search(text), MCP_BUDGET.search(text)
    dropped, shortened = (int(budget[1]), int(budget[2])) if budget else (None, None)
    return McpCounts(counter.count(text), int(items[1]) if items else 0, dropped, shortened)


def _scales(components: dict[str, dict[str, Any]]) -> dict[str, float]:
    """Each score component's best value among the packed items: a bar is its share of that best, so
    BM25's raw scores (unbounded) and the [0, 1] ones each fill their own width."""
    best: dict[str, float] = {}
    for item in components.values():
        for name, value in item.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and value > best.get(name, 0.0):
                best[name] = float(value)
    return best


@router.get("/recall", response_class=HTMLResponse)
def recall_page(request: Request, engine: Engine, principal: Caller) -> Response:
    """The pack exactly as an agent gets it: MCP text and structured pack, each item's score components."""
    params = request.query_params
    query = params.get("query", "").strip()
    max_items = params.get("max_items", str(DEFAULT_PACK_ITEMS))
    max_tokens = params.get("max_tokens", str(DEFAULT_PACK_TOKENS))
    pack, text, mcp = None, "", None
    if query:
        try:
            budgets = int(max_items), int(max_tokens)
        except ValueError as error:
            raise ValidationError("the budgets must be whole numbers") from error
        asked = RecallRequest(query=query, max_items=budgets[0], max_tokens=budgets[1])
        found = recall_context(engine, prepare_read(engine, principal, asked))
        text = render_context_text(found, engine.tokens)
        mcp = count_mcp_text(text, engine.tokens)
        pack = answer(ContextPackOut, found).model_dump(mode="json")  # the JSON an agent receives
    components = {c["id"]: c for c in pack["retrieval_plan"]["items"]} if pack else {}
    shown, dropped = [], []
    if pack:
        plan = pack["retrieval_plan"]
        dropped = plan.get("dropped", [])
        shown = [item["id"] for item in pack["items"]] + [d["id"] for d in dropped]
        shown += [c[key] for c in plan.get("collapsed", []) for key in ("id", "into")]
    return render(
        request,
        "recall.html",
        texts=first_lines(engine, shown),
        scales=_scales(components),
        title="Recall",
        query=query,
        max_items=max_items,
        max_tokens=max_tokens,
        pack=pack,
        text=text,
        mcp=mcp,
        components=components,
        reasons=LEFT_OUT_REASONS,
        dropped=dropped,
        left_out={reason: sum(d["reason"] == reason for d in dropped) for reason in ("budget", "item_limit", "floor")},
        shortened=[item for item in pack["items"] if item["shortened"]] if pack else [],
        pack_json=json.dumps(pack, ensure_ascii=False, indent=2) if pack else "",
    )
