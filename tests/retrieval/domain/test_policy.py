"""One authorization policy under every use case: the matrix of scope x use case x
team answers alike over REST and MCP, and the command line's operator may name any team."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from retrieval import PermissionDeniedError, Principal, RememberRequest, remember
from tests.support import FakeEmbedder, InProcess, in_process, pack_for, sign_in

SCOPES = {
    "read": ("memory:read",),
    "write": ("memory:write",),
    "read+write": ("memory:read", "memory:write"),
    "admin": ("memory:read", "memory:write", "memory:admin"),
}
# (use case, team, the scope it needs); a team other than the key's is 403 whatever the scopes.
CASES = [
    ("remember", None, "memory:write"),
    ("remember", "team-a", "memory:write"),
    ("remember", "team-b", "memory:write"),
    ("recall_context", None, "memory:read"),
    ("recall_context", "team-a", "memory:read"),
    ("recall_context", "team-b", "memory:read"),
    ("reflect_dry", None, "memory:read"),
    ("reflect_dry", "team-b", "memory:read"),
    ("reflect", None, "memory:write"),
    ("reflect", "team-a", "memory:write"),
    ("reflect", "team-b", "memory:write"),
    ("reflect_other_owner", None, "memory:admin"),
]


def expected(scopes: tuple[str, ...], case: str, team: str | None, needed: str) -> bool:
    allowed = needed in scopes and (team in (None, "team-a"))
    if case == "reflect_other_owner":  # the key is restricted to team-a: it administers team-a, not other owners
        allowed = False
    return allowed


def rest(app: InProcess, headers: dict[str, str], case: str, team: str | None) -> int:
    teamed = {"team_id": team} if team else {}
    if case == "remember":
        return app.client.post(
            "/api/v1/remember", headers=headers, json={"content": "A policy note.", "path": "notes", **teamed}
        ).status_code
    if case == "recall_context":
        return app.client.post("/v1/recall/context", headers=headers, json={"query": "policy", **teamed}).status_code
    body: dict[str, Any] = {"dry_run": case == "reflect_dry", **teamed}
    if case == "reflect_other_owner":
        body = {"dry_run": True, "owner_filter": "someone-else"}
    return app.client.post("/api/v1/reflect", headers=headers, json=body).status_code


def mcp(app: InProcess, headers: dict[str, str], case: str, team: str | None) -> bool:
    """Whether the MCP tool call succeeded (an error text carries the same status)."""
    teamed = {"team_id": team} if team else {}
    if case == "remember":
        failed, text = app.mcp(headers, "remember", {"content": "A policy note.", "path": "notes", **teamed})
    elif case == "recall_context":
        failed, text = app.mcp(headers, "recall_context", {"query": "policy", **teamed})
    elif case == "reflect_other_owner":
        failed, text = app.mcp(headers, "reflect", {"dry_run": True, "owner_filter": "someone-else"})
    else:
        failed, text = app.mcp(headers, "reflect", {"dry_run": case == "reflect_dry", **teamed})
    assert not failed or "403" in text, text
    return not failed


@pytest.fixture(scope="module")
def app(tmp_path_factory: pytest.TempPathFactory) -> Iterator[InProcess]:
    with in_process(tmp_path_factory.mktemp("policy") / "data") as running:
        yield running


@pytest.mark.parametrize("scope_name", sorted(SCOPES))
def test_the_matrix_over_rest_and_mcp(app: InProcess, scope_name: str) -> None:
    headers = app.headers("alice", team_ids=("team-a",), scopes=SCOPES[scope_name])
    for case, team, needed in CASES:
        allowed = expected(SCOPES[scope_name], case, team, needed)
        status = rest(app, headers, case, team)
        assert (status in (200, 201)) is allowed and status in (200, 201, 403), (case, team, status)
        assert mcp(app, headers, case, team) is allowed, (case, team)


def test_an_admin_key_cannot_write_a_team_it_could_not_read(app: InProcess) -> None:
    """The attack pass: an admin key remembered into a foreign team (201), then got 403 reading it back."""
    admin = app.headers("root", team_ids=("team-a",), scopes=SCOPES["admin"])
    assert (
        app.client.post(
            "/api/v1/remember", headers=admin, json={"content": "x", "path": "p", "team_id": "team-z"}
        ).status_code
        == 403
    )
    assert (
        app.client.post("/v1/recall/context", headers=admin, json={"query": "x", "team_id": "team-z"}).status_code
        == 403
    )


def test_a_teams_admin_administers_its_teams_and_never_another_owners_personal_memories(app: InProcess) -> None:
    """The attack pass: an admin key restricted to team `core` listed alice's personal memories
    (`owner_id=alice`, the console's owner switch) and wiped zed, who belongs to no team."""
    ayla, zeno = app.headers("ayla", team_ids=("core",)), app.headers("zeno")
    said = {"content": "Ayla's locker code is 4471.", "path": "personal"}
    assert app.client.post("/api/v1/remember", headers=ayla, json=said).status_code == 201
    shared = {"content": "The core team ships on Fridays.", "path": "team", "team_id": "core"}
    assert app.client.post("/api/v1/remember", headers=ayla, json=shared).status_code == 201
    assert (
        app.client.post("/api/v1/remember", headers=zeno, json={"content": "Zeno's note.", "path": "p"}).status_code
        == 201
    )
    team_admin = app.headers("lead", team_ids=("core",), scopes=SCOPES["admin"])
    listed = app.client.get("/api/v1/memories", headers=team_admin, params={"owner_id": "ayla"})
    assert listed.status_code == 403 and "4471" not in listed.text and "core" in listed.json()["error"]["message"]
    reflected = {"dry_run": True, "owner_filter": "ayla"}
    assert app.client.post("/api/v1/reflect", headers=team_admin, json=reflected).status_code == 403
    failed, text = app.mcp(team_admin, "reflect", reflected)
    assert failed and "403" in text
    # forgetting an owner reaches only what the team's admin administers: ayla's memories in core
    assert app.client.delete("/api/v1/owners/zeno/memories", headers=team_admin).json()["forgotten"] == []
    forgotten = app.client.delete("/api/v1/owners/ayla/memories", headers=team_admin).json()["forgotten"]
    assert len(forgotten) == 1
    left = app.client.get("/api/v1/memories", headers=ayla).json()["memories"]
    assert [m["content"] for m in left] == [said["content"]]
    assert [m["content"] for m in app.client.get("/api/v1/memories", headers=zeno).json()["memories"]] == [
        "Zeno's note."
    ]
    key = app.keys.create("lead", team_ids=("core",), scopes=SCOPES["admin"]).key
    assert sign_in(app.client, key).status_code == 303
    assert 'name="owner_id"' not in app.client.get("/ui/").text
    switched = app.client.get("/ui/", params={"owner_id": "ayla"})
    assert switched.status_code == 403 and "4471" not in switched.text
    # the operator's admin, restricted to no team, keeps the whole store
    operator = app.headers("root", scopes=SCOPES["admin"])
    seen = app.client.get("/api/v1/memories", headers=operator, params={"owner_id": "ayla"}).json()["memories"]
    assert [m["content"] for m in seen] == [said["content"]]
    assert app.client.post("/api/v1/reflect", headers=operator, json=reflected).status_code == 200
    assert len(app.client.delete("/api/v1/owners/zeno/memories", headers=operator).json()["forgotten"]) == 1


def test_the_operator_may_name_any_team(make_engine: Any) -> None:
    engine = make_engine(FakeEmbedder())
    operator = Principal.local("ops")
    written = remember(engine, operator, RememberRequest(content="Restored team note.", path="p", team_id="team-z"))
    assert written.memory.team_id == "team-z"
    assert pack_for(engine, operator, "restored team note", team_id="team-z").items
    with pytest.raises(PermissionDeniedError):
        remember(
            engine,
            Principal(owner_id="ops", scopes=frozenset(SCOPES["admin"])),
            RememberRequest(content="x", path="p", team_id="team-z"),
        )


def test_keys_are_made_with_the_scopes_asked(app: InProcess, tmp_path: Path) -> None:
    assert (
        app.client.post(
            "/api/v1/remember", headers=app.headers("bob", scopes=SCOPES["read"]), json={"content": "x", "path": "p"}
        ).status_code
        == 403
    )
