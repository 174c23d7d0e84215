"""Console sessions in SQL: no key stored, a revoked key ends them, shared by stores on one database,
idle ones end, and a signed-in browser stays signed in across a restart of the real server."""

from __future__ import annotations

import hashlib

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select

from retrieval.storage import open_engine
from service.api_keys import KeyStore
from service.console.sessions import IDLE_SECONDS, TOUCH_SECONDS, SessionStore, console_sessions
from tests.support import csrf_of, in_process, sign_in

ADMIN = ("memory:read", "memory:write", "memory:admin")


@pytest.fixture
def app(tmp_path):  # type: ignore[no-untyped-def]
    with in_process(tmp_path / "data") as running:
        yield running


def _rows(engine):  # type: ignore[no-untyped-def]
    with engine.connect() as connection:
        return [row._asdict() for row in connection.execute(select(console_sessions))]


def test_a_session_row_holds_a_digest_of_its_id_and_never_the_key(app, tmp_path):
    issued = app.keys.create("alice", scopes=ADMIN)
    signed = sign_in(app.client, issued.key)
    sid = signed.cookies["xmemo_session"]
    page = app.client.get("/ui/")
    assert page.status_code == 200
    [row] = _rows(app.keys.engine)
    assert row["sid_digest"] == hashlib.sha256(sid.encode()).hexdigest()
    assert (row["key_id"], row["csrf"]) == (issued.key_id, csrf_of(page.text))
    secret = issued.key.split("_", 2)[2]
    for path in (tmp_path / "data").glob("keys.sqlite*"):  # the database, its WAL and shared memory
        stored = path.read_bytes()
        assert secret.encode() not in stored and sid.encode() not in stored, path


def test_a_revoked_key_ends_its_sessions_at_once(app):
    issued = app.keys.create("alice", scopes=ADMIN)
    sign_in(app.client, issued.key)
    assert app.client.get("/ui/audit").status_code == 200
    other = app.keys.create("bob")
    bobs_browser = TestClient(app.client.app, base_url="http://127.0.0.1:8420")
    sign_in(bobs_browser, other.key)
    assert len(_rows(app.keys.engine)) == 2
    assert app.keys.revoke(issued.key_id)
    answer = app.client.get("/ui/audit", follow_redirects=False)
    assert (answer.status_code, answer.headers["location"]) == (303, "/ui/login")
    assert [r["key_id"] for r in _rows(app.keys.engine)] == [other.key_id]  # bob's session goes on
    assert bobs_browser.get("/ui/audit").status_code == 200


def test_signing_out_deletes_the_row(app):
    sign_in(app.client, app.keys.create("alice").key)
    token = csrf_of(app.client.get("/ui/").text)
    assert app.client.post("/ui/logout", data={"csrf": token}, follow_redirects=False).status_code == 303
    assert _rows(app.keys.engine) == []


class Clock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def test_two_stores_on_one_database_share_sessions_and_idle_ones_end(tmp_path):
    first_engine, second_engine = open_engine(tmp_path / "keys.sqlite"), open_engine(tmp_path / "keys.sqlite")
    KeyStore(first_engine)  # its migrations make the sessions table (k002_console_sessions)
    clock = Clock()
    first, second = SessionStore(first_engine, clock), SessionStore(second_engine, clock)  # two replicas
    try:
        opened = first.open("key1")
        seen = second.get(opened.sid)
        assert seen is not None and (seen.key_id, seen.csrf) == ("key1", opened.csrf)
        assert second.get("not-a-session") is None and second.get(None) is None

        clock.now += TOUCH_SECONDS
        assert first.get(opened.sid) is not None
        assert _rows(second_engine)[0]["last_seen"] == clock.now  # the idle clock restarted, for both
        clock.now += IDLE_SECONDS
        assert second.get(opened.sid) is not None  # exactly IDLE_SECONDS idle: still live
        clock.now += IDLE_SECONDS + 1
        assert first.get(opened.sid) is None and _rows(second_engine) == []

        kept, gone = first.open("key1"), first.open("key2")
        assert second.close_key("key2") == 1
        assert first.get(gone.sid) is None and first.get(kept.sid) is not None
        second.close(kept.sid)
        assert first.get(kept.sid) is None

        stale = first.open("key3")
        clock.now += IDLE_SECONDS + 1
        fresh = first.open("key3")
        assert second.sweep() == 1
        assert first.get(stale.sid) is None and first.get(fresh.sid) is not None
    finally:
        first_engine.dispose()
        second_engine.dispose()


def test_a_session_survives_a_restart_of_the_service(tmp_path):
    """The session lives in the key store's database, not in the app: a new app on the same data dir
    (nothing of the first one's memory left) serves the same cookie and CSRF token."""
    data_dir = tmp_path / "data"
    with in_process(data_dir) as first:
        admin = first.key("admin", scopes=ADMIN)
        signed = sign_in(first.client, admin)
        assert signed.status_code == 303
        page = first.client.get("/ui/")
        cookie, csrf = first.client.cookies["xmemo_session"], csrf_of(page.text)
    with in_process(data_dir) as second:
        second.client.cookies.set("xmemo_session", cookie)
        page = second.client.get("/ui/", follow_redirects=False)
        assert page.status_code == 200 and csrf_of(page.text) == csrf
        headers = {"Authorization": f"Bearer {admin}"}
        memory = second.client.post("/api/v1/remember", headers=headers, json={"content": "kept", "path": "p"}).json()
        archived = second.client.post(
            f"/ui/memories/{memory['id']}/archive", data={"csrf": csrf}, follow_redirects=False
        )
        assert archived.status_code == 303
        assert second.client.get(f"/api/v1/memories/{memory['id']}", headers=headers).json()["status"] == "archived"


def test_a_session_store_that_fails_is_a_503_page_not_a_crash(app):
    sign_in(app.client, app.keys.create("alice").key)
    assert app.client.get("/ui/").status_code == 200
    with app.keys.engine.begin() as connection:
        connection.exec_driver_sql("DROP TABLE console_sessions")  # the store breaks under a live session
    page = app.client.get("/ui/", follow_redirects=False)
    assert page.status_code == 503 and "<h1>Unavailable</h1>" in page.text and "console_sessions" in page.text
    refused = sign_in(app.client, app.keys.create("bob").key)
    assert refused.status_code == 503 and "Cannot sign in now" in refused.text
