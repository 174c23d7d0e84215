"""The management API (contract 3b) in-process on real SQLite and Qdrant Edge: list, history, edit,
archive, restore, forget, batch; each change audited, each route under the contract's tenancy."""

from __future__ import annotations

import json
import sqlite3

import pytest

from retrieval.domain import memory_digest
from tests.support import in_process, sign_in

ADMIN = ("memory:read", "memory:write", "memory:admin")


@pytest.fixture
def app(tmp_path):  # type: ignore[no-untyped-def]
    with in_process(tmp_path / "data") as running:
        yield running


def _remember(app, headers, content, path="notes/a", **extra):  # type: ignore[no-untyped-def]
    response = app.client.post("/api/v1/remember", headers=headers, json={"content": content, "path": path, **extra})
    assert response.status_code == 201, response.text
    return response.json()["id"]


def _engine(app):  # type: ignore[no-untyped-def]
    return app.client.app.state.xmemo.engine()


def test_list_filters_newest_first_and_pages_by_cursor(app):
    alice = app.headers("alice")
    ids = [_remember(app, alice, f"note number {n}", path=f"projects/x/{n}", metadata={"n": str(n)}) for n in range(5)]
    _remember(app, alice, "elsewhere entirely", path="other/y")
    _remember(app, app.headers("bob"), "bob's note number 1", path="projects/x/1")
    first = app.client.get("/api/v1/memories", headers=alice, params={"path_prefix": "projects/x", "limit": 2}).json()
    assert [m["id"] for m in first["memories"]] == [ids[4], ids[3]]
    second = app.client.get(
        "/api/v1/memories",
        headers=alice,
        params={"path_prefix": "projects/x", "limit": 2, "cursor": first["next_cursor"]},
    ).json()
    third = app.client.get(
        "/api/v1/memories",
        headers=alice,
        params={"path_prefix": "projects/x", "limit": 2, "cursor": second["next_cursor"]},
    ).json()
    assert [m["id"] for m in second["memories"] + third["memories"]] == [ids[2], ids[1], ids[0]]
    assert third["next_cursor"] is None
    by_meta = app.client.get("/api/v1/memories", headers=alice, params={"metadata": "n=3"}).json()["memories"]
    assert [m["id"] for m in by_meta] == [ids[3]]
    by_text = app.client.get("/api/v1/memories", headers=alice, params={"text": "ELSEWHERE"}).json()["memories"]
    assert [m["path"] for m in by_text] == ["other/y"]
    none_yet = app.client.get("/api/v1/memories", headers=alice, params={"since": "2999-01-01T00:00:00Z"}).json()
    assert none_yet["memories"] == []
    assert app.client.get("/api/v1/memories", headers=alice, params={"cursor": "nonsense"}).status_code == 422
    assert app.client.get("/api/v1/memories", headers=alice, params={"owner_id": "bob"}).status_code == 403
    admin = app.headers("root", scopes=ADMIN)
    bobs = app.client.get("/api/v1/memories", headers=admin, params={"owner_id": "bob"}).json()["memories"]
    assert [m["content"] for m in bobs] == ["bob's note number 1"]


def test_edit_makes_a_new_version_and_conflicts_on_a_stale_one(app):
    alice = app.headers("alice")
    memory_id = _remember(app, alice, "the deploy runs on Tuesdays")
    assert (
        app.client.patch(
            f"/api/v1/memories/{memory_id}", headers=alice, json={"expected_version": "1", "path": "x"}
        ).status_code
        == 422
    )
    edited = app.client.patch(
        f"/api/v1/memories/{memory_id}",
        headers=alice,
        json={"expected_version": 1.0, "content": "the deploy runs on Thursdays", "importance": 0.9},
    )
    assert edited.status_code == 200, edited.text
    assert (edited.json()["version"], edited.json()["content"], edited.json()["importance"]) == (
        2,
        "the deploy runs on Thursdays",
        0.9,
    )
    stale = app.client.patch(f"/api/v1/memories/{memory_id}", headers=alice, json={"expected_version": 1, "path": "x"})
    assert stale.status_code == 409 and stale.json()["error"]["code"] == "conflict"
    found = app.client.get("/v1/memories/search", headers=alice, params={"query": "Thursdays deploy"}).json()
    assert [r["id"] for r in found["results"]] == [memory_id]
    history = app.client.get(f"/api/v1/memories/{memory_id}/history", headers=alice).json()
    assert [(v["version"], v["action"]) for v in history["versions"]] == [(1, "created"), (2, "edit")]
    assert history["audit"][0]["before"][memory_id]["content"] == "the deploy runs on Tuesdays"
    assert app.client.get(f"/api/v1/memories/{memory_id}/history", headers=app.headers("bob")).status_code == 404
    assert (
        app.client.patch(
            f"/api/v1/memories/{memory_id}", headers=app.headers("bob"), json={"expected_version": 2, "path": "x"}
        ).status_code
        == 404
    )
    reader = app.headers("alice", scopes=("memory:read",))
    assert (
        app.client.patch(
            f"/api/v1/memories/{memory_id}", headers=reader, json={"expected_version": 2, "path": "x"}
        ).status_code
        == 403
    )


