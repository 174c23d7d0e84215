"""The second attack pass's findings, each over a real server on loopback: a test that failed before its fix."""

from __future__ import annotations

import asyncio
import subprocess
import sys

import httpx
import pytest

from tests.support import RunningServer, csrf_of, mcp_call, sign_in

READ, WRITE, ADMIN = "memory:read", "memory:write", "memory:admin"


@pytest.fixture(scope="module")
def server(tmp_path_factory):  # type: ignore[no-untyped-def]
    running = RunningServer(tmp_path_factory.mktemp("hardening") / "data")
    yield running
    running.stop()


def _signed_in(server: RunningServer, key: str) -> httpx.Client:
    client = server.client(None)
    answer = sign_in(client, key)
    assert answer.status_code == 303, answer.text
    return client


def _key_id(key: str) -> str:
    return key.split("_")[1]


def test_a_teams_admin_manages_only_keys_inside_its_own_owner_and_teams(server):
    """Before: with a memory:admin key of team `evil`, /ui/keys listed every tenant's keys, issued a key for
    teams evil,core (which then read team core) and revoked the operator's key."""
    evil = server.key("mallory", team_ids=("evil",), scopes=(READ, WRITE, ADMIN))
    core = server.key("carol", team_ids=("core",))
    mine = server.key("mallory", team_ids=("evil",), scopes=(READ,))
    console = _signed_in(server, evil)
    page = console.get("/ui/keys")
    assert page.status_code == 200
    assert _key_id(mine) in page.text and _key_id(evil) in page.text
    assert _key_id(core) not in page.text and _key_id(server.admin_key) not in page.text
    before = len(server.keys.list())
    form = {"csrf": csrf_of(page.text), "owner": "mallory", "teams": "evil,core", "scopes": [READ]}
    assert console.post("/ui/keys", data=form).status_code == 403  # a team it does not hold
    assert console.post("/ui/keys", data={**form, "teams": "", "owner": "carol"}).status_code == 403  # another owner
    assert len(server.keys.list()) == before
    allowed = console.post("/ui/keys", data={**form, "teams": "evil", "owner": "carol"})
    assert allowed.status_code == 200  # a team key of its own team, whoever its owner
    assert len(server.keys.list()) == before + 1
    revoked = console.post(f"/ui/keys/{_key_id(server.admin_key)}/revoke", data={"csrf": csrf_of(page.text)})
    assert revoked.status_code == 404
    assert console.post(f"/ui/keys/{_key_id(core)}/revoke", data={"csrf": csrf_of(page.text)}).status_code == 404
    with server.client(server.admin_key) as operator, server.client(core) as carol:
        assert operator.get("/api/v1/memories").status_code == 200 and carol.get("/api/v1/memories").status_code == 200
    assert console.post(f"/ui/keys/{_key_id(mine)}/revoke", data={"csrf": csrf_of(page.text)}).status_code == 303
    operator_console = _signed_in(server, server.admin_key)
    everything = operator_console.get("/ui/keys").text
    assert all(_key_id(k) in everything for k in (evil, core, mine, server.admin_key))


def test_the_console_checks_the_body_limit_before_it_parses_a_form(server):
    """Before: POST /ui/login parsed a form ahead of the body-size check (a 900 MiB urlencoded body raised
    the peak memory by 620 MB) and wrote a multipart file part to a temp file."""
    client = server.client(None)
    form = client.get("/ui/login")
    big = "api_key=" + "x" * (2 * 1024 * 1024) + f"&csrf={csrf_of(form.text)}"  # over the 1 MiB default
    answer = client.post("/ui/login", content=big, headers={"content-type": "application/x-www-form-urlencoded"})
    assert answer.status_code == 413 and answer.json()["error"]["code"] == "payload_too_large"

    def chunks():  # no Content-Length: the limit counts what arrives
        for _ in range(40):
            yield b"x" * 65536

    streamed = client.post("/ui/login", content=chunks(), headers={"content-type": "application/x-www-form-urlencoded"})
    assert streamed.status_code == 413
    upload = client.post(
        "/ui/login", data={"csrf": csrf_of(form.text)}, files={"api_key": ("key.txt", b"xmk_a_b", "text/plain")}
    )
    assert upload.status_code == 400  # the sign-in form takes no file parts
    console = _signed_in(server, server.admin_key)
    page = console.get("/ui/keys")
    huge = {"csrf": csrf_of(page.text), "owner": "o" * (2 * 1024 * 1024)}
    assert console.post("/ui/keys", data=huge).status_code == 413


