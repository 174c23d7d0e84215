"""reflect's pure parts: options and their validation, lifecycle formulas, clustering, the summarizer."""

from __future__ import annotations

import json
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import numpy as np
import pytest
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from compactor import ReflectRequest, ReflectSettings
from compactor.clustering import cluster_vectors
from compactor.lifecycle import decayed_importance, idle_days, is_expired, is_protected, should_archive
from compactor.options import ACTIONS, normalize_actions, resolve_options
from compactor.recurrence import find_recurrence, states_something
from compactor.summarizer import ClusterView, ExtractiveSummarizer, representatives
from retrieval import Memory, MemoryType, PermissionDeniedError, Principal, ValidationError
from retrieval.domain import format_time, key_sentence
from retrieval.ranking import token_counter
from tests.support import TEST_DATA

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
RULES = ReflectSettings()
ALICE = Principal(owner_id="alice", agent_id="a", team_ids=("team-a",))


def memory(**fields) -> Memory:  # type: ignore[no-untyped-def]
    base = dict(
        id="m1",
        owner_id="alice",
        content="x",
        path="p",
        type=MemoryType.EPISODIC,
        created_at=format_time(NOW),
        updated_at=format_time(NOW),
        occurred_at=format_time(NOW),
    )
    return Memory(**{**base, **fields})


# -- options ------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("given_csv", "expected"),
    [
        (None, ACTIONS),
        ("", ACTIONS),
        ("summary, promotion,expiry , importance_decay,archival", ACTIONS),
        ("ARCHIVE", ("archive",)),
        ("decay,summarize,decay", ("summarize", "decay")),
    ],
)
def test_actions_are_normalised(given_csv, expected):
    assert normalize_actions(given_csv) == expected


@pytest.mark.parametrize("bad", ["delete", "summarize,purge", "archive;decay"])
def test_unknown_action_is_a_validation_error(bad):
    with pytest.raises(ValidationError, match="unknown reflect action"):
        normalize_actions(bad)


@pytest.mark.parametrize(
    "request_fields",
    [
        {"time_window_hours": 0},
        {"time_window_hours": -3},
        {"time_window_hours": float("nan")},
        {"time_window_hours": True},
        {"since": "yesterday"},
        {"until": "2026-13-01T00:00:00Z"},
        {"since": "2026-11-01T00:00:00"},  # no zone
        {"limit": "10"},
        {"limit": 2.5},
        {"path_filter": " "},
    ],
)
def test_invalid_parameters_are_rejected(request_fields):
    with pytest.raises(ValidationError):
        resolve_options(ALICE, ReflectRequest(dry_run=True, **request_fields), NOW)


def test_window_defaults_and_overrides():
    default = resolve_options(ALICE, ReflectRequest(dry_run=True), NOW)
    assert (default.since, default.until, default.time_window_hours) == (NOW - timedelta(hours=24), NOW, 24.0)
    explicit = resolve_options(
        ALICE, ReflectRequest(dry_run=True, since="2026-11-01T00:00:00+02:00", time_window_hours=1), NOW
    )
    assert explicit.since == datetime(2026, 10, 31, 22, 0, tzinfo=UTC)
    assert explicit.time_window_hours is None
    huge = resolve_options(ALICE, ReflectRequest(dry_run=True, time_window_hours=1e12), NOW)
    assert huge.since.year == 1
    inverted = resolve_options(
        ALICE, ReflectRequest(dry_run=True, since="2026-11-29T00:00:00Z", until="2026-11-28T00:00:00Z"), NOW
    )
    assert inverted.since > inverted.until  # an empty window, not an error: only malformed times are rejected


@pytest.mark.parametrize(("limit", "effective"), [(0, 1), (-5, 1), (1, 1), (500, 500), (5000, 5000), (10**9, 5000)])
def test_limit_is_clamped(limit, effective):
    assert resolve_options(ALICE, ReflectRequest(dry_run=True, limit=limit), NOW).limit == effective


