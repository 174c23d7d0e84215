"""reflect applies exactly the reviewed plan: a dry run's plan_digest, sent back as expected_plan,
is checked against a new plan and a difference is a 409 that writes nothing (REST, in-process)."""

from __future__ import annotations

import html
import re

import pytest

from tests.support import in_process, sign_in

EXPIRED = "2020-01-01T00:00:00Z"


@pytest.fixture
def app(tmp_path):  # type: ignore[no-untyped-def]
    with in_process(tmp_path / "data") as running:
        yield running


def _overdue(app, headers, content: str) -> str:  # type: ignore[no-untyped-def]
    """A memory whose expires_at has passed (set by an edit, as remember refuses a past expiry)."""
    made = app.client.post("/api/v1/remember", headers=headers, json={"content": content, "path": "todo"}).json()
    edited = app.client.patch(
        f"/api/v1/memories/{made['id']}", headers=headers, json={"expected_version": 1, "expires_at": EXPIRED}
    )
    assert edited.status_code == 200, edited.text
    return str(made["id"])


def _reflect(app, headers, **body):  # type: ignore[no-untyped-def]
    return app.client.post("/api/v1/reflect", headers=headers, json={"actions_csv": "expire", **body})


def _audit_count(app, headers) -> int:  # type: ignore[no-untyped-def]
    return len(app.client.get("/api/v1/audit", headers=headers).json()["records"])


def test_a_dry_runs_digest_is_stable_and_names_the_changes(app):
    alice = app.headers("alice")
    first = _overdue(app, alice, "call the plumber")
    dry = _reflect(app, alice, dry_run=True).json()
    assert re.fullmatch(r"[0-9a-f]{64}", dry["plan_digest"]) and dry["counts"]["expired"] == 1
    again = _reflect(app, alice, dry_run=True).json()
    assert again["plan_digest"] == dry["plan_digest"] and again["now"] != dry["now"]  # the clock moved, the plan not
    _overdue(app, alice, "renew the passport")
    assert _reflect(app, alice, dry_run=True).json()["plan_digest"] != dry["plan_digest"]  # one more change
    summarize = _reflect(app, alice, dry_run=True, actions_csv="summarize").json()
    assert summarize["counts"]["expired"] == 0 and summarize["plan_digest"] != dry["plan_digest"]
    assert app.client.get(f"/api/v1/memories/{first}", headers=alice).json()["status"] == "active"


def test_applying_a_plan_whose_memory_changed_since_review_is_a_409_that_writes_nothing(app):
    alice = app.headers("alice")
    memory_id = _overdue(app, alice, "call the plumber")
    reviewed = _reflect(app, alice, dry_run=True).json()["plan_digest"]
    edited = app.client.patch(
        f"/api/v1/memories/{memory_id}",
        headers=alice,
        json={"expected_version": 2, "content": "call the plumber about the boiler"},
    )
    assert edited.status_code == 200
    audited = _audit_count(app, alice)

    refused = _reflect(app, alice, expected_plan=reviewed)
    assert refused.status_code == 409
    error = refused.json()["error"]
    assert error["code"] == "conflict" and "changed since the plan was reviewed" in error["message"]
    memory = app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).json()
    assert (memory["status"], memory["version"]) == ("active", 3)
    assert _audit_count(app, alice) == audited

    fresh = _reflect(app, alice, dry_run=True).json()["plan_digest"]
    applied = _reflect(app, alice, expected_plan=fresh)
    assert applied.status_code == 200, applied.text
    assert applied.json()["plan_digest"] == fresh and len(applied.json()["audit_record_ids"]) == 1
    assert app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).json()["status"] == "expired"


def test_a_new_change_since_review_is_a_409_too_and_without_expected_plan_reflect_runs_as_before(app):
    alice = app.headers("alice")
    first = _overdue(app, alice, "call the plumber")
    reviewed = _reflect(app, alice, dry_run=True).json()["plan_digest"]
    second = _overdue(app, alice, "renew the passport")
    assert _reflect(app, alice, expected_plan=reviewed).status_code == 409
    statuses = {app.client.get(f"/api/v1/memories/{i}", headers=alice).json()["status"] for i in (first, second)}
    assert statuses == {"active"}
    plain = _reflect(app, alice)
    assert plain.status_code == 200 and plain.json()["counts"]["expired"] == 2


