"""End to end: `xmemo serve` as a real process on loopback, every route and MCP tool over real HTTP."""

from __future__ import annotations

import uuid

import anyio
import pytest

from tests.support import RunningServer, mcp_call


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def server(request, tmp_path_factory):  # type: ignore[no-untyped-def]
    """The service on each system of record: SQLite in its data dir, then a fresh PostgreSQL database."""
    if request.param == "sqlite":
        running = RunningServer(tmp_path_factory.mktemp("e2e") / "data")
        yield running
        running.stop()
        return
    from tests.support import fresh_database

    with fresh_database() as url:
        running = RunningServer(tmp_path_factory.mktemp("e2e-pg") / "data", database_url=url)
        yield running
        running.stop()


@pytest.fixture(scope="module")
def alice(server):  # type: ignore[no-untyped-def]
    return server.key(
        "alice",
        agent_id="agent-a",
        team_ids=("team-a",),
        organization_id="org-1",
        workspace_id="ws-1",
        project_id="memory-os",
    )


def test_health_ready_metrics_need_no_key(server):
    with server.client(None) as http:
        assert http.get("/healthz").json() == {"status": "ok"}
        assert http.get("/readyz").json()["status"] == "ready"
        text = http.get("/metrics").text
        assert "xmemo_http_requests_total" in text and "xmemo_index_points" in text
        assert "/v1/recall/context" in http.get("/openapi.json").json()["paths"]


def test_every_response_carries_ids(server, alice):
    with server.client(alice) as http:
        response = http.get("/healthz", headers={"X-Request-ID": "req-42"})
        assert response.headers["x-request-id"] == "req-42"
        uuid.UUID(response.headers["x-xmemo-audit-id"], version=4)
        failed = http.post("/v1/recall/context", json={})
        assert failed.status_code == 422 and "x-xmemo-audit-id" in failed.headers


