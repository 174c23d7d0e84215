"""API keys: random, shown once, stored as a digest, compared in constant time, revocable.

A key reads `xmk_<key id>_<secret>`. The id finds the row; the secret is checked against its
SHA-256 digest with `hmac.compare_digest`. Keys live in table api_keys: in the data dir's SQLite file
`keys.sqlite`, or in the PostgreSQL system of record beside the memories (every replica sees every
key). The table is made by a named migration, recorded in schema_migrations like the record's.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import secrets
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy import Column, Engine, Float, Index, MetaData, String, Table, Text, bindparam, select, update
from sqlalchemy.engine import Connection

from retrieval import AuthenticationError, NotFoundError, PermissionDeniedError, Principal, ValidationError
from retrieval.domain import ADMIN, READ, SCOPES, WRITE, check_field, format_time, utc_now
from retrieval.storage import Migration, map_sql_faults, migrate, open_engine, private_file, secure_data_dir

__all__ = ["IssuedKey", "KeyStore", "manages"]
_metadata = MetaData()
api_keys = Table(
    "api_keys",
    _metadata,
    Column("key_id", String, primary_key=True),
    Column("digest", String(64), nullable=False),
    Column("principal", Text, nullable=False),
    Column("created_at", String, nullable=False),
    Column("revoked_at", String, nullable=True),
)


def _k001_api_keys(connection: Connection) -> None:
    frozen = MetaData()
    Table(
        "api_keys",
        frozen,
        Column("key_id", String, primary_key=True),
        Column("digest", String(64), nullable=False),
        Column("principal", Text, nullable=False),
        Column("created_at", String, nullable=False),
        Column("revoked_at", String, nullable=True),
    ).create(connection, checkfirst=True)


def _k002_console_sessions(connection: Connection) -> None:
    """The console's sessions (service/console/sessions.py), beside the keys they were opened with."""
    frozen = MetaData()
    Table(
        "console_sessions",
        frozen,
        Column("sid_digest", String(64), primary_key=True),
        Column("key_id", String, nullable=False),
        Column("csrf", String, nullable=False),
        Column("created_at", Float, nullable=False),
        Column("last_seen", Float, nullable=False),
        Index("console_sessions_key_id", "key_id"),
    ).create(connection, checkfirst=True)


# Frozen steps, as retrieval/storage/migrations.py: append new ones, never edit an applied one. Names
# differ from the record's (one table records both on PostgreSQL).
KEY_MIGRATIONS: list[Migration] = [
    ("k001_api_keys", _k001_api_keys),
    ("k002_console_sessions", _k002_console_sessions),
]


@dataclass(frozen=True, slots=True)
class IssuedKey:
    key_id: str
    key: str
    principal: Principal

    def to_dict(self) -> dict[str, Any]:
        return {"key_id": self.key_id, "key": self.key, **_principal_dict(self.principal)}


