"""xmemo-server's retrieval layer: the memory record, its stores, hybrid recall and the token packer."""

from .engine import MemoryEngine
from .errors import (
    AuthenticationError,
    ConflictError,
    IndexUnavailableError,
    ModelMismatchError,
    NotFoundError,
    PermissionDeniedError,
    StoreError,
    ValidationError,
    XMemoError,
)
from .reads import get_memory, hybrid_retrieve, prepare_read, read_filters, recall, recall_context, search_memory
from .records import Memory, MemoryStatus, MemoryType, Principal, ReadFilters
from .rendering import render_context_text
from .settings import RetrievalSettings
from .writes import RememberRequest, WriteResult, add_event, archive_memory, import_records, remember, update_state

__all__ = [
    "AuthenticationError",
    "ConflictError",
    "IndexUnavailableError",
    "Memory",
    "MemoryEngine",
    "MemoryStatus",
    "MemoryType",
    "ModelMismatchError",
    "NotFoundError",
    "PermissionDeniedError",
    "Principal",
    "ReadFilters",
    "RememberRequest",
    "RetrievalSettings",
    "StoreError",
    "ValidationError",
    "WriteResult",
    "XMemoError",
    "add_event",
    "archive_memory",
    "get_memory",
    "hybrid_retrieve",
    "import_records",
    "prepare_read",
    "read_filters",
    "recall",
    "recall_context",
    "remember",
    "render_context_text",
    "search_memory",
    "update_state",
]