def test_scopes_owner_and_team_are_authorised():
    reader = Principal(owner_id="alice", scopes=frozenset({"memory:read"}))
    writer = Principal(owner_id="alice", scopes=frozenset({"memory:write"}))
    assert resolve_options(reader, ReflectRequest(dry_run=True), NOW).dry_run
    with pytest.raises(PermissionDeniedError, match="memory:write"):
        resolve_options(reader, ReflectRequest(dry_run=False), NOW)
    with pytest.raises(PermissionDeniedError, match="memory:read"):
        resolve_options(writer, ReflectRequest(dry_run=True), NOW)
    assert not resolve_options(writer, ReflectRequest(dry_run=False), NOW).dry_run
    with pytest.raises(PermissionDeniedError, match="memory:admin"):
        resolve_options(ALICE, ReflectRequest(owner_filter="bob"), NOW)
    admin = Principal.local("root")
    assert resolve_options(admin, ReflectRequest(owner_filter="bob"), NOW).filters.owner_id == "bob"
    with pytest.raises(PermissionDeniedError, match="cannot change"):
        resolve_options(ALICE, ReflectRequest(team_id="team-b"), NOW)
    team = resolve_options(ALICE, ReflectRequest(team_id="team-a"), NOW).filters
    assert (team.team_id, team.team_ids) == ("team-a", ("team-a",))
    personal = resolve_options(ALICE, ReflectRequest(), NOW).filters
    assert (personal.team_id, personal.team_ids, personal.owner_id) == (None, (), "alice")


# -- lifecycle formulas (hand-computed) ---------------------------------------------------------


def test_decay_halves_per_half_life_and_stops_at_the_floor():
    one_half_life_ago = format_time(NOW - timedelta(days=RULES.decay_half_life_days))
    assert decayed_importance(memory(importance=0.8, created_at=one_half_life_ago), NOW, RULES) == 0.4
    assert (
        decayed_importance(
            memory(importance=0.8, last_accessed_at=one_half_life_ago, created_at="2000-01-01T00:00:00.000000Z"),
            NOW,
            RULES,
        )
        == 0.4
    )
    long_ago = format_time(NOW - timedelta(days=3650))
    assert decayed_importance(memory(importance=0.8, created_at=long_ago), NOW, RULES) == RULES.decay_floor
    assert decayed_importance(memory(importance=0.02, created_at=long_ago), NOW, RULES) == 0.02  # never raised
    # a memory decayed before keeps its base: decay depends on idleness only
    decayed = memory(importance=0.4, metadata={"importance_base": 0.8}, created_at=one_half_life_ago)
    assert decayed_importance(decayed, NOW, RULES) == 0.4


@given(st.floats(0, 1), st.floats(0, 5000), st.floats(0, 5000))
def test_decay_never_rises_with_age(importance, younger, extra):
    def at(days: float) -> float:
        return decayed_importance(
            memory(importance=importance, created_at=format_time(NOW - timedelta(days=days))), NOW, RULES
        )

    assert at(younger + extra) <= at(younger) <= importance
    assert at(younger) >= min(RULES.decay_floor, importance)


def test_protection_expiry_and_archive():
    old = format_time(NOW - timedelta(days=500))  # 0.5 halves to below 0.1 after 418 days at half-life 180
    assert is_protected(memory(metadata={"pinned": True}), RULES)
    assert is_protected(memory(confidence=0.95), RULES)
    assert is_protected(memory(type=MemoryType.IDENTITY), RULES)
    assert not is_protected(memory(metadata={"pinned": "yes"}), RULES)
    assert should_archive(memory(importance=0.5, created_at=old), NOW, RULES)
    assert not should_archive(memory(importance=0.5, created_at=old, confidence=0.9), NOW, RULES)
    recent_low = memory(importance=0.05, created_at=format_time(NOW - timedelta(days=30)))
    assert not should_archive(recent_low, NOW, RULES)  # low, but not idle long enough
    assert idle_days(recent_low, NOW) == pytest.approx(30.0)
    assert is_expired(memory(expires_at=format_time(NOW)), NOW)
    assert not is_expired(memory(expires_at=format_time(NOW + timedelta(seconds=1))), NOW)
    assert not is_expired(memory(), NOW)


