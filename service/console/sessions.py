"""Console sessions in SQL, on the key store's engine: they outlive a restart and every replica sees them.

The browser holds a random session id in an HttpOnly, SameSite=Strict cookie. The table keeps only
the SHA-256 of that id, the `key_id` the person signed in with, the CSRF token of their forms and
when the session was last used: never the API key. Each console request is authorised from the
key's row (`KeyStore.principal_of`), so that a revoked key ends its sessions at once.
"""

from __future__ import annotations

import hashlib
import secrets
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass

from sqlalchemy import Column, Engine, Float, Index, MetaData, String, Table, delete, select, update

from retrieval.storage import map_sql_faults

__all__ = ["COOKIE", "IDLE_SECONDS", "TOUCH_SECONDS", "Session", "SessionStore", "console_sessions"]

COOKIE = "xmemo_session"
IDLE_SECONDS = 8 * 3600  # a working day of inactivity signs out
# last_seen is written at most this often per session: a page view is then a read, not a write on
# the key store that every API request reads too. Idle time is measured to within this much.
TOUCH_SECONDS = 60

_metadata = MetaData()
console_sessions = Table(
    "console_sessions",
    _metadata,
    Column("sid_digest", String(64), primary_key=True),
    Column("key_id", String, nullable=False),
    Column("csrf", String, nullable=False),
    Column("created_at", Float, nullable=False),
    Column("last_seen", Float, nullable=False),
    Index("console_sessions_key_id", "key_id"),
)


@dataclass(frozen=True, slots=True)
class Session:
    """A live session: `sid` is the cookie's value (known only from the request that carries it)."""

    sid: str
    key_id: str
    csrf: str
    last_seen: float


def _digest(sid: str) -> str:
    return hashlib.sha256(sid.encode("utf-8")).hexdigest()


def _store_faults() -> AbstractContextManager[None]:
    return map_sql_faults("the console's session store is unavailable")


class SessionStore:
    """Sessions in the `console_sessions` table of `engine` (the key store's, which its migration
    k002_console_sessions made: service/api_keys.py); `clock` is wall time."""

    def __init__(self, engine: Engine, clock: Callable[[], float] = time.time) -> None:
        self.engine = engine
        self.clock = clock

    def open(self, key_id: str) -> Session:
        """A new session for a key that has just been checked; its id goes into the cookie only."""
        now = self.clock()
        session = Session(secrets.token_urlsafe(32), key_id, secrets.token_urlsafe(32), now)
        with _store_faults(), self.engine.begin() as connection:
            connection.execute(
                console_sessions.insert().values(
                    sid_digest=_digest(session.sid),
                    key_id=key_id,
                    csrf=session.csrf,
                    created_at=now,
                    last_seen=now,
                )
            )
        return session

    def get(self, sid: str | None) -> Session | None:
        """The live session of this id, its idle clock restarted; None if unknown or idle too long."""
        if not sid:
            return None
        now = self.clock()
        digest = _digest(sid)
        with _store_faults():
            with self.engine.connect() as connection:
                row = connection.execute(
                    select(console_sessions).where(console_sessions.c.sid_digest == digest)
                ).first()
            if row is None:
                return None
            if now - row.last_seen > IDLE_SECONDS:
                self.close(sid)
                return None
            if now - row.last_seen >= TOUCH_SECONDS:
                with self.engine.begin() as connection:
                    connection.execute(
                        update(console_sessions).where(console_sessions.c.sid_digest == digest).values(last_seen=now)
                    )
        return Session(sid, row.key_id, row.csrf, now)

    def close(self, sid: str) -> None:
        with _store_faults(), self.engine.begin() as connection:
            connection.execute(delete(console_sessions).where(console_sessions.c.sid_digest == _digest(sid)))

    def close_key(self, key_id: str) -> int:
        """End every session of a key (it was revoked); how many there were."""
        with _store_faults(), self.engine.begin() as connection:
            result = connection.execute(delete(console_sessions).where(console_sessions.c.key_id == key_id))
        return int(result.rowcount)

    def sweep(self) -> int:
        """Delete the sessions idle for too long (a sign-in does this, so the table cannot grow unbounded)."""
        bar = self.clock() - IDLE_SECONDS
        with _store_faults(), self.engine.begin() as connection:
            result = connection.execute(delete(console_sessions).where(console_sessions.c.last_seen < bar))
        return int(result.rowcount)
