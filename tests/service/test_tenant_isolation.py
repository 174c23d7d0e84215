"""Random multi-tenant stores and random principals: no read route or MCP tool returns what it may not see."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from retrieval.encoding import Embedder
from tests.support import InProcess, in_process

pytestmark = pytest.mark.slow
WORDS = ["alpha", "beta", "gamma", "delta", "kiwi", "mango"]
SEEN = {"results": 0}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, real_embedder: Embedder) -> Iterator[InProcess]:
    """The app in this process on the real model: the property is about what routes return, not the process."""
    with in_process(Path(tmp_path_factory.mktemp("tenants")) / "data", embedder=real_embedder) as app:
        yield app
    assert SEEN["results"] > 0, "the property was checked on real results, not only on empty ones"


def _as(server: InProcess, key: str) -> Any:
    """The in-process client, authenticated as `key` (a context manager, as an HTTP client would be)."""
    return _Authenticated(server, key)


class _Authenticated:
    def __init__(self, server: InProcess, key: str) -> None:
        self.client, self.headers = server.client, {"Authorization": f"Bearer {key}"}

    def __enter__(self) -> _Authenticated:
        return self

    def __exit__(self, *_: object) -> None:
        return None

    def get(self, path: str, **kwargs: Any) -> Any:
        return self.client.get(path, headers=self.headers, **kwargs)

    def post(self, path: str, **kwargs: Any) -> Any:
        return self.client.post(path, headers=self.headers, **kwargs)


memories = st.lists(
    st.tuples(
        st.integers(0, 2),
        st.sampled_from([None, 0, 1]),
        st.sampled_from(["personal", "work"]),
        st.sampled_from(["", "tenant:project:p1"]),
        st.lists(st.sampled_from(WORDS), min_size=2, max_size=4),
    ),
    min_size=1,
    max_size=6,
)
principals = st.lists(st.tuples(st.integers(0, 2), st.sets(st.integers(0, 1))), min_size=1, max_size=3)
IDS = re.compile(r"Reference: ([0-9a-f-]{36})")


@settings(
    max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow]
)
@given(memories, principals, st.lists(st.sampled_from(WORDS), min_size=1, max_size=2))
def test_no_read_path_leaks(server, memory_specs, principal_specs, query_words):
    world = uuid.uuid4().hex[:8]
    owner = [f"{world}-owner{i}" for i in range(3)]
    team = [f"{world}-team{i}" for i in range(2)]
    stored = []  # (id, owner index, team index or None)
    for author, team_index, bucket, scope, words in memory_specs:
        teams = (team[team_index],) if team_index is not None else ()
        key = server.key(owner[author], team_ids=teams)
        body = {
            "content": " ".join(words) + f" note {len(stored)}",
            "path": f"w/{world}",
            "bucket": bucket,
            "scope": scope,
        }
        if team_index is not None:
            body["team_id"] = team[team_index]
        with _as(server, key) as http:
            response = http.post("/api/v1/remember", json=body)
        assert response.status_code == 201, response.text
        stored.append((response.json()["id"], author, team_index))
    query = " ".join(query_words)
    for who, team_indexes in principal_specs:
        teams = tuple(team[i] for i in sorted(team_indexes))
        key = server.key(owner[who], team_ids=teams, scopes=("memory:read",))
        visible = {
            m for m, author, t in stored if (t is None and author == who) or (t is not None and team[t] in teams)
        }
        returned: set[str] = set()
        with _as(server, key) as http:
            pack = http.post("/v1/recall/context", json={"query": query, "max_items": 50})
            returned |= {item["id"] for item in pack.json()["items"]}
            for bucket in ("personal", "work"):
                found = http.get(
                    "/v1/memories/search", params={"query": query, "limit": 100, "bucket": bucket, "min_score": 0}
                )
                returned |= {item["id"] for item in found.json()["results"]}
            project = http.post("/v1/projects/p1/context", json={"max_items": 50, "durable_query": query}).json()
            returned |= {m["id"] for m in project["recent_memories"]} | {m["id"] for m in project["durable_context"]}
            for memory_id, _, _ in stored:
                status = http.get(f"/api/v1/memories/{memory_id}").status_code
                assert status == (200 if memory_id in visible else 404)
            for team_id in (None, *teams):  # reflect's dry run names the memories it would change
                report = http.post(
                    "/api/v1/reflect", json={"dry_run": True, "since": "2000-01-01T00:00:00Z", "team_id": team_id}
                ).json()
                for item in report["summaries"] + report["promotions"]:
                    returned |= set(item["derived_from"])
                returned |= {item["id"] for items in report["lifecycle"].values() for item in items}
        for tool, arguments in (
            ("recall_context", {"query": query, "max_items": 50}),
            ("recall", {"query": query, "limit": 20}),
            ("search_memory", {"query": query, "limit": 100, "min_score": 0}),
        ):
            failed, shown = server.mcp({"Authorization": f"Bearer {key}"}, tool, arguments)
            assert not failed, shown
            returned |= set(IDS.findall(shown))
        stored_ids = {m for m, _, _ in stored}
        leaked = (returned & stored_ids) - visible
        assert not leaked, f"principal {who} with teams {teams} saw {leaked}"
        SEEN["results"] += len(returned & visible)