@pytest.fixture
def stored_server(tmp_path, database_url):  # type: ignore[no-untyped-def]
    running = RunningServer(tmp_path / "data", database_url=database_url)
    yield running
    running.stop()


def test_a_nul_character_is_a_422_naming_the_field_on_both_backends(stored_server):
    """Before: on PostgreSQL a U+0000 gave 500 on remember, batch, update_state, timeline, PATCH and the list
    filters; SQLite stored it."""
    with stored_server.client(stored_server.key("alice")) as http:
        made = http.post("/api/v1/remember", json={"content": "a clean note", "path": "notes"}).json()
        attempts = {
            "content": http.post("/api/v1/remember", json={"content": "bad\x00note", "path": "notes"}),
            "metadata": http.post(
                "/api/v1/remember", json={"content": "a note", "path": "notes", "metadata": {"k": "v\x00"}}
            ),
            "content ": http.post("/api/v1/memories/batch", json={"memories": [{"content": "x\x00", "path": "n"}]}),
            "content  ": http.patch(
                f"/api/v1/memories/{made['id']}", json={"expected_version": 1, "content": "edited\x00"}
            ),
            "text": http.get("/api/v1/memories", params={"text": "a\x00b"}),
            "metadata ": http.get("/api/v1/memories", params={"metadata": "k=v\x00"}),
            "query": http.post("/v1/recall/context", json={"query": "where\x00"}),
            "content   ": http.post("/api/v1/update_state", json={"state_key": "s", "content": "on\x00"}),
            "content    ": http.post(
                "/api/v1/timeline/events",
                json={"content": "done\x00", "event_type": "e", "occurred_at": "2026-11-01T00:00:00Z"},
            ),
        }
        for field, answer in attempts.items():
            assert answer.status_code == 422, (field, answer.status_code, answer.text)
            assert field.strip() in answer.text and "500" not in str(answer.status_code)
        listed = http.get("/api/v1/memories").json()["memories"]
        assert [m["content"] for m in listed] == ["a clean note"]


def test_console_pages_refuse_framing_and_show_only_known_notices(server):
    """Before: console pages carried no X-Frame-Options, CSP frame-ancestors or nosniff, and
    /ui/?notice=<any text> showed that text in the banner."""
    public = server.client(None).get("/ui/login")
    console = _signed_in(server, server.admin_key)
    for page in (public, console.get("/ui/"), console.get("/ui/keys")):
        assert page.headers["x-frame-options"] == "DENY"
        assert "frame-ancestors 'none'" in page.headers["content-security-policy"]
        assert page.headers["x-content-type-options"] == "nosniff"
    planted = console.get("/ui/", params={"notice": "Your key expired, paste it at evil.example"})
    assert planted.status_code == 200 and "evil.example" not in planted.text
    assert 'class="notice"' not in planted.text
    known = console.get("/ui/", params={"notice": "forgotten"})
    assert '<p class="notice" role="status">Forgotten.</p>' in known.text


def test_the_audit_log_filters_by_every_action_it_records(server):
    """Before: GET /api/v1/audit?action=forget (and edit, create, restore) was a 422, though the console
    offers them."""
    with server.client(server.key("dora")) as http:
        made = http.post("/api/v1/remember", json={"content": "a note to forget", "path": "notes"}).json()
        gone = http.delete(f"/api/v1/memories/{made['id']}", params={"expected_version": 1, "hard": "true"})
        assert gone.status_code == 200, gone.text
        forgotten = http.get("/api/v1/audit", params={"action": "forget"})
        assert forgotten.status_code == 200 and [r["action"] for r in forgotten.json()["records"]] == ["forget"]
        for action in ("edit", "create", "restore", "archive", "summarize", "expiry", "create,forget"):
            assert http.get("/api/v1/audit", params={"action": action}).status_code == 200, action
        assert http.get("/api/v1/audit", params={"action": "summarise"}).status_code == 422


