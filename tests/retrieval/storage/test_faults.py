"""A fault below the service (index down, database locked) is a 503 with the contract body on every
route and backend, never a 500."""

from __future__ import annotations

import sqlite3

import pytest

from tests.support import BACKENDS, in_process

WRITES = [
    ("POST", "/api/v1/remember", {"content": "the deploy key rotates monthly", "path": "ops"}),
    ("POST", "/api/v1/update_state", {"state_key": "deploy", "content": "frozen"}),
    (
        "POST",
        "/api/v1/timeline/events",
        {"content": "deployed", "event_type": "deploy", "occurred_at": "2026-11-29T10:00:00Z"},
    ),
]
READS = [
    ("POST", "/v1/recall/context", {"query": "deploy key"}),
    ("GET", "/v1/memories/search?query=deploy+key", None),
]


def _assert_unavailable(response, code: str) -> None:  # type: ignore[no-untyped-def]
    assert response.status_code == 503, response.text
    body = response.json()
    assert set(body) == {"error"} and body["error"]["code"] == code and body["error"]["message"]


@pytest.mark.parametrize("backend", BACKENDS)
def test_index_fault_is_503_on_every_route(tmp_path, backend):
    with in_process(tmp_path / "data", backend=backend) as app:
        client, engine, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        headers = {"Authorization": f"Bearer {key}"}
        stored = client.post("/api/v1/remember", json={"content": "kept", "path": "ops"}, headers=headers).json()
        engine.index.close()  # the index goes away under the running service
        for method, url, body in [*WRITES, *READS, ("DELETE", f"/api/v1/memories/{stored['id']}", None)]:
            _assert_unavailable(client.request(method, url, json=body, headers=headers), "index_unavailable")
        assert client.get("/readyz").status_code == 503


def test_locked_database_is_503_on_every_write(tmp_path):
    with in_process(tmp_path / "data", retrieval={"sqlite_busy_timeout_ms": 50}) as app:
        client, engine, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        headers = {"Authorization": f"Bearer {key}"}
        stored = client.post("/api/v1/remember", json={"content": "kept", "path": "ops"}, headers=headers).json()
        holder = sqlite3.connect(engine.settings.sql_path, isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            for method, url, body in [*WRITES, ("DELETE", f"/api/v1/memories/{stored['id']}", None)]:
                _assert_unavailable(client.request(method, url, json=body, headers=headers), "store_unavailable")
            for method, url, body in READS:  # WAL readers do not wait for the writer
                assert client.request(method, url, json=body, headers=headers).status_code == 200
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert client.post("/api/v1/remember", json=WRITES[0][2], headers=headers).status_code == 201