def test_archive_is_audited_and_restore_brings_it_back(app):
    alice = app.headers("alice")
    memory_id = _remember(app, alice, "a soon archived memory")
    archived = app.client.delete(f"/api/v1/memories/{memory_id}", headers=alice)
    assert archived.json() == {"id": memory_id, "status": "archived", "version": 2}
    restored = app.client.post(f"/api/v1/memories/{memory_id}/restore", headers=alice)
    assert restored.json() == {"id": memory_id, "status": "active", "version": 3}
    again = app.client.post(f"/api/v1/memories/{memory_id}/restore", headers=alice, params={"expected_version": 2})
    assert again.status_code == 409
    audit = app.client.get(f"/api/v1/memories/{memory_id}/history", headers=alice).json()["audit"]
    assert [(r["action"], r["after"][memory_id]["status"]) for r in audit] == [
        ("archive", "archived"),
        ("restore", "active"),
    ]


def test_forget_removes_the_content_from_every_store_and_leaves_a_tombstone(app):
    alice = app.headers("alice")
    secret = "my locker code is 4711 zebra"
    memory_id, later = (
        app.client.post(
            "/api/v1/timeline/events",
            headers=alice,
            json={
                "content": text,
                "event_type": "chat",
                "occurred_at": f"2026-11-29T10:0{n}:00Z",
                "session_id": "s1",
            },
        ).json()["id"]
        for n, text in enumerate([secret, "and the locker is on floor two"])
    )
    app.client.patch(
        f"/api/v1/memories/{memory_id}", headers=alice, json={"expected_version": 1, "content": secret + " indeed"}
    )
    engine = _engine(app)
    memory = engine.store.get(memory_id)
    digests = [memory_digest(memory, secret), memory_digest(memory, secret + " indeed")]
    assert secret in (engine.store.get(later).context or "")

    def found() -> list[str]:
        answer = app.client.get("/v1/memories/search", headers=alice, params={"query": "4711 zebra indeed"})
        return [r["id"] for r in answer.json()["results"]]

    assert memory_id in found()
    forgotten = app.client.delete(f"/api/v1/memories/{memory_id}", headers=alice, params={"hard": "true"})
    assert forgotten.status_code == 200 and forgotten.json()["forgotten"] == [memory_id]
    assert app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).status_code == 404
    assert found() == []
    assert memory_id not in set(engine.index.iter_ids())
    assert [m for m in engine.store.iterate() if secret in m.content or secret in (m.context or "")] == []
    with sqlite3.connect(engine.embedder.cache.path) as cache:
        left = cache.execute("SELECT count(*) FROM embeddings WHERE sha256 IN (?, ?)", digests).fetchone()[0]
    assert left == 0
    with sqlite3.connect(engine.settings.sql_path) as sql:
        audit_text = " ".join(json.dumps(row) for row in sql.execute("SELECT * FROM audit_log"))
    assert "4711 zebra" not in audit_text and "locker" not in audit_text  # a bare 4711 may be part of an id
    # Nor in the database's bytes: not in free pages (secure_delete), nor in the write-ahead log (checkpointed).
    for file in engine.settings.sql_path.parent.glob(engine.settings.sql_path.name + "*"):
        assert b"4711 zebra" not in file.read_bytes(), file.name
    records = app.client.get("/api/v1/audit", headers=alice).json()["records"]
    assert [r["action"] for r in records] == ["forget", "edit"]
    assert records[0]["memory_ids"] == [memory_id] and records[0]["after"] == {memory_id: None}
    assert sorted(records[0]["before"][memory_id]) == [
        "created_at",
        "id",
        "owner_id",
        "status",
        "team_id",
        "type",
        "updated_at",
        "version",
    ]


def test_an_admin_forgets_a_whole_owner(app):
    carol = app.headers("carol")
    for n in range(3):
        _remember(app, carol, f"carol fact {n}")
    kept = _remember(app, app.headers("dave"), "dave fact")
    assert app.client.delete("/api/v1/owners/carol/memories", headers=carol).status_code == 403
    done = app.client.delete("/api/v1/owners/carol/memories", headers=app.headers("root", scopes=ADMIN)).json()
    assert len(done["forgotten"]) == 3 and len(done["audit_record_ids"]) == 3
    engine = _engine(app)
    assert [m.id for m in engine.store.iterate()] == [kept]
    assert set(engine.index.iter_ids()) == {kept}


