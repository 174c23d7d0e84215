"""The system of record: schema and frozen migrations, the store, its unit of work, rows, listing, the
audit log, backups, copying a store, the data dir on disk, and the one mapping of library faults."""

from .audit_log import (
    AuditRecord,
    actor_of,
    audit_change,
    audit_records,
    audit_row,
    audit_trail,
    changed_values,
    scrub_audit,
    tombstone,
)
from .backup import content_id, line_owner
from .columns import RECORD_FIELDS, STORE_ONLY, memory_columns, memory_from_row, memory_from_values, memory_to_row
from .data_dir import (
    PRIVATE_DIR,
    PRIVATE_FILE,
    FreeSpace,
    lock_data_dir,
    lock_holder,
    private_file,
    private_umask,
    replace_private,
    secure_data_dir,
)
from .database import engine_url, open_engine
from .faults import FaultTable, install_sql_mapping, map_edge_faults, map_server_faults, map_sql_faults
from .listing import Listing, json_field
from .migrations import MIGRATION_LOCK, MIGRATIONS, POSTGRESQL_ONLY_COLUMNS, Migration, migrate
from .rows import (
    chunks,
    find_active_by_key,
    memory_of_row,
    read_memory,
    read_versions,
    stored_row,
    unique_violation,
    updated_row,
)
from .schema import audit_log, changes, embeddings, insertion_order, memories, meta, metadata, schema_migrations
from .store import MODEL_KEYS, MemoryStore
from .store_copy import CachedVectors, CopyCounts, copy_store
from .unit_of_work import CHANGE_LOCK, UnitOfWork

__all__ = [
    "CHANGE_LOCK",
    "MIGRATIONS",
    "MIGRATION_LOCK",
    "MODEL_KEYS",
    "POSTGRESQL_ONLY_COLUMNS",
    "PRIVATE_DIR",
    "PRIVATE_FILE",
    "RECORD_FIELDS",
    "STORE_ONLY",
    "AuditRecord",
    "CachedVectors",
    "CopyCounts",
    "FaultTable",
    "FreeSpace",
    "Listing",
    "MemoryStore",
    "Migration",
    "UnitOfWork",
    "actor_of",
    "audit_change",
    "audit_log",
    "audit_records",
    "audit_row",
    "audit_trail",
    "changed_values",
    "changes",
    "chunks",
    "content_id",
    "copy_store",
    "embeddings",
    "engine_url",
    "find_active_by_key",
    "insertion_order",
    "install_sql_mapping",
    "json_field",
    "line_owner",
    "lock_data_dir",
    "lock_holder",
    "map_edge_faults",
    "map_server_faults",
    "map_sql_faults",
    "memories",
    "memory_columns",
    "memory_from_row",
    "memory_from_values",
    "memory_of_row",
    "memory_to_row",
    "meta",
    "metadata",
    "migrate",
    "open_engine",
    "private_file",
    "private_umask",
    "read_memory",
    "read_versions",
    "replace_private",
    "schema_migrations",
    "scrub_audit",
    "secure_data_dir",
    "stored_row",
    "tombstone",
    "unique_violation",
    "updated_row",
]
