"""`XmemoStore`: a LangGraph long-term memory store (`langgraph.store.base.BaseStore`) kept in an xmemo
server, so LangGraph and LangMem agents remember through it.

A namespace is a path (`("users", "u1", "memories")` is `users/u1/memories`); an item is a semantic memory
at that path whose `semantic_key` names the (namespace, key) pair, so putting a key again supersedes its
last version (the history keeps every one) and `get` reads the active one. The item's value travels in
the memory's metadata; its text (the fields `index` names, or the value's text fields) is what recall
embeds and matches. Deleting archives the memory. `search` with a query ranks by the server's hybrid
search; without one it lists the namespace newest first. A namespace's items are its owner's alone: the
store reads and writes only the key owner's personal memories, or with `team_id` only that team's, so no
teammate's memory carrying the same path and metadata shadows an item. Needs the `langgraph` extra
(`pip install './clients/python[langgraph]'`).
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import operator
from collections.abc import Callable, Iterable, Mapping
from datetime import datetime
from typing import Any

from langgraph.store.base import (
    BaseStore,
    GetOp,
    InvalidNamespaceError,
    Item,
    ListNamespacesOp,
    MatchCondition,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    get_text_at_path,
    tokenize_path,
)

from .clients import XmemoClient
from .errors import NotFoundError
from .results import MemoryRecord

__all__ = ["XmemoStore"]

STORE_TAG = "langgraph_store"  # metadata field marking the store's memories (list filter `key=value`)
ITEM_ID = "langgraph_id"  # metadata field: the digest of (namespace, key), one active memory each
ITEM = "langgraph"  # metadata field: {"namespace", "key", "value"}
PAGE = 200  # listing page size when a search has no query or namespaces are listed
SCAN_LIMIT = 5_000  # at most this many memories are listed to answer one query-less search or listing


def _path(namespace: tuple[str, ...]) -> str:
    for label in namespace:
        if "/" in label or "%" in label or not label.strip():
            raise InvalidNamespaceError(f"namespace labels must be non-blank, without '/' or '%': {namespace!r}")
    return "/".join(namespace)


def _digest(namespace: tuple[str, ...], key: str) -> str:
    return hashlib.sha256(json.dumps([list(namespace), key]).encode()).hexdigest()[:32]


def _text(value: Mapping[str, Any], index: list[str] | None) -> str:
    """What recall embeds and matches: the fields `index` names, else the value's text fields, else its JSON."""
    if index:
        texts = [t for path in index for t in get_text_at_path(value, tokenize_path(path)) if t.strip()]
    else:
        texts = [v for v in value.values() if isinstance(v, str) and v.strip()]
    return "\n".join(texts) if texts else json.dumps(value, ensure_ascii=False, sort_keys=True)


def _time(stamp: str) -> datetime:
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def _item(record: MemoryRecord, score: float | None = None) -> Item | None:
    held = record.metadata.get(ITEM)
    if not isinstance(held, dict) or not isinstance(held.get("value"), dict):
        return None  # not one of the store's memories
    namespace, key = tuple(held.get("namespace", ())), str(held.get("key", ""))
    created, updated = _time(record.created_at), _time(record.updated_at or record.created_at)
    if score is None:
        return Item(value=held["value"], key=key, namespace=namespace, created_at=created, updated_at=updated)
    return SearchItem(namespace, key, held["value"], created, updated, score)


_COMPARE: dict[str, Callable[[Any, Any], bool]] = {
    "$eq": operator.eq,
    "$ne": operator.ne,
    "$gt": operator.gt,
    "$gte": operator.ge,
    "$lt": operator.lt,
    "$lte": operator.le,
}


def _matches(value: Mapping[str, Any], wanted: Mapping[str, Any] | None) -> bool:
    """LangGraph's filter: each key equals its value, or meets `{"$eq"|"$ne"|"$gt"|"$gte"|"$lt"|"$lte": x}`."""
    for name, condition in (wanted or {}).items():
        have = value.get(name)
        tests = condition.items() if isinstance(condition, dict) else [("$eq", condition)]
        for test, operand in tests:
            compare = _COMPARE.get(test)
            if compare is None or (have is None and test not in ("$eq", "$ne")):
                return False
            try:
                if not compare(have, operand):
                    return False
            except TypeError:  # not comparable: not a match
                return False
    return True


def _under(namespace: tuple[str, ...], prefix: tuple[str, ...]) -> bool:
    return namespace[: len(prefix)] == prefix


def _meets(namespace: tuple[str, ...], condition: MatchCondition) -> bool:
    path = tuple(condition.path)
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if condition.match_type == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want == "*" or want == have for want, have in zip(path, part, strict=True))


