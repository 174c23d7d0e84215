"""xmemo-server's retrieval layer: the memory record, its stores, hybrid recall and the token packer.

Its subpackages are layers, each importing only those below it (tests/test_layers.py):

    domain      the record, the caller, errors, bounds and checks, policy, texts, settings
    storage     the system of record (SQL): schema, frozen migrations, store, unit of work, audit log
    encoding    dense encoders (ONNX, torch), the embedding cache, BM25 sparse vectors
    index       the vector index port: Qdrant Edge (embedded) and a Qdrant server
    ranking     fusion, recency and importance, restatements, the token packer
    engine      the stores of one data dir kept in step; a replica's follower; read tracking
    usecases    what REST, MCP, the CLI and the console call

Code outside `retrieval/` imports from here or from a subpackage, never from a module inside one.
"""

from .domain import (
    AuthenticationError,
    ConflictError,
    IndexUnavailableError,
    Memory,
    MemoryStatus,
    MemoryType,
    ModelMismatchError,
    NotFoundError,
    PermissionDeniedError,
    Principal,
    ReadFilters,
    RetrievalSettings,
    StoreError,
    ValidationError,
    XMemoError,
)
from .engine import MemoryEngine
from .usecases import (
    Budget,
    ContextPack,
    LightRecallRequest,
    PackItem,
    PackMember,
    PreparedRead,
    RecallRequest,
    RememberRequest,
    RetrievalPlan,
    SearchRequest,
    SearchResult,
    WriteResult,
    add_event,
    archive_memory,
    get_memory,
    hybrid_retrieve,
    import_records,
    prepare_read,
    read_filters,
    recall,
    recall_context,
    remember,
    render_context_text,
    search_memory,
    update_state,
)

__all__ = [
    "AuthenticationError",
    "Budget",
    "ConflictError",
    "ContextPack",
    "IndexUnavailableError",
    "LightRecallRequest",
    "Memory",
    "MemoryEngine",
    "MemoryStatus",
    "MemoryType",
    "ModelMismatchError",
    "NotFoundError",
    "PackItem",
    "PackMember",
    "PermissionDeniedError",
    "PreparedRead",
    "Principal",
    "ReadFilters",
    "RecallRequest",
    "RememberRequest",
    "RetrievalPlan",
    "RetrievalSettings",
    "SearchRequest",
    "SearchResult",
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
