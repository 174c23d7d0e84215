"""The write routes (remember, batch) on what a new user sends: an `expires_at` already past
is a 422 naming the field, and a semantic_key's memory moved to another path is a new version."""

from __future__ import annotations

from tests.support import in_process

PAST = "2020-01-01T00:00:00Z"
LATER = "2999-01-01T00:00:00Z"


def test_an_expires_at_already_past_is_refused_on_every_write_route(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        note = {"content": "The staging certificate is renewed by hand.", "path": "ops", "expires_at": PAST}
        refused = app.client.post("/api/v1/remember", headers=alice, json=note)
        assert refused.status_code == 422, refused.text
        assert refused.json()["error"]["code"] == "validation_error"
        assert refused.json()["error"]["message"].startswith("expires_at 2020-01-01T00:00:00.000000Z is already past")
        batch = app.client.post("/api/v1/memories/batch", headers=alice, json={"memories": [note]})
        assert batch.status_code == 422 and "expires_at" in batch.json()["error"]["message"], batch.text
        assert app.engine.store.count() == 0
        kept = app.client.post("/api/v1/remember", headers=alice, json={**note, "expires_at": LATER})
        assert kept.status_code == 201 and kept.json()["status"] == "active"


def test_the_same_key_and_content_under_another_path_is_a_new_version(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        note = {"content": "Payments retries back off 30 s.", "path": "inbox", "semantic_key": "payments:retry"}
        first = app.client.post("/api/v1/remember", headers=alice, json=note).json()
        same = app.client.post("/api/v1/remember", headers=alice, json=note).json()
        assert (same["outcome"], same["id"]) == ("unchanged", first["id"])
        moved = app.client.post("/api/v1/remember", headers=alice, json={**note, "path": "projects/payments"})
        assert moved.status_code == 201 and moved.json()["outcome"] == "superseded" and moved.json()["version"] == 2
        current = app.client.get(f"/api/v1/memories/{moved.json()['id']}", headers=alice).json()
        assert current["path"] == "projects/payments"
        old = app.client.get(f"/api/v1/memories/{first['id']}", headers=alice).json()
        assert (old["path"], old["status"]) == ("inbox", "superseded")