class XmemoStore(BaseStore):
    """A LangGraph store over `client` (an XmemoClient); its key's owner owns the items, or with
    `team_id` (one of the key's teams) the team does."""

    def __init__(self, client: XmemoClient, *, bucket: str | None = None, team_id: str | None = None) -> None:
        self.client = client
        self.bucket = bucket
        self.team_id = team_id

    def _owns(self, record: MemoryRecord) -> bool:
        """The store's own memory: the key owner's personal one (the only personal ones a key reads), or
        its team's; a teammate's team memory is never an item of a personal namespace."""
        return record.team_id == self.team_id

    # -- the operations ------------------------------------------------------------------------------

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        return [self._one(op) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        return await asyncio.to_thread(self.batch, list(ops))

    def _one(self, op: Op) -> Result:
        if isinstance(op, GetOp):
            record = self._active(op.namespace, op.key)
            return _item(record) if record is not None else None
        if isinstance(op, PutOp):
            self._put(op)
            return None
        if isinstance(op, SearchOp):
            return self._search(op)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op)
        raise TypeError(f"unknown store operation: {type(op).__name__}")

    def _active(self, namespace: tuple[str, ...], key: str) -> MemoryRecord | None:
        listed = self._listed(namespace, metadata=f"{ITEM_ID}={_digest(namespace, key)}")
        return next(iter(listed), None)

    def _put(self, op: PutOp) -> None:
        path = _path(op.namespace)
        if op.value is None:
            record = self._active(op.namespace, op.key)
            if record is not None:
                try:
                    self.client.archive(record.id)
                except NotFoundError:
                    pass  # deleted meanwhile
            return
        value = dict(op.value)
        metadata = {
            STORE_TAG: "v1",
            ITEM_ID: _digest(op.namespace, op.key),
            ITEM: {"namespace": list(op.namespace), "key": op.key, "value": value},
        }
        index = op.index if isinstance(op.index, list) else None
        fields: dict[str, Any] = {"memory_type": "semantic", "source": "langgraph", "metadata": metadata}
        if self.bucket is not None:
            fields["bucket"] = self.bucket
        if self.team_id is not None:
            fields["team_id"] = self.team_id
        written = self.client.remember(
            _text(value, index), path, semantic_key=f"lg-{_digest(op.namespace, op.key)}", **fields
        )
        if written.outcome == "unchanged":  # the same text: the value may still differ elsewhere
            record = self.client.get_memory(written.id)
            if record.metadata.get(ITEM) != metadata[ITEM]:
                self.client.edit(record.id, record.version, metadata={**record.metadata, **metadata})

    def _listed(self, prefix: tuple[str, ...], *, metadata: str = f"{STORE_TAG}=v1") -> Iterable[MemoryRecord]:
        """The store's own active memories under `prefix` whose metadata holds `metadata`, newest first."""
        cursor: str | None = None
        seen = 0
        path = _path(prefix) if prefix else None
        while seen < SCAN_LIMIT:
            fields: dict[str, Any] = {"status": "active", "metadata": metadata, "limit": PAGE}
            if path:
                fields["path_prefix"] = path
            if self.team_id is not None:
                fields["team_id"] = self.team_id
            if cursor:
                fields["cursor"] = cursor
            page = self.client.list_memories(**fields)
            yield from (record for record in page.memories if self._owns(record))
            seen += len(page.memories)
            cursor = page.next_cursor
            if cursor is None:
                return

    def _search(self, op: SearchOp) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        found: list[SearchItem] = []
        if op.query:
            path = _path(prefix) if prefix else ""
            fields: dict[str, Any] = {"path_filter": f"{path}%", "min_score": 0.0}
            if self.team_id is not None:
                fields["team_id"] = self.team_id
            hits = self.client.search(op.query, limit=min(100, 4 * (op.offset + op.limit)), **fields)
            # Ranked as recall ranks (the hybrid score), not by the strict score search lists by.
            for hit in sorted(hits.results, key=lambda h: -(h.rank_score if h.rank_score is not None else h.score)):
                try:
                    record = self.client.get_memory(hit.id)
                except NotFoundError:
                    continue
                score = hit.rank_score if hit.rank_score is not None else hit.score
                item = _item(record, score) if self._owns(record) else None
                if isinstance(item, SearchItem) and _under(item.namespace, prefix) and _matches(item.value, op.filter):
                    found.append(item)
        else:
            for record in self._listed(prefix):
                item = _item(record, 0.0)
                if isinstance(item, SearchItem) and _under(item.namespace, prefix) and _matches(item.value, op.filter):
                    found.append(item)
                if len(found) >= op.offset + op.limit:
                    break
            for plain in found:
                plain.score = None
        return found[op.offset : op.offset + op.limit]

    def _namespaces(self, op: ListNamespacesOp) -> list[tuple[str, ...]]:
        names: set[tuple[str, ...]] = set()
        for record in self._listed(()):
            item = _item(record)
            if item is None:
                continue
            namespace = item.namespace
            if op.match_conditions and not all(_meets(namespace, c) for c in op.match_conditions):
                continue
            names.add(namespace[: op.max_depth] if op.max_depth is not None else namespace)
        return sorted(names)[op.offset : op.offset + op.limit]