def test_update_state_answers_as_remember_does_and_a_new_states_history_starts_at_its_version(server):
    """Before: update_state answered 200 where remember answered 201 for a new memory, and the console's
    Versions table showed "1 created" for a state written as version 2."""
    with server.client(server.key("erin")) as http:
        first = http.post("/api/v1/update_state", json={"state_key": "mood", "content": "calm"})
        same = http.post("/api/v1/update_state", json={"state_key": "mood", "content": "calm"})
        second = http.post("/api/v1/update_state", json={"state_key": "mood", "content": "busy"})
        assert (first.status_code, same.status_code, second.status_code) == (201, 200, 201)
        assert second.json()["version"] == 2
        history = http.get(f"/api/v1/memories/{second.json()['id']}/history").json()
        assert [(v["version"], v["action"]) for v in history["versions"]] == [(2, "create")]  # audited since issue 49
        assert [m["id"] for m in history["supersedes"]] == [first.json()["id"]]


def test_a_deeply_nested_report_file_is_shown_as_unreadable_not_a_500(server):
    """Before: /ui/status was a 500 for everyone when the newest report file was deeply nested JSON."""
    reports = server.data_dir / "eval"
    reports.mkdir(exist_ok=True)
    (reports / "report.json").write_text("[" * 200_000 + "]" * 200_000)
    try:
        page = _signed_in(server, server.admin_key).get("/ui/status")
        assert page.status_code == 200 and "nested too deeply" in page.text
    finally:
        (reports / "report.json").unlink()


def test_an_mcp_tool_refuses_an_argument_it_does_not_take(server):
    """Before: MCP tools took unknown arguments in silence (a misspelt `max_token` ran with the default)
    where REST answers 422."""
    key = server.key("fran")
    _, results = asyncio.run(
        mcp_call(
            server.url,
            key,
            [
                ("recall_context", {"query": "deploy window", "max_token": 30}),
                ("recall_context", {"query": "deploy window", "max_tokens": 30}),
            ],
        )
    )
    misspelt, right = results
    assert misspelt.is_error and "max_token" in misspelt.content[0].text
    assert not right.is_error
    with server.client(key) as http:
        rest = http.post("/v1/recall/context", json={"query": "deploy window", "max_token": 30})
    assert rest.status_code == 422


def test_an_mcp_boolean_is_a_json_boolean_as_over_rest(server):
    """Before: MCP took `dedupe: "yes"` (pydantic's lax bool) where REST answers 422; one rule for both."""
    key = server.key("flo")
    _, results = asyncio.run(
        mcp_call(
            server.url,
            key,
            [
                ("remember", {"content": "The deploy window is Tuesday.", "path": "ops", "dedupe": "yes"}),
                ("reflect", {"dry_run": 1}),
                ("remember", {"content": "The deploy window is Tuesday.", "path": "ops", "dedupe": True}),
            ],
        )
    )
    dedupe, dry_run, right = results
    assert dedupe.is_error and "dedupe must be true or false" in dedupe.content[0].text
    assert dry_run.is_error and "dry_run must be true or false" in dry_run.content[0].text
    assert not right.is_error and right.content[0].text.startswith("Remembered: ")
    with server.client(key) as http:
        rest = http.post("/api/v1/remember", json={"content": "x", "path": "ops", "dedupe": "yes"})
    assert rest.status_code == 422


def test_validation_messages_say_what_is_wrong_in_words(server):
    """Before: a blank content or a misspelt reflect action answered with the schema's regex, and a body
    sent without a JSON content type with ": Input should be a valid dictionary"."""
    with server.client(server.key("gus")) as http:
        blank = http.post("/api/v1/remember", json={"content": "   ", "path": "notes"}).json()["error"]["message"]
        typo = http.post("/api/v1/reflect", json={"actions_csv": "summarise"}).json()["error"]["message"]
        untyped = http.post(
            "/api/v1/remember", content=b'{"content": "x", "path": "p"}', headers={"content-type": "text/plain"}
        ).json()["error"]["message"]
    assert blank == "content must not be empty or blank"
    assert "'summarise' is not one" in typo and "summarize, promote, expire, decay, archive" in typo
    assert "Content-Type: application/json" in untyped
    assert not any("\\u" in m or "(?:" in m or "[^" in m for m in (blank, typo, untyped))