# -- clustering ---------------------------------------------------------------------------------


def _constructed() -> tuple[list[str], list[int]]:
    data = json.loads((TEST_DATA / "topic_clusters.json").read_text())
    texts, truth = [], []
    for label, sentences in enumerate(data["topics"].values()):
        texts += sentences
        truth += [label] * len(sentences)
    texts += data["singletons"]
    truth += [-1] * len(data["singletons"])
    return texts, truth


@pytest.mark.slow
def test_constructed_topics_are_recovered_exactly(real_embedder):
    texts, truth = _constructed()
    order = np.random.default_rng(7).permutation(len(texts))  # input order must not matter
    vectors = real_embedder.embed([texts[i] for i in order])
    clusters = cluster_vectors(vectors, RULES.cluster_max_distance, RULES.min_cluster_size)
    found = sorted(sorted(truth[order[r]] for r in rows) for rows in clusters)
    assert found == [[label] * 5 for label in range(5)]  # each topic whole, no singleton in any cluster


def test_clustering_small_inputs_and_determinism():
    assert cluster_vectors(np.zeros((0, 4)), 0.6, 3) == []
    assert cluster_vectors(np.eye(2), 0.6, 3) == []
    rng = np.random.default_rng(1)
    centres = rng.normal(size=(3, 16))
    points = np.vstack([c + 0.05 * rng.normal(size=(4, 16)) for c in centres])
    first = cluster_vectors(points, 0.6, 3)
    assert first == cluster_vectors(points.copy(), 0.6, 3)
    assert first == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9, 10, 11]]


@hsettings(max_examples=40, deadline=None)
@given(st.integers(0, 10_000), st.integers(6, 40))
def test_removing_whole_clusters_leaves_the_rest_unclustered(seed, count):
    """Why a second pass finds nothing new: complete linkage is reducible."""
    rng = np.random.default_rng(seed)
    vectors = rng.normal(size=(count, 8)) + rng.normal(size=(1, 8)) * 1.5
    clusters = cluster_vectors(vectors, 0.6, 3)
    taken = {row for rows in clusters for row in rows}
    rest = [row for row in range(count) if row not in taken]
    assert cluster_vectors(vectors[rest], 0.6, 3) == []


# -- the summarizer -----------------------------------------------------------------------------


def test_key_sentence_prefers_substance_and_keeps_the_speaker():
    assert (
        key_sentence("Caroline: Wow, Mel! I went to a support group yesterday and it was powerful.")
        == "Caroline: I went to a support group yesterday and it was powerful."
    )
    assert key_sentence("Thanks! See you soon. Bye!") == "See you soon."  # none long enough: the longest
    assert key_sentence("  One   long\nline without a stop") == "One long line without a stop"


def test_representatives_are_central_then_diverse():
    # unit vectors at 0, 3, 40 and 45 degrees; their centroid points at 22 degrees
    angles = np.radians([0.0, 3.0, 40.0, 45.0])
    vectors = np.stack([np.cos(angles), np.sin(angles)], axis=1)
    assert representatives(vectors, 2, 0.0) == [2, 1]  # by centrality alone: 18 then 19 degrees away
    assert representatives(vectors, 2, 0.5) == [2, 0]  # with diversity: the one farther from the first pick
    assert representatives(vectors, 4, 0.5) == [2, 0, 1, 3]


