"""The HTTP edge under odd requests: made-up methods, two keys, chunked bodies, long request ids, rate limits."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Iterator
from typing import Any

from tests.support import FakeEmbedder, in_process

RECALL = {"query": "where is the config"}


def _series(text: str) -> list[str]:
    return [line for line in text.splitlines() if line.startswith("xmemo_http_requests_total{")]


def test_made_up_methods_add_no_metric_series(tmp_path):
    with in_process(tmp_path / "data") as app:
        client, _, _key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        client.get("/healthz")
        for i in range(300):
            client.request(f"BREW{i}", "/healthz")
            client.get(f"/nowhere/{i}")
        text = client.get("/metrics").text
    methods = {line.split('method="')[1].split('"')[0] for line in _series(text)}
    routes = {line.split('route="')[1].split('"')[0] for line in _series(text)}
    assert "BREW0" not in text and "/nowhere/0" not in text
    assert methods == {"GET", "other"}
    assert routes == {"/readyz", "/healthz", "unmatched"}  # /metrics counts itself after it renders


def test_two_authorization_headers_are_refused(tmp_path):
    with in_process(tmp_path / "data") as app:
        client, _, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        headers = [("Authorization", "Bearer xmk_wrong_wrong"), ("Authorization", f"Bearer {key}")]
        response = client.post("/v1/recall/context", json=RECALL, headers=headers)
        assert response.status_code == 401
        assert response.json()["error"]["code"] == "unauthorized"
        assert (
            client.post("/v1/recall/context", json=RECALL, headers={"Authorization": f"Bearer {key}"}).status_code
            == 200
        )


def test_chunked_body_over_the_limit_is_413(tmp_path):
    def chunks() -> Iterator[bytes]:
        yield b'{"content": "'
        for _ in range(80):
            yield b"x" * 16_384
        yield b'", "path": "notes"}'

    with in_process(tmp_path / "data", max_body_bytes=1_048_576) as app:
        client, engine, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        headers = {"Authorization": f"Bearer {key}", "Content-Type": "application/json"}
        response = client.post("/api/v1/remember", content=chunks(), headers=headers)
        assert "content-length" not in response.request.headers
        assert response.status_code == 413
        assert response.json() == {
            "error": {"code": "payload_too_large", "message": "request body exceeds 1048576 bytes"}
        }
        assert engine.store.count() == 0


def test_long_request_id_is_capped_and_a_bad_one_replaced(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="xmemo.requests")
    with in_process(tmp_path / "data") as app:
        client, _, _key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        long = client.get("/healthz", headers={"X-Request-ID": "a" * 60_000})
        odd = client.get("/healthz", headers={"X-Request-ID": "evil\x01id"})
        plain = client.get("/healthz", headers={"X-Request-ID": "req-42"})
    assert long.headers["x-request-id"] == "a" * 128
    assert odd.headers["x-request-id"] != "evil\x01id" and len(odd.headers["x-request-id"]) == 36
    assert plain.headers["x-request-id"] == "req-42"
    logged = [json.loads(r.getMessage())["request_id"] for r in caplog.records if r.name == "xmemo.requests"]
    assert max(len(r) for r in logged if r) == 128


def test_429_carries_retry_after(tmp_path):
    with in_process(tmp_path / "data", rate_limit_per_minute=2) as app:
        client, _, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        headers = {"Authorization": f"Bearer {key}"}
        statuses = [client.post("/v1/recall/context", json=RECALL, headers=headers) for _ in range(3)]
        other = client.post("/v1/recall/context", json=RECALL, headers=app.headers("bob"))
    assert [r.status_code for r in statuses] == [200, 200, 429]
    assert statuses[2].json()["error"]["code"] == "rate_limited"
    assert 1 <= int(statuses[2].headers["retry-after"]) <= 60
    assert other.status_code == 200  # the limit is the key's, not the server's


def test_the_background_pass_maintains_memories_by_itself(tmp_path):
    """Off by default; with an interval and apply on, the service expires what is due with no request."""
    with in_process(
        tmp_path / "data", reflect_interval_seconds=0.2, reflect_apply=True, reflect_actions="expire"
    ) as app:
        headers = app.headers("sleeper")
        made = app.client.post("/api/v1/remember", headers=headers, json={"content": "Voucher.", "path": "misc"}).json()
        overdue = {"expected_version": 1, "expires_at": "2020-01-01T00:00:00Z"}  # remember refuses a past one
        assert app.client.patch(f"/api/v1/memories/{made['id']}", headers=headers, json=overdue).status_code == 200
        for _ in range(600):  # a bounded wait for the pass, not a timing assertion
            if app.client.get(f"/api/v1/memories/{made['id']}", headers=headers).json()["status"] == "expired":
                break
            time.sleep(0.05)
        (record,) = app.client.get("/api/v1/audit", headers=headers, params={"action": "expire"}).json()["records"]
    assert record["action"] == "expire" and record["actor"] == "sleeper/background-reflect"


def test_metrics_token_when_configured(tmp_path):
    token = "scrape-token-0123456789"
    with in_process(tmp_path / "data", metrics_token=token) as app:
        client, _, key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        assert client.get("/metrics").status_code == 401
        assert client.get("/metrics", headers={"Authorization": f"Bearer {key}"}).status_code == 401
        assert client.get("/metrics", headers={"Authorization": f"Bearer {token}"}).status_code == 200


class CountingEmbedder(FakeEmbedder):
    """The fake model, counting the query embeddings it is asked for."""

    def __init__(self) -> None:
        self.queries = 0

    def embed_query(self, text: str):  # type: ignore[no-untyped-def]
        self.queries += 1
        return super().embed_query(text)


def test_ready_only_after_a_real_query_warmed_the_model(tmp_path, caplog):
    caplog.set_level(logging.INFO, logger="xmemo.service")
    embedder = CountingEmbedder()
    with in_process(tmp_path / "data", embedder=embedder, port=8555) as app:
        client, _, _key = app.client, app.engine, app.key("alice", agent_id="agent-a")
        assert client.get("/readyz").status_code == 200
        assert embedder.queries == 1, "the model embedded a query before /readyz said ready"
    events = [json.loads(r.getMessage()) for r in caplog.records if r.name == "xmemo.service"]
    assert {"event": "listening", "url": "http://127.0.0.1:8555"} in events
    assert any(e.get("event") == "ready" for e in events)


def test_the_icon_needs_no_key(tmp_path):
    with in_process(tmp_path / "data") as app:
        icon = app.client.get("/favicon.ico")
        signed_out = app.client.get("/ui/login")
    assert icon.status_code == 200 and icon.headers["content-type"] == "image/svg+xml"
    assert icon.text.startswith("<svg") and '<link rel="icon" href="/favicon.ico"' in signed_out.text


def test_probes_are_logged_at_debug_and_requests_at_info(tmp_path, caplog):
    caplog.set_level(logging.DEBUG, logger="xmemo.requests")
    with in_process(tmp_path / "data") as app:
        caplog.clear()
        app.client.get("/healthz")
        app.client.get("/readyz")
        app.client.post("/v1/recall/context", json=RECALL, headers=app.headers("alice"))
    logged = [(r.levelname, json.loads(r.getMessage())["route"]) for r in caplog.records if r.name == "xmemo.requests"]
    assert logged == [("DEBUG", "/healthz"), ("DEBUG", "/readyz"), ("INFO", "/v1/recall/context")]


def test_the_owner_header_is_percent_encoded_utf8_one_of_it(tmp_path):
    token = "local-secret-for-the-cli"
    with in_process(tmp_path / "data", local_token=token) as app:

        def write(*owners: bytes) -> Any:
            headers = [(b"Authorization", f"Bearer {token}".encode()), *((b"X-XMemo-Owner", o) for o in owners)]
            return app.client.post("/api/v1/remember", headers=headers, json={"content": "a note", "path": "p"})

        assert write(b"b%C3%B8b").status_code == 201
        assert write(b"plain-ascii").status_code == 201
        raw = write("bøb".encode())
        assert raw.status_code == 422 and raw.json()["error"]["message"].startswith("X-XMemo-Owner must be ASCII")
        latin = write("bøb".encode("latin-1"))
        assert latin.status_code == 422 and latin.json()["error"]["code"] == "validation_error"
        assert "not UTF-8" in write(b"b%F8b").json()["error"]["message"]
        assert "two hex digits" in write(b"b%zzb").json()["error"]["message"]
        assert "X-XMemo-Owner must be" in write(b"%1Bescape").json()["error"]["message"]  # ESC, a control
        two = write(b"alice", b"mallory")
        assert two.status_code == 401 and two.json()["error"]["message"] == "more than one X-XMemo-Owner header"
        assert write().status_code == 401
        owners = sorted(m.owner_id for m in app.engine.store.iterate())
    assert owners == ["bøb", "plain-ascii"]
