"""The reflect route's refusals say what form a field takes (the CLI beside a server prints them as sent)."""

from __future__ import annotations

from tests.support import in_process


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