def test_summary_is_bounded_extractive_and_in_time_order():
    counter = token_counter()
    members = tuple(
        memory(
            id=f"m{i}",
            content=f"Item {i}: the deploy of service {i} failed because the disk was full.",
            occurred_at=f"2026-11-0{i + 1}T00:00:00.000000Z",
        )
        for i in range(6)
    )
    vectors = np.random.default_rng(3).normal(size=(6, 8)) + 3.0
    view = ClusterView(members, vectors, sessions=2, days=("2026-11-01", "2026-11-06"))
    summarizer = ExtractiveSummarizer(counter, max_sentences=3, max_tokens=80, diversity=0.3, whole_max_tokens=400)
    text = summarizer.summarize(view, heading="Summary of 6 related memories (2026-11-01 to 2026-11-06):")
    lines = text.splitlines()
    assert lines[0].startswith("Summary of 6") and 1 <= len(lines) - 1 <= 3
    assert counter.count(text) <= 80
    bodies = [line.removeprefix("- ") for line in lines[1:]]
    assert all(body in (m.content for m in members) for body in bodies)
    assert bodies == sorted(bodies, key=lambda b: int(b.split(":")[0].split()[1]))  # time order
    assert summarizer.summarize(view, heading=lines[0]) == text  # deterministic
    tight = ExtractiveSummarizer(counter, max_sentences=5, max_tokens=32, diversity=0.3, whole_max_tokens=400)
    assert counter.count(tight.summarize(replace(view), heading=lines[0])) <= 32


def test_a_promotion_carries_whole_each_member_that_states_something_in_time_order():
    """A restating member longer than a summary's line (80 tokens) is held whole, so recall may read the
    promotion in its place; a question and small talk stay out; past its budget, the lead stays."""
    counter = token_counter()
    long_fact = " ".join(
        f"Step {n} of the settlement runbook: reconcile batch {n} against the ledger before 17:00 CET."
        for n in range(1, 9)
    )
    members = (
        memory(id="a", content=long_fact, occurred_at="2026-11-02T09:00:00.000000Z"),
        memory(id="b", content="Which step comes after the reconciliation?", occurred_at="2026-11-03T09:00:00.000000Z"),
        memory(id="c", content="Thanks!", speaker="Ana", occurred_at="2026-11-04T09:00:00.000000Z"),
        memory(
            id="d",
            content="Card refunds wait for the settlement batch to close.",
            occurred_at="2026-11-05T09:00:00.000000Z",
        ),
        memory(id="e", content=long_fact, occurred_at="2026-11-09T09:00:00.000000Z"),
    )
    assert counter.count(long_fact) > 80 and [states_something(m) for m in members] == [True, False, False, True, True]
    vectors = np.random.default_rng(5).normal(size=(5, 8)) + 3.0
    view = ClusterView(members, vectors, 3, ("2026-11-02", "2026-11-09"), lead=(0, 4), whole=(0, 3, 4))
    heading = "Recurring topic of 5 related memories (2026-11-02 to 2026-11-09):"
    text = ExtractiveSummarizer(counter, 5, 200, 0.3, whole_max_tokens=1000).summarize(view, heading=heading)
    assert text.splitlines() == [heading, f"- {long_fact}", f"- {members[3].content}"]  # said twice, held once
    tight = ExtractiveSummarizer(counter, 5, 200, 0.3, whole_max_tokens=counter.count(heading + long_fact) + 5)
    assert tight.summarize(view, heading=heading).splitlines() == [heading, f"- {long_fact}"]
    summary = ExtractiveSummarizer(counter, 5, 200, 0.3, whole_max_tokens=1000).summarize(
        replace(view, whole=()), heading=heading
    )
    assert long_fact not in summary and "…" in summary  # a summary still cuts a long line


@pytest.mark.slow
def test_locomo_turns_that_answer_one_question_cluster_together():
    """On LoCoMo dev, turns that are evidence for the same question share a cluster far more often
    than random turns of the same conversation; the chosen method beats the others on that lift."""
    from eval.reflect_bench import clustering_inputs, compare_clustering

    vectors, groups, pairs = clustering_inputs("locomo")
    rows = {row["method"]: row for row in compare_clustering(vectors, groups, pairs)}
    chosen = rows[f"complete linkage, d < {RULES.cluster_max_distance}"]
    assert chosen["lift"] >= 4.0 and chosen["coverage"] >= 0.8 and chosen["max_size"] <= 100
    for other in ("threshold graph, cos >= 0.6", "average linkage, d < 0.5", "HDBSCAN, min_cluster_size 3"):
        assert chosen["lift"] > rows[other]["lift"], rows


