"""REST and MCP validate alike (one request model, one rule), and what is invisible is blank everywhere.

Before: `max_items` "5" or 5.0 was a 200 over REST and a 422 over MCP; a `team_id` holding NUL or U+001F
was a 422 over REST and a 403 over MCP; `as_of: ""` was "now" over MCP and a 422 over REST; MCP's
`search_memory` and `recall` took none of the filters REST's search takes; a memory of zero-width
characters alone was stored, and a search scored a memory 1.0001, above the highest `min_score`."""

from __future__ import annotations

import re

import pytest

from tests.support import in_process

# (value, accepted): an integer as JSON Schema reads one, never a text or a boolean or a fraction.
INTEGERS = [(5, True), (5.0, True), ("5", False), (5.5, False), (True, False)]


def _mcp_refused(failed: bool, text: str) -> bool:
    return failed and "422 validation_error" in text


@pytest.mark.parametrize(("value", "accepted"), INTEGERS)
def test_an_integer_is_read_alike_over_rest_and_mcp(tmp_path, value, accepted):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        rest = [
            app.client.post("/v1/recall/context", headers=alice, json={"query": "deploys", "max_items": value}),
            app.client.post("/v1/recall/context", headers=alice, json={"query": "deploys", "max_tokens": value}),
            app.client.post("/v1/projects/p1/context", headers=alice, json={"max_items": value}),
            app.client.post("/api/v1/reflect", headers=alice, json={"dry_run": True, "limit": value}),
        ]
        mcp = [
            app.mcp(alice, "recall_context", {"query": "deploys", "max_items": value}),
            app.mcp(alice, "recall_context", {"query": "deploys", "max_tokens": value}),
            app.mcp(alice, "recall", {"query": "deploys", "limit": value}),
            app.mcp(alice, "search_memory", {"query": "deploys", "limit": value}),
            app.mcp(alice, "reflect", {"dry_run": True, "limit": value}),
        ]
    for response in rest:
        assert response.status_code == (200 if accepted else 422), (value, response.text)
    for failed, text in mcp:
        assert (not failed) if accepted else _mcp_refused(failed, text), (value, text)


@pytest.mark.parametrize("team", ["co\x00re", "core\x1f", "\x07"])
def test_a_team_id_is_a_label_over_rest_and_mcp(tmp_path, team):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice", team_ids=("core",))
        rest = [
            app.client.post("/v1/recall/context", headers=alice, json={"query": "deploys", "team_id": team}),
            app.client.get("/v1/memories/search", headers=alice, params={"query": "deploys", "team_id": team}),
        ]
        mcp = [app.mcp(alice, tool, {"query": "deploys", "team_id": team}) for tool in READ_TOOLS]
    for response in rest:
        assert response.status_code == 422, response.text
    for failed, text in mcp:
        assert _mcp_refused(failed, text) and "team_id" in text, text


READ_TOOLS = ("recall_context", "recall", "search_memory")


def test_an_empty_as_of_is_refused_over_rest_and_mcp(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        response = app.client.post("/v1/recall/context", headers=alice, json={"query": "deploys", "as_of": ""})
        failed, text = app.mcp(alice, "recall_context", {"query": "deploys", "as_of": ""})
        left_out = app.mcp(alice, "recall_context", {"query": "deploys"})
    assert response.status_code == 422
    assert _mcp_refused(failed, text) and "as_of" in text, text
    assert not left_out[0]


def test_mcp_search_and_recall_take_the_filters_rest_search_takes(tmp_path):
    notes = [
        ("The deploy of the ledger froze on Friday.", "ops/ledger", "personal", "episodic"),
        ("The deploy of the gateway froze on Friday.", "ops/gateway", "personal", "episodic"),
        ("Deploys of the gateway freeze on Fridays.", "ops/gateway", "runbooks", "procedural"),
    ]
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        ids = {}
        for content, path, bucket, kind in notes:
            body = {"content": content, "path": path, "bucket": bucket, "memory_type": kind}
            ids[content] = app.client.post("/api/v1/remember", headers=alice, json=body).json()["id"]
        filters = [
            {"path_filter": "ops/ledger%"},
            {"bucket": "runbooks"},
            {"memory_type": "procedural"},
            {"path_filter": "ops/gateway%", "memory_type": "episodic"},
        ]
        for narrowed in filters:
            asked = {"query": "deploy froze on Friday", "min_score": 0.0, **narrowed}
            rest = app.client.get("/v1/memories/search", headers=alice, params=asked).json()["results"]
            rest_ids = {r["id"] for r in rest}
            assert rest_ids and rest_ids != set(ids.values()), narrowed
            for tool, arguments in (("search_memory", asked), ("recall", {**asked, "limit": 10})):
                arguments = {k: v for k, v in arguments.items() if tool == "search_memory" or k != "min_score"}
                failed, text = app.mcp(alice, tool, arguments)
                assert not failed, text
                assert set(re.findall(r"Reference: (\S+)", text)) == rest_ids, (tool, narrowed, text)


BLANK = ["\u200b\u200c\u2060", "\ufeff\u200d", "\u00ad", "\u2066\u2069", "\ufe0f", "\U000e0041\U000e0001", " \u3164 "]


@pytest.mark.parametrize("blank", BLANK)
def test_invisible_characters_alone_are_blank_everywhere(tmp_path, blank):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        stored = app.client.post("/api/v1/remember", headers=alice, json={"content": blank, "path": "notes"})
        pathed = app.client.post("/api/v1/remember", headers=alice, json={"content": "a note", "path": blank})
        searched = app.client.get("/v1/memories/search", headers=alice, params={"query": blank})
        failed, text = app.mcp(alice, "remember", {"content": blank, "path": "notes"})
        listed = app.client.get("/api/v1/memories", headers=alice).json()
    assert stored.status_code == 422, stored.text
    assert pathed.status_code == 422, pathed.text
    assert searched.status_code == 422, searched.text
    assert _mcp_refused(failed, text), text
    assert listed["memories"] == []


def test_a_word_with_a_zero_width_character_inside_is_kept(tmp_path):
    with in_process(tmp_path / "data") as app:
        response = app.client.post(
            "/api/v1/remember", headers=app.headers("alice"), json={"content": "co\u200bop", "path": "notes"}
        )
    assert response.status_code == 201, response.text


def test_search_scores_stay_within_zero_and_one(tmp_path):
    """A stored half-precision vector against its own text gave a cosine of 1.0001."""
    texts = ["\ufffd", "x", "The deploy froze on Friday."]
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        for text in texts:
            assert app.client.post("/api/v1/remember", headers=alice, json={"content": text, "path": "p"}).is_success
        for text in texts:
            found = app.client.get("/v1/memories/search", headers=alice, params={"query": text, "min_score": 1.0})
            scores = [r["score"] for r in found.json()["results"]]
            assert scores and all(0.0 <= s <= 1.0 for s in scores), (text, scores)
            failed, shown = app.mcp(alice, "search_memory", {"query": text, "min_score": 1.0})
            assert not failed and re.findall(r"Score: (\S+)", shown) == ["1.000"] * len(scores), shown