def test_the_cli_reports_bad_input_before_the_data_dir_lock_and_a_usage_error_exits_1(server):
    """Before: with the server running, a bad --occurred-at was reported as "data dir in use" (the lock was
    checked first), and a misspelled option exited 2, the code of an auth error."""

    def xmemo(*args: str) -> subprocess.CompletedProcess[str]:
        command = [sys.executable, "-c", "from service.cli import main; main()", "--data-dir", str(server.data_dir)]
        return subprocess.run([*command, *args], capture_output=True, text=True, timeout=120)

    bad_time = xmemo("remember", "--owner", "hana", "--path", "p", "--occurred-at", "next tuesday", "a note")
    assert bad_time.returncode == 1 and "occurred_at" in bad_time.stderr and "in use" not in bad_time.stderr
    bad_budget = xmemo("recall-context", "--owner", "hana", "--max-tokens", "0", "a question")
    assert bad_budget.returncode == 1 and "max_tokens" in bad_budget.stderr
    misspelt = xmemo("remember", "--ownr", "hana", "a note")
    assert misspelt.returncode == 1 and "No such option" in misspelt.stderr


def test_failed_sign_ins_are_throttled_per_address_logged_and_counted(tmp_path):
    """Before: failed console sign-ins were not throttled, logged or counted; and a client that sent
    another X-Forwarded-For each time was another address each time (uvicorn believes it from 127.0.0.1)."""
    running = RunningServer(tmp_path / "data")
    try:
        client = running.client(None)
        answers = []
        for attempt in range(12):
            client.headers["X-Forwarded-For"] = f"203.0.113.{attempt}"
            answers.append(sign_in(client, f"xmk_guess_{attempt}"))
        assert [a.status_code for a in answers[:10]] == [401] * 10
        assert answers[10].status_code == 429 and int(answers[10].headers["retry-after"]) >= 1
        form = client.get("/ui/login")
        right = client.post(
            "/ui/login", data={"api_key": running.admin_key, "csrf": csrf_of(form.text)}, follow_redirects=False
        )
        assert right.status_code == 429  # the right key too waits out the minute from this address
        metrics = client.get("/metrics").text
        assert "xmemo_console_failed_signins_total 13.0" in metrics
        log = running.log_path.read_text()
        assert "console sign-in refused from 127.0.0.1" in log and "xmk_guess_" not in log
    finally:
        running.stop()


def test_a_configured_proxy_is_believed_about_the_address_it_forwards(tmp_path):
    """XMEMO_TRUSTED_PROXIES names the proxies whose X-Forwarded-For is the client's address: each
    forwarded address has its own sign-in budget, and the log names it."""
    running = RunningServer(tmp_path / "data", extra_env={"XMEMO_TRUSTED_PROXIES": "127.0.0.1"})
    try:
        client = running.client(None)
        statuses = []
        for attempt in range(12):
            client.headers["X-Forwarded-For"] = f"203.0.113.{attempt}"
            statuses.append(sign_in(client, f"xmk_guess_{attempt}").status_code)
        assert statuses == [401] * 12
        assert "console sign-in refused from 203.0.113.11" in running.log_path.read_text()
    finally:
        running.stop()


def test_a_search_answer_is_bounded_and_says_what_it_cut(server):
    """Before: search with limit=100 over 64 KiB memories answered 6.4 MB (and 2 s of CPU)."""
    with server.client(server.key("ivan")) as http:
        topics = [
            "The staging cluster runs kafka on three brokers behind the east gateway.",
            "Our refund policy covers thirty days from delivery for every customer.",
            "The office plants need water every Tuesday morning before the standup.",
        ]
        made = [  # about 60 KiB each, each on its own topic, all holding the word zebra42
            http.post(
                "/api/v1/remember", json={"content": f"zebra42 {t} " * (60_000 // (len(t) + 9)), "path": "big"}
            ).json()["id"]
            for t in topics
        ]
        answer = http.get("/v1/memories/search", params={"query": "zebra42", "limit": 100})
        assert answer.status_code == 200
        results = answer.json()["results"]
        assert {r["id"] for r in results} == set(made) and len(answer.content) < 3 * 8192 + 5_000
        assert all(r["content_truncated"] and len(r["content"]) <= 8192 + 2 for r in results)
        whole = http.get(f"/api/v1/memories/{made[0]}").json()
        assert len(whole["content"]) > 50_000  # the whole text is a fetch by id away
