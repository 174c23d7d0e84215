"""The OpenAI Agents SDK over an xmemo server: `XmemoSession`, a session (the SDK's protocol: get, add,
pop and clear items) whose history persists as memories, and `recall_tool`, a tool an agent calls to
recall what it knows by meaning. Needs the `agents` extra (`pip install './clients/python[agents]'`).

Each history item is an episodic memory of the session (`session_id`), its text as the content (a
message's text with its role as the speaker, a tool call as its name and arguments) and the item itself
in the metadata, so `get_items` gives back exactly what was added and recall finds the conversation by
meaning, beside every other memory of the owner. `pop_item` and `clear_session` archive the memories
(restorable, out of recall). An item too large for a memory's metadata (32 KiB of JSON) keeps the head of
its longest strings, each cut with a marker.
"""

from __future__ import annotations

import json
import time
from typing import Any

from agents import FunctionTool, function_tool
from agents.items import TResponseInputItem
from agents.memory import SessionABC

from .clients import AsyncXmemoClient
from .errors import NotFoundError
from .results import MemoryRecord

__all__ = ["XmemoSession", "recall_tool"]

SESSION = "openai_agents_session"  # metadata: the session id (list filter `key=value`)
ITEM = "openai_agents_item"  # metadata: the item as the SDK gave it
ORDER = "openai_agents_order"  # metadata: sorts the session's items in the order they were added
ITEM_BYTES = 30_000  # what of the metadata's 32 KiB an item may take
CONTENT_CHARS = 16_000  # the memory's text: enough to recall it by, under the content limit
CUT = " …[cut]"
PAGE = 200
BATCH = 100  # memories a request carries (the server takes up to 500)


def _text(item: dict[str, Any]) -> tuple[str, str | None]:
    """The memory's content and speaker for `item`: a message's text and role, else a line naming it."""
    content = item.get("content")
    if isinstance(content, str):
        text = content
    elif isinstance(content, list):
        text = "\n".join(str(p.get("text", "")) for p in content if isinstance(p, dict) and p.get("text"))
    else:
        text = ""
    role = item.get("role")
    if text.strip():
        return text[:CONTENT_CHARS], str(role) if role else None
    kind = str(item.get("type") or "item")
    if kind == "function_call":
        text = f"called {item.get('name', '?')}({item.get('arguments', '')})"
    elif "output" in item:
        text = f"{kind}: {json.dumps(item['output'], ensure_ascii=False)}"
    else:
        text = f"{kind}: {json.dumps(item, ensure_ascii=False, sort_keys=True)}"
    return text[:CONTENT_CHARS], None


def _cut(value: Any, longest: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= longest else value[:longest] + CUT
    if isinstance(value, list):
        return [_cut(v, longest) for v in value]
    if isinstance(value, dict):
        return {k: _cut(v, longest) for k, v in value.items()}
    return value


def _fitted(item: dict[str, Any]) -> dict[str, Any]:
    """`item` itself, or with its longest strings cut until its JSON fits a memory's metadata."""
    longest = ITEM_BYTES
    fitted = item
    while len(json.dumps(fitted, ensure_ascii=False).encode()) > ITEM_BYTES and longest > 16:
        longest //= 2
        fitted = _cut(item, longest)
    return fitted


class XmemoSession(SessionABC):
    """The history of the agent session `session_id`, kept as memories of the client's key owner (or of
    team `team_id`) at `path`."""

    def __init__(
        self,
        session_id: str,
        client: AsyncXmemoClient,
        *,
        path: str = "agents/sessions",
        team_id: str | None = None,
    ) -> None:
        self.session_id = session_id
        self.client = client
        self.path = path
        self.team_id = team_id

    async def _records(self) -> list[MemoryRecord]:
        """The session's active memories, in the order their items were added."""
        records: list[MemoryRecord] = []
        cursor: str | None = None
        while True:
            fields: dict[str, Any] = {"status": "active", "metadata": f"{SESSION}={self.session_id}", "limit": PAGE}
            fields["path_prefix"] = self.path
            if self.team_id is not None:
                fields["team_id"] = self.team_id
            if cursor:
                fields["cursor"] = cursor
            page = await self.client.list_memories(**fields)
            records.extend(r for r in page.memories if r.team_id == self.team_id and ITEM in r.metadata)
            cursor = page.next_cursor
            if cursor is None:
                return sorted(records, key=lambda r: str(r.metadata.get(ORDER, "")))

    async def get_items(self, limit: int | None = None) -> list[TResponseInputItem]:
        records = await self._records()
        if limit is not None:
            records = records[-limit:] if limit > 0 else []
        items: list[TResponseInputItem] = [r.metadata[ITEM] for r in records]
        return items

    async def add_items(self, items: list[TResponseInputItem]) -> None:
        if not items:
            return
        stamp = time.time_ns()
        memories = []
        for index, raw in enumerate(items):
            item = dict(raw)
            content, speaker = _text(item)
            memory: dict[str, Any] = {
                "content": content,
                "path": self.path,
                "memory_type": "episodic",
                "source": "openai-agents",
                "session_id": self.session_id,
                "metadata": {SESSION: self.session_id, ITEM: _fitted(item), ORDER: f"{stamp:020d}.{index:06d}"},
            }
            if speaker:
                memory["speaker"] = speaker
            if self.team_id is not None:
                memory["team_id"] = self.team_id
            memories.append(memory)
        for start in range(0, len(memories), BATCH):
            await self.client.remember_batch(memories[start : start + BATCH])

    async def pop_item(self) -> TResponseInputItem | None:
        for record in reversed(await self._records()):
            try:
                await self.client.archive(record.id)
            except NotFoundError:
                continue  # popped or archived meanwhile
            item: TResponseInputItem = record.metadata[ITEM]
            return item
        return None

    async def clear_session(self) -> None:
        for record in await self._records():
            try:
                await self.client.archive(record.id)
            except NotFoundError:
                pass


def recall_tool(
    client: AsyncXmemoClient,
    *,
    name: str = "recall_memories",
    max_items: int = 8,
    max_tokens: int = 1_500,
    team_id: str | None = None,
    path_filter: str | None = None,
) -> FunctionTool:
    """A tool the agent calls with a question: the context pack's text for it (the memories that matter,
    under `max_items` and `max_tokens`), from the key owner's memories, its teams' and, with `team_id`
    or `path_filter`, only those."""
    filters: dict[str, Any] = {"max_items": max_items, "max_tokens": max_tokens}
    if team_id is not None:
        filters["team_id"] = team_id
    if path_filter is not None:
        filters["path_filter"] = path_filter

    async def recall(query: str) -> str:
        """Recall what is known that bears on a question or a task: past decisions, facts, preferences
        and conversations, most relevant first.

        Args:
            query: the question or task, in plain words.
        """
        pack = await client.recall_context(query, **filters)
        return pack.context_text

    return function_tool(recall, name_override=name)