def _digest(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _principal_dict(principal: Principal) -> dict[str, Any]:
    return {
        "owner_id": principal.owner_id,
        "agent_id": principal.agent_id,
        "organization_id": principal.organization_id,
        "workspace_id": principal.workspace_id,
        "project_id": principal.project_id,
        "team_ids": list(principal.team_ids),
        "scopes": sorted(principal.scopes),
    }


# Built once, so that SQLAlchemy reuses its compiled form: every request resolves its key.
_BY_KEY_ID = select(api_keys).where(api_keys.c.key_id == bindparam("key_id"))


def _principal_from(document: dict[str, Any]) -> Principal:
    return Principal(
        owner_id=document["owner_id"],
        agent_id=document["agent_id"],
        organization_id=document["organization_id"],
        workspace_id=document["workspace_id"],
        project_id=document["project_id"],
        team_ids=tuple(document["team_ids"]),
        scopes=frozenset(document["scopes"]),
    )


def manages(admin: Principal | None, key: Principal) -> bool:
    """Whether `admin` may see, issue and revoke a key of principal `key` (None: the operator, at the CLI).

    Key management is the operator's: a `memory:admin` key restricted to no team manages every key. The
    admin of teams manages only keys inside what it holds itself: each of the key's teams one of its
    own, each scope one it has, and the owner its own unless the key is a team key. So a team's admin
    can never list another tenant's keys, grant a team or scope it lacks, or revoke the operator's key.
    """
    if admin is None:
        return True
    if ADMIN not in admin.scopes:
        return False
    if not admin.team_ids:
        return True
    return (
        set(key.team_ids) <= set(admin.team_ids)
        and key.scopes <= admin.scopes
        and (key.owner_id == admin.owner_id or bool(key.team_ids))
    )


class KeyStore:
    """Issues, resolves, lists and revokes API keys."""

    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        migrate(engine, format_time(utc_now()), KEY_MIGRATIONS)

    @classmethod
    def open(cls, data_dir: Path, database_url: str | None = None) -> KeyStore:
        """The key store of a data dir (made private first, retrieval/storage/data_dir.py), or of the
        PostgreSQL system of record at `database_url`."""
        secure_data_dir(data_dir)
        with map_sql_faults(f"cannot open the key store in {database_url or data_dir}"):
            if database_url:
                return cls(open_engine(database_url))
            return cls(open_engine(private_file(data_dir / "keys.sqlite")))

    def create(
        self,
        owner_id: str,
        *,
        agent_id: str = "",
        team_ids: tuple[str, ...] = (),
        organization_id: str = "",
        workspace_id: str = "",
        project_id: str | None = None,
        scopes: tuple[str, ...] = (READ, WRITE),
        by: Principal | None = None,
    ) -> IssuedKey:
        """Issue a key; `by` is the admin asking (None: the operator), who may issue only what it manages.

        Every label takes the rule the API applies to the same labels (check_field: at most MAX_LABEL_CHARS
        characters, no control character; owner and teams not blank), so a key never names an owner, team
        or project that a route would refuse (a 600-character owner could never be forgotten)."""
        unknown = set(scopes) - set(SCOPES)
        if unknown or not scopes:
            raise ValidationError(f"scopes must be a non-empty subset of {', '.join(SCOPES)}")
        principal = Principal(
            owner_id=check_field(owner_id, "owner", allow_empty=False),
            agent_id=check_field(agent_id, "agent") or f"agent-{secrets.token_hex(3)}",
            organization_id=check_field(organization_id, "organization"),
            workspace_id=check_field(workspace_id, "workspace"),
            project_id=check_field(project_id, "project") if project_id is not None else None,
            team_ids=tuple(dict.fromkeys(check_field(team, "team", allow_empty=False) for team in team_ids)),
            scopes=frozenset(scopes),
        )
        if not manages(by, principal):
            raise PermissionDeniedError(
                "a team's admin key issues keys only for its own owner and teams, with scopes it holds itself"
            )
        key_id = secrets.token_hex(6)
        secret = secrets.token_urlsafe(32)
        with self.engine.begin() as connection:
            connection.execute(
                api_keys.insert().values(
                    key_id=key_id,
                    digest=_digest(secret),
                    principal=json.dumps(_principal_dict(principal)),
                    created_at=format_time(utc_now()),
                    revoked_at=None,
                )
            )
        return IssuedKey(key_id, f"xmk_{key_id}_{secret}", principal)

    @property
    def in_process(self) -> bool:
        """Keys in a SQLite file of this process (a lookup takes microseconds and waits for no one),
        not in a database across a network: the edge middleware then resolves keys on its event loop."""
        return self.engine.dialect.name == "sqlite"

    def resolve(self, key: str) -> tuple[str, Principal]:
        """(key id, principal) of a valid key; AuthenticationError for anything else."""
        parts = key.split("_", 2)
        if len(parts) != 3 or parts[0] != "xmk" or not parts[1] or not parts[2]:
            raise AuthenticationError("invalid API key")
        with map_sql_faults("the authorization store is unavailable"), self.engine.connect() as connection:
            row = connection.execute(_BY_KEY_ID, {"key_id": parts[1]}).first()
        # Compare even when the id is unknown, so timing does not tell known ids apart.
        expected = row.digest if row is not None else _digest("")
        valid = hmac.compare_digest(expected, _digest(parts[2]))
        if row is None or not valid or row.revoked_at is not None:
            raise AuthenticationError("invalid or revoked API key")
        return row.key_id, _principal_from(json.loads(row.principal))

    def list(self, by: Principal | None = None) -> list[dict[str, Any]]:
        """The keys `by` manages (`manages`; None: every key), oldest first."""
        with self.engine.connect() as connection:
            rows = connection.execute(select(api_keys).order_by(api_keys.c.created_at, api_keys.c.key_id))
            found = [(r, _principal_from(json.loads(r.principal))) for r in rows]
        return [
            {"key_id": r.key_id, "created_at": r.created_at, "revoked_at": r.revoked_at, **_principal_dict(p)}
            for r, p in found
            if manages(by, p)
        ]

    def revoke(self, key_id: str, by: Principal | None = None) -> bool:
        """Revoke a key `by` manages: True when it was active, False when there is no active key of that
        id; NotFoundError for a key `by` does not manage (the console answers both with a 404)."""
        with self.engine.connect() as connection:
            row = connection.execute(select(api_keys.c.principal).where(api_keys.c.key_id == key_id)).first()
        if row is None:
            return False
        if not manages(by, _principal_from(json.loads(row.principal))):
            raise NotFoundError(f"no key {key_id[:40]!r} among the keys this key manages")
        with self.engine.begin() as connection:
            result = connection.execute(
                update(api_keys)
                .where(api_keys.c.key_id == key_id, api_keys.c.revoked_at.is_(None))
                .values(revoked_at=format_time(utc_now()))
            )
        return result.rowcount == 1

    def rows(self) -> tuple[dict[str, Any], ...]:
        """Every stored row as it is (digests, not keys): what `xmemo migrate-store` copies."""
        with self.engine.connect() as connection:
            return tuple(dict(r._mapping) for r in connection.execute(select(api_keys).order_by(api_keys.c.key_id)))

    def add_rows(self, rows: Sequence[dict[str, Any]]) -> int:
        """Store rows of another key store whose key id is not here yet; returns how many were added."""
        with self.engine.begin() as connection:
            present = {r[0] for r in connection.execute(select(api_keys.c.key_id))}
            fresh = [row for row in rows if row["key_id"] not in present]
            if fresh:
                connection.execute(api_keys.insert(), fresh)
        return len(fresh)

    def count(self) -> int:
        with self.engine.connect() as connection:
            return len(list(connection.execute(select(api_keys.c.key_id))))

    def close(self) -> None:
        self.engine.dispose()

    def principal_of(self, key_id: str) -> Principal:
        """The principal of a key found by its id (a console session's); AuthenticationError if unknown or revoked."""
        with map_sql_faults("the authorization store is unavailable"), self.engine.connect() as connection:
            row = connection.execute(select(api_keys).where(api_keys.c.key_id == key_id)).first()
        if row is None or row.revoked_at is not None:
            raise AuthenticationError("invalid or revoked API key")
        return _principal_from(json.loads(row.principal))