def test_mcp_text_shows_the_five_counts_and_at_most_20_audit_ids():
    from compactor import ReflectReport, render_reflect_text

    report = ReflectReport(
        dry_run=False,
        plan_id="plan",
        plan_digest="0" * 64,
        actions=("archive",),
        filters={"limit": 500},
        now="2026-12-03T00:00:00.000000Z",
        candidates={},
        summaries=(),
        promotions=(),
        lifecycle={},
        counts={"summarized": 0, "promoted": 0, "expired": 0, "decayed": 0, "archived": 25},
        audit_record_ids=tuple(f"id-{i}" for i in range(25)),
        excluded=(),
        preview=(),
    )
    lines = render_reflect_text(report).splitlines()
    assert lines[:11] == [
        "### Memory Reflect Report",
        "Dry Run: false",
        "Actions: archive",
        "Summarized: 0",
        "Promoted: 0",
        "Expired: 0",
        "Decayed: 0",
        "Archived: 25",
        "Audit Records: 25",
        "Audit IDs:",
        "- id-0",
    ]
    assert lines[-2:] == ["- id-19", "... and 5 more"] and len(lines) == 10 + 20 + 1
    empty = render_reflect_text(replace(report, audit_record_ids=(), dry_run=True)).splitlines()
    assert empty[1] == "Dry Run: true" and empty[-3:] == ["Audit Records: 0", "", "Candidates: 0"]


# -- recurrence ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "speaker", "states"),
    [
        ("Deploys of the payments service need a second reviewer.", None, True),
        ("Should we move the ledger to Postgres 16?", None, False),  # a question states nothing
        ("Bye Nate! See you soon.", "Joanna", False),  # small talk: too short
        ("Glad I could help. You've got this, you really do!", "Jon", False),  # of the listener as much
        ("I finally finished my screenplay and sent it to three film festivals last week.", "Joanna", True),
        ("对账问题请联系财务部的王芳，她负责每月的对账。", "Ana", True),  # a word per character
        ("好的，谢谢！", "Ana", False),
    ],
)
def test_what_states_something(content, speaker, states):
    assert states_something(memory(content=content, speaker=speaker)) is states


def test_a_fact_recurs_when_said_again_on_another_occasion_or_named_again():
    close = np.array([[1.0, 0.0], [0.8, 0.6], [0.0, 1.0]])  # rows 0 and 1 at cosine 0.8, row 2 far
    said = [
        memory(id="a", content="The settlement cutoff is 17:00 CET for EU cards.", session_id="s1"),
        memory(id="b", content="Finance says the EU card settlement cutoff is 17:00 CET.", session_id="s2"),
        memory(id="c", content="The refund runbook lives in the ops repository now.", session_id="s3"),
    ]
    found = find_recurrence(said, close, min_agreement=0.65)
    assert found is not None and found.rows == (0, 1) and found.sessions == 2 and found.names == ("17:00",)
    assert found.agreement == 0.8 and found.said == said[0].content
    same_session = [replace(m, session_id="s1") for m in said]
    assert find_recurrence(same_session, close, min_agreement=0.65) is None  # one occasion: nothing recurs
    apart = np.array([[1.0, 0.0], [0.6, 0.8], [-1.0, 0.0]])  # 0.6 at most, and no name in common
    unnamed = [replace(m, content=m.content.replace("17:00 ", "")) for m in said]
    assert find_recurrence(unnamed, apart, min_agreement=0.65) is None
    keyed = [replace(unnamed[0], semantic_key="bug:PAY-2291"), replace(unnamed[1], semantic_key="bug:PAY-2291/fix")]
    found = find_recurrence(keyed, apart[:2], min_agreement=0.65)
    assert found is not None and found.names == ("bug:PAY-2291",) and found.agreement == 0.0
