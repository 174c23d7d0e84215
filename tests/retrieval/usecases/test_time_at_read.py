"""Time is enforced when a memory is read: past its `expires_at` it is never recalled, searched or
listed as active, whether or not reflect has run yet; an `occurred_at` more than a day ahead is refused."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from retrieval import Principal, RememberRequest, ValidationError, remember
from retrieval.usecases import ListQuery, list_memories
from tests.support import FixedClock, in_process, pack_for, recall_for, search_for

ALICE = Principal.local("alice")
NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)


def test_an_expired_memory_is_never_read_as_active(make_engine):
    clock = FixedClock(NOW)
    engine = make_engine(clock=clock)
    soon = (NOW + timedelta(hours=1)).isoformat()
    temporary = remember(
        engine,
        ALICE,
        RememberRequest(content="The staging password is hunter2 until noon.", path="ops", expires_at=soon),
    ).memory.id
    lasting = remember(
        engine, ALICE, RememberRequest(content="The staging password rotates monthly.", path="ops")
    ).memory.id
    query = "staging password"
    assert temporary in {item.id for item in pack_for(engine, ALICE, query).items}
    clock.moment = NOW + timedelta(hours=2)  # past expires_at; no reflect has run
    assert [item.id for item in pack_for(engine, ALICE, query).items] == [lasting]
    assert temporary not in {r.id for r in search_for(engine, ALICE, query, min_score=0.0).results}
    assert temporary not in {r.id for r in recall_for(engine, ALICE, query).results}
    active = list_memories(engine, ALICE, ListQuery(status="active")).memories
    assert [m.id for m in active] == [lasting]


@pytest.mark.parametrize("ahead", [timedelta(days=2), timedelta(days=365 * 70)])
def test_an_occurred_at_far_ahead_is_refused(make_engine, ahead):
    engine = make_engine(clock=FixedClock(NOW))
    with pytest.raises(ValidationError, match=r"occurred_at .* future"):
        remember(engine, ALICE, RememberRequest(content="x", path="p", occurred_at=(NOW + ahead).isoformat()))
    within = (NOW + timedelta(hours=20)).isoformat()  # clocks differ: less than a day ahead is accepted
    assert remember(engine, ALICE, RememberRequest(content="y", path="p", occurred_at=within)).created


def test_rest_refuses_a_future_occurred_at_and_hides_an_expired_memory(tmp_path):
    with in_process(tmp_path / "data") as app:
        alice = app.headers("alice")
        refused = app.client.post(
            "/api/v1/remember", headers=alice, json={"content": "x", "path": "p", "occurred_at": "2099-01-01T00:00:00Z"}
        )
        assert refused.status_code == 422 and "future" in refused.json()["error"]["message"]
        past = (datetime.now(UTC) - timedelta(minutes=1)).isoformat()
        created = app.client.post("/api/v1/remember", headers=alice, json={"content": "the lunch order", "path": "p"})
        edited = app.client.patch(
            f"/api/v1/memories/{created.json()['id']}", headers=alice, json={"expected_version": 1, "expires_at": past}
        )
        assert edited.status_code == 200, edited.text  # remember refuses a past expiry; an edit may set one
        pack = app.client.post("/v1/recall/context", headers=alice, json={"query": "lunch order"}).json()
        assert pack["items"] == []
        listed = app.client.get("/api/v1/memories", headers=alice, params={"status": "active"}).json()
        assert created.json()["id"] not in {m["id"] for m in listed["memories"]}
