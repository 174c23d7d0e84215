"""`xmemo migrate-store --to postgresql://...`: move the data dir's SQLite store into PostgreSQL.

Copies the records (ids, versions, every status), the audit log, the API keys and the embedding
cache, then checks that every source record and audit record is in the target; safe to run again
(it copies only what the target lacks or holds at an older version). The source stays as it was.
"""

from __future__ import annotations

import click

from retrieval import StoreError, ValidationError
from retrieval.domain import DATABASE_SCHEMES
from retrieval.encoding import EmbeddingCache
from retrieval.storage import MemoryStore, copy_store, lock_data_dir

from ..api_keys import KeyStore
from .common import emit, settings_of

__all__ = ["migrate_store_command"]


@click.command("migrate-store")
@click.option("--to", "target_url", required=True, help="postgresql://user:pass@host:5432/db")
@click.option("--json", "as_json", is_flag=True)
@click.pass_context
def migrate_store_command(ctx: click.Context, target_url: str, as_json: bool) -> None:
    """Copy the data dir's SQLite store (records, audit, keys, embedding cache) into PostgreSQL."""
    if not target_url.startswith(DATABASE_SCHEMES):
        raise ValidationError(f"--to must start with one of {', '.join(DATABASE_SCHEMES)}")
    settings = settings_of(ctx)
    if not settings.sql_path.exists():
        raise StoreError(f"no SQLite store at {settings.data_dir}")
    with lock_data_dir(settings.data_dir):  # no server may write the source meanwhile
        source, target = MemoryStore.open(settings.sql_path), MemoryStore.open(target_url)
        source_cache, target_cache = EmbeddingCache(settings.cache_path), EmbeddingCache(engine=target.sql_engine)
        source_keys, target_keys = KeyStore.open(settings.data_dir), KeyStore.open(settings.data_dir, target_url)
        try:
            counts = copy_store(source, target, source_cache, target_cache)
            keys_added = target_keys.add_rows(source_keys.rows())
            keys_in_source = source_keys.count()
            keys_matched = len({r["key_id"] for r in target_keys.rows()} & {r["key_id"] for r in source_keys.rows()})
        finally:
            for closing in (source_keys, target_keys, source_cache, source, target):
                closing.close()
    report = {
        "memories": {
            "inserted": counts.memories_inserted,
            "updated": counts.memories_updated,
            "source": counts.memories_in_source,
            "in_target": counts.memories_matched,
        },
        "audit": {"copied": counts.audit_copied, "source": counts.audit_in_source, "in_target": counts.audit_matched},
        "keys": {"copied": keys_added, "source": keys_in_source, "in_target": keys_matched},
        "embeddings": {"copied": counts.embeddings_copied},
    }
    complete = (
        counts.memories_matched == counts.memories_in_source
        and counts.audit_matched == counts.audit_in_source
        and keys_matched == keys_in_source
    )
    if as_json:
        emit({**report, "complete": complete})
    else:
        for name, figures in report.items():
            click.echo(f"{name}: " + ", ".join(f"{k} {v}" for k, v in figures.items()), err=True)
    if not complete:
        raise StoreError("the target does not hold every source record; run migrate-store again")