@pytest.mark.parametrize("bad", ["abc", "A" * 64, "0" * 63, 7])
def test_a_malformed_expected_plan_is_a_422(app, bad):
    alice = app.headers("alice")
    answer = _reflect(app, alice, expected_plan=bad)
    assert answer.status_code == 422 and "expected_plan" in answer.json()["error"]["message"]


def test_a_read_only_key_may_check_a_dry_run_against_its_digest(app):
    alice = app.headers("alice")
    _overdue(app, alice, "call the plumber")
    reader = app.headers("alice", scopes=("memory:read",))
    digest = _reflect(app, reader, dry_run=True).json()["plan_digest"]
    assert _reflect(app, reader, dry_run=True, expected_plan=digest).status_code == 200
    assert _reflect(app, reader, dry_run=True, expected_plan="0" * 64).status_code == 409
    assert _reflect(app, reader, expected_plan=digest).status_code == 403  # applying needs memory:write


def test_excluding_a_proposal_over_rest_applies_the_others_and_a_bad_id_is_a_422(app):
    alice = app.headers("alice")
    kept, left = _overdue(app, alice, "call the plumber"), _overdue(app, alice, "renew the passport")
    dry, audited = _reflect(app, alice, dry_run=True).json(), _audit_count(app, alice)
    by_memory = {p["memory_ids"][0]: p["proposal_id"] for p in dry["preview"]}
    assert {e["proposal_id"] for e in dry["lifecycle"]["expired"]} == set(by_memory.values())
    bad = _reflect(app, alice, expected_plan=dry["plan_digest"], exclude=["expire-XYZ"])
    assert bad.status_code == 422 and _audit_count(app, alice) == audited
    done = _reflect(app, alice, expected_plan=dry["plan_digest"], exclude=[by_memory[left]]).json()
    assert done["excluded"] == [by_memory[left]] and [p["proposal_id"] for p in done["preview"]] == [by_memory[kept]]
    assert app.client.get(f"/api/v1/memories/{kept}", headers=alice).json()["status"] == "expired"
    assert app.client.get(f"/api/v1/memories/{left}", headers=alice).json()["status"] == "active"
    stale = _reflect(app, alice, expected_plan=dry["plan_digest"], exclude=[by_memory[left]])
    # the expiry applied and the reviewer's "no" to the other; then the plan moved on: nothing written
    assert stale.status_code == 409 and _audit_count(app, alice) == audited + 2


def test_the_console_preview_shows_whole_texts_members_with_dates_paths_and_takes_a_window(app):
    """Issue 49 item 4: each proposal's whole text, its path, and its members with when they occurred;
    `since` and `until` taken and kept by the dry-run form."""
    notes = [
        ("The staging database moves to PostgreSQL 16 on Friday night.", "2026-11-20T09:00:00Z"),
        ("PostgreSQL 16 migration for staging is scheduled for Friday night.", "2026-11-21T09:00:00Z"),
        ("Friday night: staging's database is upgraded to PostgreSQL 16.", "2026-11-22T09:00:00Z"),
    ]
    alice = app.headers("alice")
    for n, (text, when) in enumerate(notes):
        body = {
            "content": text,
            "path": "ops/db",
            "occurred_at": when,
            "session_id": f"s{n}",
            "memory_type": "episodic",
        }
        assert app.client.post("/api/v1/remember", headers=alice, json=body).status_code == 201
    sign_in(app.client, app.keys.create("alice").key)
    window = {"run": "dry", "actions": "summarize", "since": "2026-11-19T00:00:00Z", "until": "2026-11-23T00:00:00Z"}
    page = app.client.get("/ui/reflect", params=window).text
    dry = _reflect(
        app, alice, dry_run=True, actions_csv="summarize", since=window["since"], until=window["until"]
    ).json()
    (proposal,) = dry["preview"]
    assert proposal["path"] == "ops/db"
    assert sorted(m["occurred_at"][:10] for m in proposal["members"]) == ["2026-11-20", "2026-11-21", "2026-11-22"]
    assert html.escape(proposal["content"].splitlines()[0]) in page and 'at <span class="mono">ops/db</span>' in page
    for member in proposal["members"]:
        assert f'{member["occurred_at"][:16].replace("T", " ")}</span> <a href="/ui/memories/{member["id"]}">' in page
    assert 'value="2026-11-19T00:00:00Z"' in page and 'value="2026-11-23T00:00:00Z"' in page
    nothing = app.client.get("/ui/reflect", params={**window, "until": "2026-11-19T12:00:00Z"}).text
    assert "Nothing to do in this window." in nothing