def test_batch_writes_all_or_nothing_and_is_idempotent(app):
    alice = app.headers("alice")
    items = [{"content": f"batch item {n}", "path": "batch/x"} for n in range(3)]
    first = app.client.post("/api/v1/memories/batch", headers=alice, json={"memories": items})
    assert first.status_code == 200, first.text
    assert [r["outcome"] for r in first.json()["results"]] == ["created"] * 3
    again = app.client.post("/api/v1/memories/batch", headers=alice, json={"memories": items})
    assert [r["outcome"] for r in again.json()["results"]] == ["unchanged"] * 3
    bad = app.client.post(
        "/api/v1/memories/batch",
        headers=alice,
        json={"memories": [{"content": "fine", "path": "p"}, {"content": "x", "path": "p", "team_id": "t"}]},
    )
    assert bad.status_code == 403
    listed = app.client.get("/api/v1/memories", headers=alice, params={"path_prefix": "batch/"}).json()["memories"]
    assert sorted(m["content"] for m in listed) == ["batch item 0", "batch item 1", "batch item 2"]
    assert app.client.post("/api/v1/memories/batch", headers=alice, json={"memories": items * 200}).status_code == 422
    trail = app.client.get(f"/api/v1/memories/{listed[0]['id']}/history", headers=alice).json()["audit"]
    assert [r["action"] for r in trail] == ["create"]


def test_forgetting_an_owner_stays_out_of_other_teams(app):
    """Review finding: an admin with no team membership could erase a team's memories by their writer."""
    erin = app.headers("erin", team_ids=("team-q",))
    personal = _remember(app, erin, "erin personal fact")
    in_team = app.client.post(
        "/api/v1/remember", headers=erin, json={"content": "erin team fact", "path": "notes", "team_id": "team-q"}
    ).json()["id"]
    done = app.client.delete("/api/v1/owners/erin/memories", headers=app.headers("root2", scopes=ADMIN)).json()
    assert done["forgotten"] == [personal]
    assert _engine(app).store.get(in_team) is not None


def test_a_superseding_remember_leaves_a_chain_of_versions_linked_both_ways_with_audit_records(tmp_path):
    """`remember` with semantic_key bug:PAY-2291 twice: each record's history holds its versions (the old
    one's move to superseded, the new one's creation) with an audit record naming the other, linked both
    ways; an edit of the superseded record is a 409 naming the active one; the console offers no edit
    there; the CLI's history JSON carries the links."""
    first, second = "PAY-2291: refunds over 10,000 EUR time out.", "PAY-2291: fixed in 4.2; refunds go through."
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice", scopes=("memory:read", "memory:write"))
        sent = {"path": "projects/payments/bugs", "semantic_key": "bug:PAY-2291"}
        old = app.client.post("/api/v1/remember", headers=alice, json={"content": first, **sent}).json()
        new = app.client.post("/api/v1/remember", headers=alice, json={"content": second, **sent}).json()
        assert new["outcome"] == "superseded" and new["version"] == 2
        was = app.client.get(f"/api/v1/memories/{old['id']}/history", headers=alice).json()
        now = app.client.get(f"/api/v1/memories/{new['id']}/history", headers=alice).json()
        assert [(v["version"], v["action"]) for v in was["versions"]] == [(1, "created"), (2, "supersede")]
        changed = was["versions"][1]["changes"]
        assert (changed["status"], changed["version"], sorted(changed)) == (
            "superseded",
            2,
            ["status", "updated_at", "version"],
        )
        assert [(v["version"], v["action"]) for v in now["versions"]] == [(2, "create")]
        assert [m["id"] for m in was["superseded_by"]] == [new["id"]] and was["supersedes"] == []
        assert [m["id"] for m in now["supersedes"]] == [old["id"]] and now["superseded_by"] == []
        assert [r["reason"] for r in was["audit"]] == [f"superseded by {new['id']} (semantic_key bug:PAY-2291)"]
        assert [r["reason"] for r in now["audit"]] == [f"supersedes {old['id']} (semantic_key bug:PAY-2291)"]
        listed = app.client.get("/api/v1/audit", headers=alice, params={"action": "supersede,create"}).json()
        assert sorted(r["action"] for r in listed["records"]) == ["create", "supersede"]
        edit = app.client.patch(
            f"/api/v1/memories/{old['id']}", headers=alice, json={"expected_version": 2, "content": "no"}
        )
        assert edit.status_code == 409 and f"superseded by {new['id']} (version 2, active)" in edit.text
        assert app.client.get(f"/api/v1/memories/{old['id']}", headers=alice).json()["content"] == first
        sign_in(app.client, app.keys.create("alice").key)
        page = app.client.get(f"/ui/memories/{old['id']}").text
        assert "Save as version" not in page and f'href="/ui/memories/{new["id"]}"' in page
        assert "Save as version 3" in app.client.get(f"/ui/memories/{new['id']}").text
