"""What the APIs say about themselves, in one place: each operation's id and summary, and a description of
every field and parameter, which the OpenAPI document (`describe_openapi`) and the MCP tools' input
schemas (`describe_tools`) both take from here. `tests/service/routes/test_api_docs.py` fails on any field or
parameter left without one, so a new field cannot ship undescribed."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, FastAPI
from fastapi.openapi.utils import get_openapi
from fastapi.routing import APIRoute

__all__ = ["FIELD_DOCS", "OPERATIONS", "describe_openapi", "describe_tools", "name_operations"]

# route function -> (operationId, summary)
OPERATIONS: dict[str, tuple[str, str]] = {
    "recall_context_route": ("recall_context", "Context pack for a task: the memories that matter, within budgets"),
    "search_route": ("search_memory", "Strict search: only memories that match the query well (may be empty)"),
    "project_context_route": ("project_context", "A project's recent memories and its durable facts for a query"),
    "remember_route": ("remember", "Store a memory (a semantic_key supersedes its last version)"),
    "update_state_route": ("update_state", "Set the one current working memory of a state_key"),
    "event_route": ("timeline_event", "Append an episodic event that happened at a time"),
    "reflect_route": ("reflect", "Consolidate and age memories: summarize, promote, expire, decay, archive"),
    "audit_route": ("list_audit", "Audit records of your memories, newest first"),
    "list_route": ("list_memories", "List memories you may see, newest first, a page at a time"),
    "batch_route": ("remember_batch", "Store up to 500 memories in one transaction (all or none)"),
    "get_route": ("get_memory", "Read one memory by id (a fetch counts as a use)"),
    "edit_route": ("edit_memory", "Change a memory at its expected version (a new version)"),
    "delete_route": ("archive_or_forget_memory", "Archive a memory, or with hard=true forget it from every store"),
    "history_route": ("memory_history", "A memory's versions, links and audit trail"),
    "restore_route": ("restore_memory", "Make an archived or expired memory active again"),
    "forget_owner_route": ("forget_owner", "Forget every memory of an owner (memory:admin)"),
}

FIELD_DOCS: dict[str, str] = {
    # the memory
    "id": "The memory's id (a UUID); for a write's answer, the memory written or the existing one it matched.",
    "memory_id": "The memory's id (a UUID).",
    "content": "The memory's text: what recall matches and packs. Not blank, no NUL, at most 64 KiB.",
    "path": "Where the memory is filed, like a folder (projects/payments/bugs); filters and summaries use it.",
    "memory_type": "episodic (what happened), semantic (a durable fact), procedural (how to), identity (who "
    "someone is), working (current state), or auto: semantic when a semantic_key is given, else episodic.",
    "type": "The memory's type: episodic, semantic, procedural, identity or working.",
    "bucket": "A partition of the owner's memories (default personal); reads may name one to look only there.",
    "scope": "A finer partition inside a bucket (default empty); keys are unique within owner, team, bucket and scope.",
    "team_id": "One of the key's teams, else 403. On a write: the team the memory belongs to (visible to its "
    "members); empty: personal to the owner. On a read: only that team's memories; empty: your personal "
    "memories and your teams' (reflect: personal only).",
    "source": "Who or what wrote it (free text, e.g. the agent or tool).",
    "importance": "0 to 1 (default 0.5): nudges ranking by at most 10 %, and decay lowers it over time.",
    "confidence": "0 to 1 (default 0.5): how sure the writer is; at 0.9 or more reflect never decays or archives it.",
    "expires_at": "ISO 8601 with a zone: after it the memory is never recalled, searched or listed as active.",
    "occurred_at": "When it happened, ISO 8601 with a zone (default now; at most a day ahead): packs show it "
    "and dates in questions match it.",
    "speaker": "Who said it: a conversation's speaker, or a chat's role (user, assistant); a question naming "
    "the speaker prefers their memories.",
    "session_id": "The conversation or session it belongs to.",
    "semantic_key": "A stable name for a fact (bug:PAY-2291): the same key with new content supersedes the old "
    "version, with the same content it is a no-op; a query naming its identifier ranks it first.",
    "state_key": "The name of a piece of current state ([a-z0-9][a-z0-9_.:-]{0,127}): one active working "
    "memory per owner, bucket, scope and key.",
    "event_type": "What kind of event ([a-z0-9][a-z0-9_.:-]{0,127}), e.g. release or deploy.",
    "dedupe": "Also merge into a near-identical existing memory instead of writing a new one.",
    "metadata": "A JSON object kept with the memory (at most 32 levels, 32 KiB); the list route filters on "
    "its top-level fields.",
    "owner_id": "The owner (tenant) whose memory it is; the server decides it from the key.",
    "status": "active, archived, expired or superseded.",
    "version": "The memory's version, 1 for a new one; every change makes the next.",
    "created_at": "When the memory was written (UTC).",
    "updated_at": "When the memory last changed (UTC).",
    "last_accessed_at": "When it last appeared in a result (a pack, a search, a fetch), or null; idleness "
    "for decay and archive counts from it.",
    "access_count": "How many times it was fetched by id (packs and searches do not count).",
    "derived_from": "The ids of the memories this one was made from (a reflect summary or promotion).",
    "deduplicated": "Whether the write matched an existing memory (an unchanged key, or dedupe).",
    "outcome": "created, unchanged (the same key and content), superseded (a key's new version) or merged.",
    "memories": "The memories of this page, or to write.",
    "next_cursor": "Pass as cursor for the next page; null on the last.",
    "results": "The matches, best first, or each write's answer in order.",
    "memory_ids": "The ids of the memories concerned.",
    "audit_record_ids": "The audit records the request wrote.",
    # reads
    "query": "The question or task to recall for (not blank, at most 8,192 characters).",
    "max_items": "At most this many memories in the pack (1 to 50, default 8).",
    "max_tokens": "At most this many cl100k tokens in the whole context text (1 to 12,000, default 1,500).",
    "as_of": 'When the question is asked, ISO 8601 with a zone (default now): "last Saturday" resolves '
    "against it, and recency is counted back from it.",
    "path_filter": "Only memories whose path matches: a path, or a pattern with % as a wildcard (%: all).",
    "path_prefix": "Only memories whose path starts with this.",
    "min_score": "0 to 1: the strict score a result needs (its cosine, or 1 when every query word is in it).",
    "limit": "How many to return at most (or, for reflect, how many candidates to consider).",
    "score": "The ranking's score of this result (higher is better).",
    "context_text": "The pack as text for the agent's prompt: a header, one block per item, a Budget line.",
    "items": "The packed memories, in rank order.",
    "budget": "What the pack spent: items and tokens used of the maxima, dropped and shortened items.",
    "used_items": "How many memories the pack holds.",
    "shortened_items": "How many packed memories were cut to fit the token budget.",
    "shortened": "Whether this item was cut to fit the token budget.",
    "retrieval_plan": "How the ranking was made: channels, fusion, weights, candidate counts, the query's "
    "speaker and time window.",
    "strategy": "The ranking used (hybrid in production).",
    "channels": "The retrieval channels searched (dense, bm25).",
    "candidates": "How many memories each channel returned, their union and how many the ranking kept.",
    "dense": "Candidates from the dense (meaning) channel.",
    "bm25": "Candidates from the BM25 (words) channel.",
    "union": "Distinct candidates from both channels.",
    "matched": "Candidates the ranking kept.",
    "relevance_floor": "The share of the best item's score an item needs to be packed.",
    "durable_query": "The question the project's durable (semantic) memories are ranked for.",
    "project_id": "The project whose context is asked for.",
    "project_scope": "The project's scope: its scope_key and the tenant it belongs to.",
    "scope_key": "tenant:project:<project_id>.",
    "organization_id": "The key's organization.",
    "workspace_id": "The key's workspace.",
    "time_field": "Which time since and until compare: created_at, updated_at or occurred_at.",
    "text": "Only memories whose content contains this text.",
    "cursor": "The next_cursor of the previous page.",
    "order": "The time field the list runs by, newest first: created_at (default), occurred_at or updated_at.",
    "hard": "true: forget (remove the content from every store, keep an audit tombstone) instead of archiving.",
    "expected_version": "The version you read: the change is refused (409) if the memory moved on.",
    # reflect
    "actions_csv": "Which actions to run, comma separated: summarize, promote, expire, decay, archive (all).",
    "actions": "The actions the pass ran.",
    "dry_run": "Plan and report only; write nothing. Review it, then apply with expected_plan.",
    "time_window_hours": "How far back the pass looks, in hours (default 24); since overrides it.",
    "since": "From this time, ISO 8601 with a zone.",
    "until": "Up to this time, ISO 8601 with a zone (default now).",
    "owner_filter": "Another owner's memories (memory:admin).",
    "expected_plan": "A dry run's plan_digest: apply exactly that plan, else 409 and nothing is written.",
    "exclude": (
        "proposal_ids of that dry run to leave out; the rest is applied as reviewed. A real run records each as "
        "turned down: later passes hold it back (held_back) until one of its memories changes or another joins."
    ),
    "reconsider": "Clear the proposals earlier reviews turned down and plan as if none had been.",
    "plan_id": "This pass's id (its audit records carry it).",
    "plan_digest": "The digest of the plan: send it back as expected_plan to apply exactly what you reviewed.",
    "now": "When the pass ran (UTC).",
    "counts": "How many memories each action touched.",
    "summaries": "The summaries the pass made (or would make), each with its members.",
    "promotions": "The durable facts the pass promoted (or would promote).",
    "lifecycle": "Expiries, decays and archives.",
    "filters": "The filters the pass ran with.",
    "index_points": "How many points the vector index holds.",
    "into": "The packed memory a restatement was collapsed into, or the summary a member was grouped under "
    "(its words are there).",
    "reason": "Why, in a word: a collapse's or a drop's cause, or what a reflect change rests on.",
    # audit and history
    "action": "What was done: create, edit, archive, restore, forget, or reflect's summarize, promote, expire, decay.",
    "actor": "Who did it: the key's owner and agent, or the operator.",
    "at": "When (UTC).",
    "before": "The changed fields before the change, by memory id.",
    "after": "The changed fields after the change, by memory id.",
    "changes": "The fields the change set.",
    "audit_id": "The audit record of this version.",
    "memory": "The memory.",
    "versions": "Every version, oldest first.",
    "supersedes": "The memories this one replaced (a semantic_key's older versions).",
    "superseded_by": "The memory that replaced this one.",
    "start": "The window's start (UTC).",
    "end": "The window's end (UTC).",
    # errors
    "error": "What went wrong.",
    "code": "A stable machine code for the error (e.g. validation_error, conflict).",
    "message": "What went wrong, in words.",
}

PUBLIC_OPERATIONS = {"/healthz", "/readyz", "/metrics"}


def _describe(schema: dict[str, Any]) -> None:
    for name, prop in schema.get("properties", {}).items():
        if name in FIELD_DOCS and not prop.get("description"):
            prop["description"] = FIELD_DOCS[name]


def name_operations(router: APIRouter) -> APIRouter:
    """Give the router's operations their ids and summaries from OPERATIONS (before it is included)."""
    for route in router.routes:
        if isinstance(route, APIRoute) and route.name in OPERATIONS:
            route.operation_id, route.summary = OPERATIONS[route.name]
    return router


def describe_openapi(app: FastAPI) -> None:
    """Every field and parameter described from FIELD_DOCS (a description a model gives itself wins), and a
    bearer scheme on every operation that takes a key."""

    def openapi() -> dict[str, Any]:
        if app.openapi_schema is None:
            schema = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
            for model in schema.get("components", {}).get("schemas", {}).values():
                _describe(model)
            schema.setdefault("components", {})["securitySchemes"] = {
                "bearer": {"type": "http", "scheme": "bearer", "description": "An API key: xmemo keys create"}
            }
            for path, operations in schema["paths"].items():
                for operation in operations.values():
                    for parameter in operation.get("parameters", []):
                        if not parameter.get("description") and parameter["name"] in FIELD_DOCS:
                            parameter["description"] = FIELD_DOCS[parameter["name"]]
                    if path not in PUBLIC_OPERATIONS:
                        operation["security"] = [{"bearer": []}]
            app.openapi_schema = schema
        return app.openapi_schema

    app.openapi = openapi  # type: ignore[method-assign]


def describe_tools(tools: list[Any]) -> None:
    """Describe every MCP tool parameter from FIELD_DOCS (the tools' input schemas)."""
    for tool in tools:
        _describe(tool.parameters)
