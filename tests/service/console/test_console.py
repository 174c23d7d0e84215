"""The console and the offline docs in-process: sign-in, CSRF, tenancy as 404 pages, no key in any page."""

from __future__ import annotations

import re

import pytest

from tests.support import csrf_of, in_process, sign_in

ADMIN = ("memory:read", "memory:write", "memory:admin")


@pytest.fixture
def app(tmp_path):  # type: ignore[no-untyped-def]
    with in_process(tmp_path / "data") as running:
        yield running


def test_docs_and_redoc_load_only_from_this_server(app):
    for path in ("/docs", "/redoc"):
        page = app.client.get(path)
        assert page.status_code == 200
        sources = re.findall(r'(?:src|href)="([^"]+)"', page.text)
        assert sources and all(s.startswith("/") for s in sources), sources
        for source in sources:
            assert app.client.get(source).status_code == 200, source


def test_sign_in_sets_a_strict_httponly_cookie_and_never_shows_the_key(app):
    key = app.keys.create("alice", scopes=ADMIN).key
    assert app.client.get("/ui/", follow_redirects=False).headers["location"] == "/ui/login"
    refused = sign_in(app.client, "xmk_nope_nope")
    assert refused.status_code == 401 and "not valid" in refused.text
    signed = sign_in(app.client, key)
    assert signed.status_code == 303 and signed.headers["location"] == "/ui/"
    cookie = signed.headers["set-cookie"]
    assert "HttpOnly" in cookie and "SameSite=strict" in cookie and key not in cookie
    for path in ("/ui/", "/ui/audit", "/ui/recall", "/ui/reflect", "/ui/keys", "/ui/status"):
        page = app.client.get(path)
        assert page.status_code == 200, path
        assert key not in page.text and key.split("_", 2)[2] not in page.text
    out = app.client.post("/ui/logout", data={"csrf": csrf_of(app.client.get("/ui/").text)}, follow_redirects=False)
    assert out.status_code == 303
    assert app.client.get("/ui/", follow_redirects=False).status_code == 303


def test_a_cookie_without_its_csrf_token_changes_nothing(app):
    alice = app.headers("alice")
    memory_id = app.client.post("/api/v1/remember", headers=alice, json={"content": "keep me", "path": "p"}).json()[
        "id"
    ]
    sign_in(app.client, app.keys.create("alice").key)
    for action, data in (
        ("archive", {}),
        ("forget", {"confirm": "yes"}),
        ("edit", {"content": "changed", "path": "p"}),
    ):
        for token in (None, "wrong"):
            sent = {**data, **({"csrf": token} if token else {})}
            answer = app.client.post(f"/ui/memories/{memory_id}/{action}", data=sent, follow_redirects=False)
            assert answer.status_code == 403, (action, token)
    memory = app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).json()
    assert (memory["content"], memory["status"], memory["version"]) == ("keep me", "active", 1)
    token = csrf_of(app.client.get(f"/ui/memories/{memory_id}").text)
    done = app.client.post(f"/ui/memories/{memory_id}/archive", data={"csrf": token}, follow_redirects=False)
    assert done.status_code == 303
    assert app.client.get(f"/api/v1/memories/{memory_id}", headers=alice).json()["status"] == "archived"


def test_another_owners_memory_is_a_404_page_and_scopes_shape_the_pages(app):
    bobs = app.client.post(
        "/api/v1/remember", headers=app.headers("bob"), json={"content": "bob only", "path": "p"}
    ).json()
    sign_in(app.client, app.keys.create("alice", scopes=("memory:read",)).key)
    page = app.client.get(f"/ui/memories/{bobs['id']}")
    assert page.status_code == 404 and "Not found" in page.text and "bob only" not in page.text
    assert app.client.get("/ui/keys").status_code == 403
    listing = app.client.get("/ui/").text
    assert 'href="/ui/keys"' not in listing and "bob only" not in listing
