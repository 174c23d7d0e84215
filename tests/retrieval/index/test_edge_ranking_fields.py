"""An Edge search reads no payload: the ranking fields of a shard's points are kept in memory
(retrieval/index/edge_ranked.py `RankedFields`), learnt from each upsert and read from the shard for the points a
search finds it lacks. Whatever it holds, a hit carries what the shard's payload says now: after an
upsert, a payload change, a delete, a reopen (nothing in memory) and a rebuild's install."""

from __future__ import annotations

import uuid
from pathlib import Path

import numpy as np
import pytest

from retrieval.encoding import SparseEncoder
from retrieval.index import RANKING_FIELDS, EdgeIndex, IndexFilter, IndexHit, IndexPoint

DIMENSION = 8
SPARSE = SparseEncoder()
FILTER = IndexFilter(visibility=("owner:a",))
QUERY = SPARSE.query("note")


def _point(n: int, **fields: object) -> IndexPoint:
    vector = np.random.default_rng(n).standard_normal(DIMENSION).astype(np.float32)
    payload = {
        "visibility": "owner:a",
        "status": "active",
        "importance": 0.5,
        "occurred_ts": 1000.0 + n,
        "speaker": f"speaker {n}",
        "semantic_key": "",
        "script": "Latin",
        "session": f"s{n % 3}",
        **fields,
    }
    return IndexPoint(str(uuid.UUID(int=n + 1)), vector / np.linalg.norm(vector), SPARSE.document(f"note {n}"), payload)


def _fields(hit: IndexHit) -> tuple[object, ...]:
    return tuple(getattr(hit, name) for name in RANKING_FIELDS)


def _search(index: EdgeIndex) -> dict[str, IndexHit]:
    """Every hit of both channels by id (the two channels' hits of a point must agree)."""
    dense, bm25 = index.search(np.ones(DIMENSION, dtype=np.float32) / np.sqrt(DIMENSION), QUERY, FILTER, 50, 50)
    found: dict[str, IndexHit] = {}
    for hit in [*dense, *bm25]:
        assert _fields(found.setdefault(hit.id, hit)) == _fields(hit)
    return found


def _stored(index: EdgeIndex) -> dict[str, tuple[object, ...]]:
    """What the shard's payloads say, read from the shard itself, as a hit carries them."""
    records = index._shard.retrieve([*index.iter_ids()], with_payload=True, with_vector=False)
    out: dict[str, tuple[object, ...]] = {}
    for record in records:
        payload = record.payload or {}
        out[str(record.id)] = (
            float(payload.get("occurred_ts", 0.0)),
            float(payload.get("importance", 0.5)),
            payload.get("speaker"),
            payload.get("semantic_key"),
            payload.get("script"),
            payload.get("session"),
        )
    return out


def _agrees(index: EdgeIndex) -> dict[str, IndexHit]:
    hits = _search(index)
    stored = _stored(index)
    assert {i: _fields(h) for i, h in hits.items()} == {i: stored[i] for i in hits}
    assert set(hits) == set(stored)  # 12 points, 50 asked: every point found
    return hits


def _filled(home: Path) -> tuple[EdgeIndex, list[IndexPoint]]:
    """An index of twelve points, searched once (their fields in memory)."""
    index = EdgeIndex(home, DIMENSION)
    points = [_point(n) for n in range(12)]
    index.upsert(points)
    _agrees(index)
    return index, points


def test_hits_carry_the_shards_payload_through_upsert_change_delete_and_reopen(tmp_path: Path) -> None:
    index = EdgeIndex(tmp_path / "index", DIMENSION)
    points = [_point(n) for n in range(12)]
    points[3] = _point(3, speaker=None, semantic_key="bug:7", script=None)  # a field unset reads as None
    index.upsert(points)
    hits = _agrees(index)
    assert hits[points[3].id].speaker is None and hits[points[3].id].semantic_key == "bug:7"

    index.set_payloads([(points[0].id, {"importance": 0.9}), (points[1].id, {"speaker": "Ann"})])
    hits = _agrees(index)
    assert hits[points[0].id].importance == 0.9 and hits[points[1].id].speaker == "Ann"

    index.upsert([_point(2, occurred_ts=5.0, session="new")])  # a new version of a point
    index.delete([points[4].id])
    hits = _agrees(index)
    assert hits[points[2].id].occurred_ts == 5.0 and hits[points[2].id].session == "new"
    assert points[4].id not in hits

    index.set_payloads([(points[5].id, {"status": "archived"})])  # out of the filter: not a hit
    assert points[5].id not in _search(index)
    index.close()

    reopened = EdgeIndex(tmp_path / "index", DIMENSION)  # nothing in memory: every field from the shard
    hits = _search(reopened)
    assert hits[points[0].id].importance == 0.9 and hits[points[2].id].session == "new"
    assert {i: _fields(h) for i, h in hits.items()} == {i: f for i, f in _stored(reopened).items() if i in hits}
    reopened.set_payloads([(points[0].id, {"importance": 0.2})])  # a point read from the shard, then changed
    assert _search(reopened)[points[0].id].importance == 0.2
    reopened.close()


def test_a_rebuilt_shard_answers_with_the_writes_replayed_into_it(tmp_path: Path) -> None:
    live, points = _filled(tmp_path / "index")
    target = live.begin_rebuild()
    built = EdgeIndex(target, DIMENSION)  # the child read the record before the change below
    built.upsert(points)
    built.optimize()
    built.close()
    live.set_payloads([(points[6].id, {"importance": 0.8})])
    assert _search(live)[points[6].id].importance == 0.8
    assert live.install(target) == 1  # the payload change, replayed
    assert live.path == target
    assert _agrees(live)[points[6].id].importance == 0.8
    live.close()


def test_a_payload_read_before_a_change_is_not_kept_past_it(tmp_path: Path) -> None:
    """The race `RankedFields.fill` guards against, played in order: a search reads a point's payload from
    the shard, a payload change lands and drops the point from memory, and only then does the search
    keep what it read. Kept, the stale importance would answer every later search."""
    index = EdgeIndex(tmp_path / "index", DIMENSION)
    point = _point(1)
    index.upsert([point])
    ranked = index._live.ranked
    began = ranked.writes  # the search begins (edge.py `_hits` takes `since` so)
    (read,) = index._shard.retrieve([point.id], with_payload=list(RANKING_FIELDS), with_vector=False)
    index.set_payloads([(point.id, {"importance": 0.9})])  # the change lands meanwhile
    stale = (0.0, float((read.payload or {})["importance"]), None, None, None, None)
    ranked.fill([(uuid.UUID(point.id).int, (point.id, stale))], began)  # the search keeps what it read
    assert _search(index)[point.id].importance == 0.9
    index.close()


def test_an_upsert_that_fails_leaves_hits_carrying_what_the_shard_holds(tmp_path: Path) -> None:
    index, _ = _filled(tmp_path / "index")
    again = _point(0, importance=0.9)
    wrong = IndexPoint(str(uuid.UUID(int=99)), np.ones(DIMENSION + 1, dtype=np.float32), SPARSE.document("x"), {})
    with pytest.raises(Exception):  # noqa: B017 (Edge's refusal, whatever its type)
        index.upsert([again, wrong])
    _agrees(index)  # a batch cut short may have landed in part: either way the hits say what the shard does
    index.close()