@pytest.mark.parametrize("header", [None, "Bearer", "Bearer xmk_nope_nope", "Bearer xmk_x", "Basic abc"])
def test_401_without_a_valid_key(server, header):
    with server.client(None) as http:
        headers = {"Authorization": header} if header else {}
        response = http.post("/v1/recall/context", json={"query": "x"}, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert "nope" not in response.text


def test_revoked_key_is_401(server):
    issued = server.keys.create("temp")
    with server.client(issued.key) as http:
        assert http.get("/v1/memories/search", params={"query": "x"}).status_code == 200
        server.keys.revoke(issued.key_id)
        assert http.get("/v1/memories/search", params={"query": "x"}).status_code == 401


def test_write_read_cycle(server, alice):
    with server.client(alice) as http:
        created = http.post(
            "/api/v1/remember",
            json={
                "content": "Decision: the memory-os project uses Qdrant Edge; ticket XJ-4471-QZ tracks it.",
                "path": "projects/memory-os/decisions",
                "memory_type": "semantic",
                "scope": "tenant:project:memory-os",
                "semantic_key": "index-choice",
                "importance": 0.8,
            },
        )
        assert created.status_code == 201
        body = created.json()
        assert set(body) >= {"id", "memory_id", "status", "version", "deduplicated"} and body["deduplicated"] is False
        again = http.post(
            "/api/v1/remember",
            json={
                "content": "Decision: the memory-os project uses Qdrant Edge; ticket XJ-4471-QZ tracks it.",
                "path": "projects/memory-os/decisions",
                "memory_type": "semantic",
                "scope": "tenant:project:memory-os",
                "semantic_key": "index-choice",
            },
        )
        assert again.status_code == 200 and again.json()["id"] == body["id"] and again.json()["deduplicated"]
        pack = http.post("/v1/recall/context", json={"query": "XJ-4471-QZ", "max_items": 6, "max_tokens": 1200})
        assert pack.status_code == 200
        data = pack.json()
        assert data["items"][0]["id"] == body["id"]
        assert set(data["budget"]) == {
            "max_items",
            "max_tokens",
            "used_items",
            "used_tokens",
            "dropped_items",
            "shortened_items",
        }
        found = http.get("/v1/memories/search", params={"query": "XJ-4471-QZ", "limit": 5}).json()
        assert found["results"][0]["id"] == body["id"]
        state = http.post("/api/v1/update_state", json={"state_key": "task.current", "content": "testing e2e"})
        assert state.status_code == 201 and state.json()["version"] == 1  # a new memory, as remember answers
        event = http.post(
            "/api/v1/timeline/events",
            json={
                "content": "deployed 4.3",
                "event_type": "deploy",
                "occurred_at": "2026-11-20T10:00:00Z",
                "session_id": "s1",
            },
        )
        assert event.status_code == 201
        record = http.get(f"/api/v1/memories/{body['id']}").json()
        assert record["owner_id"] == "alice" and record["type"] == "semantic" and record["version"] == 1
        project = http.post(
            "/v1/projects/memory-os/context", json={"durable_query": "which index does the project use?"}
        ).json()
        assert project["project_scope"]["scope_key"] == "tenant:project:memory-os"
        assert project["project_scope"]["owner_id"] == "alice"
        assert [m["id"] for m in project["durable_context"]] == [body["id"]]
        conflict = http.delete(f"/api/v1/memories/{body['id']}", params={"expected_version": 7})
        assert conflict.status_code == 409 and conflict.json()["error"]["code"] == "conflict"
        archived = http.delete(f"/api/v1/memories/{body['id']}", params={"expected_version": 1})
        assert archived.status_code == 200 and archived.json()["status"] == "archived"
        assert http.get(f"/api/v1/memories/{body['id']}").json()["status"] == "archived"


def test_404_403_422_413(server, alice):
    reader = server.key("alice", scopes=("memory:read",))
    with server.client(alice) as http:
        assert http.get(f"/api/v1/memories/{uuid.uuid4()}").status_code == 404
        assert http.delete(f"/api/v1/memories/{uuid.uuid4()}").status_code == 404
        assert http.post("/v1/recall/context", json={"query": "x", "team_id": "team-z"}).status_code == 403
        assert http.post("/api/v1/remember", json={"content": "x", "path": "p", "team_id": "team-z"}).status_code == 403
        for bad in (
            {"query": "x", "max_items": 0},
            {"query": "x", "max_tokens": 12001},
            {"query": ""},
            {"query": "x", "surprise": 1},
            {"query": "x", "memory_type": "dream"},
        ):
            response = http.post("/v1/recall/context", json=bad)
            assert response.status_code == 422, bad
            assert response.json()["error"]["code"] == "validation_error"
        assert http.post("/api/v1/remember", json={"content": "  ", "path": "p"}).status_code == 422
        assert (
            http.post("/api/v1/remember", json={"content": "x", "path": "p", "expires_at": "soon"}).status_code == 422
        )
        assert (
            http.post(
                "/api/v1/timeline/events",
                json={"content": "x", "event_type": "Deploy", "occurred_at": "2026-01-01T00:00:00Z"},
            ).status_code
            == 422
        )
        assert http.get("/v1/memories/search", params={"query": "x", "limit": 101}).status_code == 422
        huge = http.post(
            "/api/v1/remember",
            content=b'{"content": "' + b"x" * (1024 * 1024 + 10) + b'", "path": "p"}',
            headers={"content-type": "application/json"},
        )
        assert huge.status_code == 413 and huge.json()["error"]["code"] == "payload_too_large"
    with server.client(reader) as http:
        assert http.post("/api/v1/remember", json={"content": "x", "path": "p"}).status_code == 403
        assert http.post("/v1/recall/context", json={"query": "x"}).status_code == 200


def test_mcp_tools_over_streamable_http(server, alice):
    with server.client(alice) as http:
        http.post(
            "/api/v1/remember",
            json={"content": "The staging database password rotates every Monday.", "path": "ops/secrets-policy"},
        )
    tools, results = anyio.run(
        mcp_call,
        server.url,
        alice,
        [
            ("remember", {"content": "MCP remembered: the on-call phone is in drawer 2.", "path": "ops/oncall"}),
            ("recall_context", {"query": "where is the on-call phone?", "max_items": 3}),
            ("recall", {"query": "staging database password"}),
            ("search_memory", {"query": "staging database password rotation"}),
            ("search_memory", {"query": "ancient roman aqueduct engineering"}),
            ("get_mcp_identity", {}),
            ("recall_context", {"query": "x", "max_items": 99}),
            ("reflect", {"dry_run": True, "actions_csv": "summary,expiry", "time_window_hours": 24, "limit": 500}),
            ("reflect", {"actions_csv": "purge"}),
        ],
    )
    assert set(tools) == {"remember", "recall", "recall_context", "search_memory", "reflect", "get_mcp_identity"}
    remembered, context, recalled, searched, nothing, identity, invalid, reflected, bad_action = results
    assert remembered.content[0].text.startswith("Remembered: ")
    text = context.content[0].text
    assert text.startswith("### XMemo Context\nItems: ") and "Location: ops/oncall" in text and "\nContext:\n" in text
    assert "ops/secrets-policy" in recalled.content[0].text
    assert "ops/secrets-policy" in searched.content[0].text
    assert nothing.content[0].text == "No matching XMemo memory was found."
    assert identity.content[0].text.splitlines() == [
        "Owner ID: alice",
        "Agent ID: agent-a",
        'Tenant: {"organization_id": "org-1", "workspace_id": "ws-1", "project_id": "memory-os"}',
        "Scopes: memory:read, memory:write",
    ]
    assert invalid.is_error and "422" in invalid.content[0].text
    assert reflected.content[0].text.splitlines()[:9] == [
        "### Memory Reflect Report",
        "Dry Run: true",
        "Actions: summarize, expire",
        "Summarized: 0",
        "Promoted: 0",
        "Expired: 0",
        "Decayed: 0",
        "Archived: 0",
        "Audit Records: 0",
    ]
    assert bad_action.is_error and "422" in bad_action.content[0].text
    with server.client(alice) as http:
        project = http.post("/v1/projects/memory-os/context", json={}).json()
    assert project["project_scope"]["owner_id"] == identity.content[0].text.splitlines()[0].removeprefix("Owner ID: ")


def test_mcp_requires_a_key(server):
    with server.client(None) as http:
        response = http.post("/mcp", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert response.status_code == 401


def test_mcp_read_only_key_cannot_remember(server):
    reader = server.key("reader", scopes=("memory:read",))
    _, (result,) = anyio.run(mcp_call, server.url, reader, [("remember", {"content": "x", "path": "p"})])
    assert result.is_error and "403" in result.content[0].text


def test_admin_key_file_is_private_and_the_request_log_keeps_no_secrets(server, alice):
    import json
    import stat

    assert stat.S_IMODE((server.data_dir / "admin.key").stat().st_mode) == 0o600
    secret_text = "the vault combination is 4711"
    with server.client(alice) as http:
        response = http.post(
            "/api/v1/remember", json={"content": secret_text, "path": "private"}, headers={"X-Request-ID": "log-check"}
        )
    audit_id = response.headers["x-xmemo-audit-id"]
    server.log.flush()
    lines = [json.loads(line) for line in server.log_path.read_text().splitlines() if line.startswith("{")]
    entry = next(line for line in lines if line.get("audit_id") == audit_id)
    assert entry["owner_id"] == "alice" and entry["route"] == "/api/v1/remember" and entry["status"] == 201
    assert entry["request_id"] == "log-check" and entry["key_id"]
    whole = server.log_path.read_text()
    assert secret_text not in whole and alice not in whole and server.admin_key not in whole


def test_reflect_and_audit_over_http(server):
    owner = server.key("reflector", team_ids=("team-r",))
    reader = server.key("reflector", scopes=("memory:read",))
    topic = [
        "The nightly backup job to S3 failed because the bucket policy denied PutObject.",
        "Fixed the S3 bucket policy so the nightly backup job can write its archives again.",
        "The nightly S3 backup failed again; the bucket policy still denied writes from the backup role.",
    ]
    with server.client(owner) as http:
        for text in topic:
            assert (
                http.post(
                    "/api/v1/timeline/events",
                    json={
                        "content": text,
                        "event_type": "ops.backup",
                        "occurred_at": "2026-11-30T01:00:00Z",
                        "session_id": "ops-1",
                    },
                ).status_code
                == 201
            )
        door = http.post("/api/v1/remember", json={"content": "Door code 1234, valid until yesterday.", "path": "door"})
        overdue = {"expected_version": 1, "expires_at": "2020-01-01T00:00:00Z"}  # remember refuses a past one
        assert http.patch(f"/api/v1/memories/{door.json()['id']}", json=overdue).status_code == 200
        body = {"since": "2026-01-01T00:00:00Z", "actions_csv": "summarize,expire"}
        dry = http.post("/api/v1/reflect", json={**body, "dry_run": True})
        assert dry.status_code == 200, dry.text
        assert dry.json()["counts"] == {"summarized": 1, "promoted": 0, "expired": 1, "decayed": 0, "archived": 0}
        real = http.post("/api/v1/reflect", json=body).json()
        same = ("actions", "summaries", "promotions", "lifecycle", "counts", "candidates")
        assert {k: real[k] for k in same} == {k: dry.json()[k] for k in same}  # the clock moved; the plan did not
        assert len(real["audit_record_ids"]) == 2
        summary_id = real["summaries"][0]["id"]
        assert http.get(f"/api/v1/memories/{summary_id}").json()["derived_from"] == real["summaries"][0]["derived_from"]
        audit = http.get("/api/v1/audit", params={"action": "summarize"}).json()["records"]
        assert [r["id"] for r in audit] == [i for i in real["audit_record_ids"] if i in {r["id"] for r in audit}]
        assert audit[0]["memory_ids"][0] == summary_id
        newest_first = http.get("/api/v1/audit", params={"limit": 2}).json()["records"]
        assert len(newest_first) == 2
        for bad in (
            {"actions_csv": "delete"},
            {"time_window_hours": 0},
            {"since": "last week"},
            {"until": "1700000000"},
            {"limit": "many"},
            {"surprise": 1},
        ):
            response = http.post("/api/v1/reflect", json=bad)
            assert response.status_code == 422, (bad, response.text)
            assert response.json()["error"]["code"] == "validation_error"
        assert http.post("/api/v1/reflect", json={"team_id": "team-other"}).status_code == 403
        assert http.post("/api/v1/reflect", json={"owner_filter": "alice", "dry_run": True}).status_code == 403
        assert http.post("/api/v1/reflect", json={"limit": 99999, "dry_run": True}).json()["filters"]["limit"] == 5000
        assert http.get("/api/v1/audit", params={"since": "nope"}).status_code == 422
        assert http.get("/api/v1/audit", params={"until": "0.5"}).status_code == 422
        assert http.get("/api/v1/audit", params={"limit": 0}).status_code == 422
    with server.client(reader) as http:
        assert http.post("/api/v1/reflect", json={"dry_run": True}).status_code == 200
        assert http.post("/api/v1/reflect", json={"dry_run": False}).status_code == 403
        assert len(http.get("/api/v1/audit").json()["records"]) == 3  # the same owner's: the edit and reflect's two
    with server.client(server.key("stranger")) as http:
        assert http.get("/api/v1/audit").json()["records"] == []
