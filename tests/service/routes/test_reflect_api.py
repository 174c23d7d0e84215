"""The reflect route's refusals say what form a field takes (the CLI beside a server prints them as sent)."""

from __future__ import annotations

from tests.support import in_process

# Three notes of one move, a session each: reflect summarizes them.
NOTES = [
    "The staging database moves to PostgreSQL 16 on Friday night.",
    "PostgreSQL 16 migration for staging is scheduled for Friday night.",
    "Friday night: staging's database is upgraded to PostgreSQL 16.",
]


def test_a_malformed_exclude_or_plan_names_the_expected_form(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice", scopes=("memory:read", "memory:write"))
        excluded = app.client.post("/api/v1/reflect", headers=alice, json={"dry_run": True, "exclude": ["promote-x"]})
        assert excluded.status_code == 422
        assert excluded.json()["error"]["message"] == (
            "exclude.0 must be a proposal_id of a dry run: an action, a dash and 12 hex digits, "
            "such as 'summarize-3fa29c81d2e4'"
        )
        planned = app.client.post("/api/v1/reflect", headers=alice, json={"dry_run": True, "expected_plan": "abc"})
        assert planned.status_code == 422
        assert planned.json()["error"]["message"] == "expected_plan must be a dry run's plan_digest: 64 hex digits"


def test_a_proposal_turned_down_over_rest_is_held_back_until_reconsidered(tmp_path):
    """REST: a real run with `exclude` records the "no"; the next dry runs list the proposal in `held_back`
    and propose nothing; `reconsider` shows it again; the audit log lists the decline by action."""
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice", scopes=("memory:read", "memory:write"))
        for n, text in enumerate(NOTES):
            body = {"content": text, "path": "ops/db", "memory_type": "episodic", "session_id": f"s{n}"}
            assert app.client.post("/api/v1/remember", headers=alice, json=body).status_code in (200, 201)
        ask = {"actions_csv": "summarize"}
        dry = app.client.post("/api/v1/reflect", headers=alice, json={**ask, "dry_run": True}).json()
        (no,) = [p["proposal_id"] for p in dry["preview"]]
        body = {**ask, "expected_plan": dry["plan_digest"], "exclude": [no]}
        done = app.client.post("/api/v1/reflect", headers=alice, json=body).json()
        assert done["counts"]["summarized"] == 0 and done["excluded"] == [no]
        again = app.client.post("/api/v1/reflect", headers=alice, json={**ask, "dry_run": True}).json()
        assert again["preview"] == [] and [h["proposal_id"] for h in again["held_back"]] == [no]
        assert sorted(again["held_back"][0]["memory_ids"]) == sorted(dry["preview"][0]["memory_ids"][1:])
        body = {**ask, "dry_run": True, "reconsider": True}
        shown = app.client.post("/api/v1/reflect", headers=alice, json=body).json()
        assert [p["proposal_id"] for p in shown["preview"]] == [no] and shown["held_back"] == []
        declines = app.client.get("/api/v1/audit", headers=alice, params={"action": "decline"}).json()["records"]
        assert [r["action"] for r in declines] == ["decline"]


def test_a_summarys_block_cites_its_members_over_rest_and_in_the_mcp_references(tmp_path):
    """Issue 49 item 3: after reflect summarizes three notes of one move, a pack that holds them shows them as
    one block under the summary's header; the REST item lists each line's memory (id, type, path, when)
    and the MCP text has a Reference line for each of them, in line order, and none for the summary."""
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice", scopes=("memory:read", "memory:write"))
        ids = []
        for n, text in enumerate(NOTES):
            body = {"content": text, "path": "ops/db", "memory_type": "episodic", "session_id": f"s{n}"}
            ids.append(app.client.post("/api/v1/remember", headers=alice, json=body).json()["id"])
        done = app.client.post("/api/v1/reflect", headers=alice, json={"actions_csv": "summarize"}).json()
        (summary,) = [s["id"] for s in done["summaries"]]
        ask = {"query": "When does staging move to PostgreSQL 16?", "max_tokens": 1500}
        pack = app.client.post("/v1/recall/context", headers=alice, json=ask).json()
        (group,) = [item for item in pack["items"] if item["members"]]
        assert group["id"] == summary and sorted(m["id"] for m in group["members"]) == sorted(ids)
        assert {(m["type"], m["path"]) for m in group["members"]} == {("episodic", "ops/db")}
        failed, text = app.mcp(alice, "recall_context", ask)
    assert not failed, text
    references = [line for line in text.splitlines() if line.startswith("Reference: ")]
    cited = [line.split(" | ")[0].removeprefix("Reference: ") for line in references]
    assert cited == [m["id"] for m in group["members"]] and f"Items: {len(cited)}" in text.splitlines()
