"""The memories list's meaning mode in-process: ranked like search, within visibility and every list filter."""

from __future__ import annotations

import re

import pytest

from tests.support import in_process, sign_in


@pytest.fixture
def app(tmp_path):  # type: ignore[no-untyped-def]
    with in_process(tmp_path / "data") as running:
        yield running


def _shown(page: str) -> list[str]:
    return re.findall(r'<td><a href="/ui/memories/([0-9a-f-]+)">', page)


def _remember(app, headers, content: str, path: str = "notes", **extra) -> str:  # type: ignore[no-untyped-def]
    answer = app.client.post("/api/v1/remember", headers=headers, json={"content": content, "path": path, **extra})
    assert answer.status_code == 201, answer.text
    return str(answer.json()["id"])


def test_meaning_mode_ranks_as_search_and_keeps_to_the_filters(app):
    key = app.keys.create("alice", team_ids=("ops",))
    alice = {"Authorization": f"Bearer {key.key}"}
    plain = _remember(app, alice, "rotate the database credentials every quarter", "ops/db")
    tagged = _remember(
        app,
        alice,
        "rotate the database credentials before the audit",
        "ops/db",
        metadata={"topic": "security", "reviewed": True},
    )
    other_path = _remember(app, alice, "rotate the database credentials on staging", "dev/db")
    team = _remember(app, alice, "rotate the database credentials of the shared replica", "ops/db", team_id="ops")
    _remember(app, alice, "lunch is at noon on fridays", "ops/misc")
    bobs = _remember(app, {"Authorization": f"Bearer {app.keys.create('bob').key}"}, "rotate the database credentials")
    sign_in(app.client, key.key)
    query = "database credentials rotation"

    assert _shown(app.client.get("/ui/", params={"text": query}).text) == []  # no memory contains these words
    page = app.client.get("/ui/", params={"text": query, "mode": "meaning"})
    assert page.status_code == 200 and "Ranked by meaning" in page.text
    shown = _shown(page.text)
    found = app.client.get("/v1/memories/search", headers=alice, params={"query": query, "min_score": 0.0, "limit": 25})
    assert shown == [r["id"] for r in found.json()["results"]]  # the same ranking as the agents' search
    assert set(shown) == {plain, tagged, other_path, team} and bobs not in page.text

    narrowed = [
        ({"path_prefix": "ops/"}, {plain, tagged, team}),
        ({"team_id": "ops"}, {team}),
        ({"metadata": "topic=security"}, {tagged}),
        ({"until": "2000-01-01"}, set()),
    ]
    for filters, expected in narrowed:
        page = app.client.get("/ui/", params={"text": query, "mode": "meaning", **filters})
        assert set(_shown(page.text)) == expected, filters
        assert _shown(page.text) == [i for i in shown if i in expected]  # still in ranking order

    app.client.delete(f"/api/v1/memories/{plain}", headers=alice)  # archived
    everything = _shown(app.client.get("/ui/", params={"text": query, "mode": "meaning", "status": ""}).text)
    active = _shown(app.client.get("/ui/", params={"text": query, "mode": "meaning", "status": "active"}).text)
    assert plain in everything and plain not in active and len(active) == 3
    # Active versions are the default view; "any" (an empty status) shows the rest.
    assert _shown(app.client.get("/ui/", params={"text": query, "mode": "meaning"}).text) == active


def test_a_metadata_filter_means_the_same_in_both_modes(app):
    key = app.keys.create("alice")
    alice = {"Authorization": f"Bearer {key.key}"}
    fields = {
        "topic": "security",
        "count": 5,
        "share": 0.5,
        "reviewed": True,
        "owner": {"team": "ops"},
        "tags": [1, "x"],
    }
    tagged = _remember(app, alice, "the database credentials were rotated", metadata=fields)
    sign_in(app.client, key.key)
    pairs = [
        "topic=security",
        "count=5",
        "share=0.5",
        "reviewed=1",
        "reviewed=true",
        'owner={"team":"ops"}',
        'owner={"team": "ops"}',
        'tags=[1,"x"]',
        "topic=Security",
        "missing=",
    ]
    for pair in pairs:
        words = _shown(app.client.get("/ui/", params={"metadata": pair}).text)
        page = app.client.get("/ui/", params={"metadata": pair, "text": "credentials", "mode": "meaning"}).text
        assert "Ranked by meaning" in page and _shown(page) == words, pair
    assert _shown(app.client.get("/ui/", params={"metadata": "count=5"}).text) == [tagged]


def test_meaning_mode_refuses_what_words_mode_refuses(app):
    sign_in(app.client, app.keys.create("alice").key)
    for params, status in (({"metadata": "no pair"}, 422), ({"team_id": "not-mine"}, 403), ({"status": "gone"}, 422)):
        words = app.client.get("/ui/", params={"text": "x", **params})
        meaning = app.client.get("/ui/", params={"text": "x", "mode": "meaning", **params})
        assert words.status_code == meaning.status_code == status, params
    assert app.client.get("/ui/", params={"text": "x", "mode": "vibes"}).status_code == 422
