"""Console sessions: a random id in an HttpOnly, SameSite=Strict cookie; the API key stays in server memory.

The key is never sent back to the browser: the cookie carries only the session id, and each request
through the console gate is authorised with the key as if it had come as a bearer header, so that a
revoked key ends its sessions at once.
"""

from __future__ import annotations

import secrets
import threading
import time
from dataclasses import dataclass

__all__ = ["COOKIE", "IDLE_SECONDS", "Session", "SessionStore"]

COOKIE = "xmemo_session"
IDLE_SECONDS = 8 * 3600  # a working day of inactivity signs out


@dataclass(slots=True)
class Session:
    sid: str
    key: str
    key_id: str
    csrf: str
    last_seen: float


class SessionStore:
    """Sessions of one app, in memory: a restart signs everyone out."""

    def __init__(self) -> None:
        self._sessions: dict[str, Session] = {}
        self._lock = threading.Lock()

    def open(self, key: str, key_id: str) -> Session:
        session = Session(secrets.token_urlsafe(32), key, key_id, secrets.token_urlsafe(32), time.monotonic())
        with self._lock:
            self._sessions[session.sid] = session
        return session

    def get(self, sid: str | None) -> Session | None:
        """The live session of this id, its idle clock restarted; None if unknown or idle too long."""
        if not sid:
            return None
        now = time.monotonic()
        with self._lock:
            session = self._sessions.get(sid)
            if session is None or now - session.last_seen > IDLE_SECONDS:
                self._sessions.pop(sid, None)
                return None
            session.last_seen = now
            return session

    def close(self, sid: str) -> None:
        with self._lock:
            self._sessions.pop(sid, None)
