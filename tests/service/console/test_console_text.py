"""The console shows text where a person wants it: the sign-in page says where keys come from, an admin
looks at another owner's memories (a reader cannot), keys carry their project and teams, and links to
derived memories read as their first lines."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support import InProcess, csrf_of, in_process, sign_in


@pytest.fixture
def app(tmp_path: Path) -> Iterator[InProcess]:
    with in_process(tmp_path / "data") as running:
        yield running


def _remember(app, key: str, content: str, path: str = "notes") -> str:  # type: ignore[no-untyped-def]
    response = app.client.post(
        "/api/v1/remember", headers={"Authorization": f"Bearer {key}"}, json={"content": content, "path": path}
    )
    assert response.status_code == 201, response.text
    return str(response.json()["id"])


def test_the_sign_in_page_says_where_keys_come_from(app) -> None:  # type: ignore[no-untyped-def]
    page = app.client.get("/ui/login").text
    assert "admin.key" in page and "xmemo keys create" in page


def test_an_admin_switches_owner_and_a_reader_cannot(app) -> None:  # type: ignore[no-untyped-def]
    bob = app.keys.create("bob").key
    secret = _remember(app, bob, "Bob's locker code is 4471.")
    admin = app.keys.create("ops", scopes=("memory:read", "memory:write", "memory:admin")).key
    assert sign_in(app.client, admin).status_code == 303
    own = app.client.get("/ui/")
    assert 'name="owner_id"' in own.text and secret not in own.text
    switched = app.client.get("/ui/", params={"owner_id": "bob"})
    assert switched.status_code == 200 and secret in switched.text and "locker code" in switched.text
    by_meaning = app.client.get("/ui/", params={"owner_id": "bob", "text": "where is the locker", "mode": "meaning"})
    assert secret in by_meaning.text
    app.client.post("/ui/logout", data={"csrf": csrf_of(own.text)})
    reader = app.keys.create("carol").key
    assert sign_in(app.client, reader).status_code == 303
    page = app.client.get("/ui/")
    assert 'name="owner_id"' not in page.text
    refused = app.client.get("/ui/", params={"owner_id": "bob"})
    assert refused.status_code == 403 and secret not in refused.text


def test_keys_carry_project_and_teams(app) -> None:  # type: ignore[no-untyped-def]
    admin = app.keys.create("ops", scopes=("memory:read", "memory:write", "memory:admin")).key
    assert sign_in(app.client, admin).status_code == 303
    page = app.client.get("/ui/keys")
    assert 'name="project"' in page.text
    made = app.client.post(
        "/ui/keys",
        data={"csrf": csrf_of(page.text), "owner": "dana", "agent": "bot", "teams": "core", "project": "memory-os",
              "scopes": ["memory:read"]},
    )  # fmt: skip
    assert made.status_code == 200
    row = next(k for k in app.keys.list() if k["owner_id"] == "dana")
    assert row["project_id"] == "memory-os" and row["team_ids"] == ["core"]
    assert "<td>memory-os</td><td>core</td>" in made.text


def test_the_memories_list_sorts_by_when_it_happened_or_was_written(app) -> None:  # type: ignore[no-untyped-def]
    key = app.keys.create("eve").key
    headers = {"Authorization": f"Bearer {key}"}
    written = []
    for day in ("2026-03-01", "2026-01-01", "2026-02-01"):  # written in this order, happened in another
        body = {"content": f"Something happened on {day}.", "path": "diary", "occurred_at": f"{day}T09:00:00Z"}
        written.append(app.client.post("/api/v1/remember", headers=headers, json=body).json()["id"])
    assert sign_in(app.client, key).status_code == 303

    def shown(**params: str) -> list[str]:
        page = app.client.get("/ui/", params=params)
        assert page.status_code == 200, page.text
        return [i for i in re.findall(r'href="/ui/memories/([0-9a-f-]{36})"', page.text) if i in written]

    assert shown() == written[::-1]  # newest written first
    by_occurrence = shown(order="occurred_at")
    assert by_occurrence == [written[0], written[2], written[1]]  # March, February, January
    page = app.client.get("/ui/")
    assert "order=occurred_at" in page.text and 'aria-sort="descending"' in page.text
    assert app.client.get("/ui/", params={"order": "importance"}).status_code == 422
    # The API pages by the same order: two pages of one, then the last.
    first = app.client.get("/api/v1/memories", headers=headers, params={"order": "occurred_at", "limit": 2}).json()
    rest = app.client.get(
        "/api/v1/memories", headers=headers, params={"order": "occurred_at", "limit": 2, "cursor": first["next_cursor"]}
    ).json()
    assert [m["id"] for m in first["memories"] + rest["memories"]] == by_occurrence and rest["next_cursor"] is None


def test_a_key_takes_the_label_rules_the_api_applies(app) -> None:  # type: ignore[no-untyped-def]
    admin = app.keys.create("ops", scopes=("memory:read", "memory:write", "memory:admin")).key
    assert sign_in(app.client, admin).status_code == 303
    csrf = csrf_of(app.client.get("/ui/keys").text)
    for field, value, message in [
        ("owner", "\x1b[31mred", "owner must be at most 512 printable characters"),
        ("owner", "o" * 5000, "owner must be at most 512 printable characters"),
        ("teams", "t" * 600, "team must be at most 512 printable characters"),
        ("project", "p" * 200_000, "project must be at most 512 printable characters"),
    ]:
        form = {"csrf": csrf, "owner": "dana", "scopes": ["memory:read"], field: value}
        refused = app.client.post("/ui/keys", data=form)
        assert refused.status_code == 422 and message in refused.text, (field, refused.status_code)
    assert [k["owner_id"] for k in app.keys.list()] == ["ops"]
    longest = "o" * 512  # the longest owner a key may name is one the API can forget
    made = app.client.post("/ui/keys", data={"csrf": csrf, "owner": longest, "scopes": ["memory:read", "memory:write"]})
    assert made.status_code == 200
    key = next(k for k in app.keys.list() if k["owner_id"] == longest)
    assert key["owner_id"] == longest
    forgot = app.client.delete(f"/api/v1/owners/{longest}/memories", headers={"Authorization": f"Bearer {admin}"})
    assert forgot.status_code == 200, forgot.text
