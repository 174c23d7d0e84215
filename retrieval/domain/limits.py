"""The bounds of every input, in one place: the use cases check them, the HTTP schemas, the MCP tools
and the CLI declare them from here, so that an edge and the core never disagree on a limit."""

from __future__ import annotations

__all__ = [
    "BATCH_LIMIT",
    "DEFAULT_PACK_ITEMS",
    "DEFAULT_PACK_TOKENS",
    "DEFAULT_RECALL_LIMIT",
    "DEFAULT_SEARCH_LIMIT",
    "KEY_REGEX",
    "MAX_CONTENT_BYTES",
    "MAX_LABEL_CHARS",
    "MAX_LIST_PAGE",
    "MAX_METADATA_BYTES",
    "MAX_METADATA_DEPTH",
    "MAX_PACK_ITEMS",
    "MAX_PACK_TOKENS",
    "MAX_QUERY_CHARS",
    "MAX_RECALL_LIMIT",
    "MAX_SEARCH_LIMIT",
    "MAX_WILDCARDS",
]

# A memory's text (the XMemo contract).
MAX_CONTENT_BYTES = 64 * 1024
# A query of recall, search or a durable query.
MAX_QUERY_CHARS = 8192
# Short labels: path, bucket, scope, team, source, session and the like.
MAX_LABEL_CHARS = 512
# `state_key` and `event_type` (the XMemo contract).
KEY_REGEX = r"[a-z0-9][a-z0-9_.:-]{0,127}"
# Metadata is a small JSON object beside the content: deep nesting made reads and the audit log fail
# (a record nested 255 levels could be stored but not serialised back), so depth and size are bounded.
MAX_METADATA_DEPTH = 32
MAX_METADATA_BYTES = 32 * 1024
# A path is a few segments; more `%` wildcards than this describe no real layout and only cost time.
MAX_WILDCARDS = 16

# recall_context and project context (the XMemo contract).
DEFAULT_PACK_ITEMS, MAX_PACK_ITEMS = 8, 50
DEFAULT_PACK_TOKENS, MAX_PACK_TOKENS = 1500, 12000
# search_memory and the light recall.
DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT = 10, 100
DEFAULT_RECALL_LIMIT, MAX_RECALL_LIMIT = 5, 20
# The management API: memories in one batch, memories in one page of the list.
BATCH_LIMIT = 500
MAX_LIST_PAGE = 200
