"""reflect on real stores: SQLite, Qdrant Edge (and qdrant-client local mode), the real model where
meaning matters. Dry run against real run, the second pass, filters, conflicts and failing audits."""

from __future__ import annotations

import json
import random
import uuid
from dataclasses import asdict, replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given
from hypothesis import settings as hsettings
from hypothesis import strategies as st
from sqlalchemy import text

from compactor import (
    ReflectReport,
    ReflectRequest,
    ReflectSettings,
    list_audit,
    prepare_plan,
    reflect,
    render_reflect_text,
)
from compactor.apply import apply_plan
from compactor.plan import SUMMARIZED_KEY, USED_KEY
from retrieval import (
    ConflictError,
    MemoryStatus,
    PermissionDeniedError,
    Principal,
    StoreError,
    archive_memory,
    get_memory,
    import_records,
)
from retrieval.domain import format_time
from tests.support import BACKENDS, TEST_DATA, pack_for

NOW = datetime(2026, 11, 29, 12, 0, tzinfo=UTC)
ALICE = Principal(owner_id="alice", agent_id="a1", team_ids=("team-a",))
TOPICS = json.loads((TEST_DATA / "topic_clusters.json").read_text())["topics"]
EVERYTHING = "2000-01-01T00:00:00Z"


def ago(**delta: float) -> str:
    return format_time(NOW - timedelta(**delta))


def line(content: str, **fields: Any) -> dict[str, Any]:
    return {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, content + json.dumps(fields, sort_keys=True))),
        "content": content,
        "path": "notes",
        "type": "episodic",
        "occurred_at": ago(hours=2),
        "created_at": ago(hours=2),
        **fields,
    }


HELIX = "The user's favourite editor is Helix with the default keymap."
EDITOR_QUESTIONS = ("Which editor does the user like?", "What keymap does the user use?", "Is Helix set up?")


def read_for(engine: Any, memory_id: str, questions: tuple[str, ...]) -> None:
    """What packs and lists record for a memory they show (usecases/reads.py), once per question."""
    for question in questions:
        engine.read_tracker.record([memory_id], question=question)
    engine.read_tracker.flush()


def seed_lines() -> list[dict[str, Any]]:
    """Two topics from one day's session (to summarize), one topic over three days (to promote), a
    memory read often (to promote alone), and memories to expire, decay, archive, or leave alone."""
    lines = []
    for name in ("postgres-migration", "flaky-ci"):
        lines += [line(s, session_id=f"s-{name}", occurred_at=ago(hours=8 - i)) for i, s in enumerate(TOPICS[name])]
    lines += [
        line(s, session_id=f"trip-{i}", occurred_at=ago(days=4 - i, hours=1), created_at=ago(days=4 - i, hours=1))
        for i, s in enumerate(TOPICS["japan-trip"])
    ]
    lines += [
        line(HELIX, access_count=9, last_accessed_at=ago(hours=1)),
        line("Temporary door code 4410 for the co-working space.", expires_at=ago(hours=1), path="access"),
        line("Old note about a retired build server.", type="semantic", created_at=ago(days=200), importance=0.5),
        line(
            "A fairly old meeting note about quarterly planning.",
            type="semantic",
            created_at=ago(days=70),
            importance=0.6,
        ),
        line("Pinned: the user's name is Ana.", type="semantic", created_at=ago(days=400), metadata={"pinned": True}),
        line("A sure fact read long ago.", type="semantic", created_at=ago(days=400), confidence=0.95),
    ]
    return lines


@pytest.fixture(params=BACKENDS)
def seeded(request, make_engine, real_embedder, clock):  # type: ignore[no-untyped-def]
    clock.moment = NOW
    engine = make_engine(real_embedder, backend=request.param, clock=clock)
    lines = seed_lines()
    import_records(engine, Principal.local("alice"), lines)
    read_for(engine, next(x["id"] for x in lines if x["content"] == HELIX), EDITOR_QUESTIONS)
    import_records(
        engine,
        Principal.local("bob"),
        [line("Bob's own note about the Postgres 16 migration on staging.", created_at=ago(days=300))],
    )
    return engine


def state(engine) -> tuple[list[dict[str, Any]], int]:  # type: ignore[no-untyped-def]
    """Every record as stored, and the number of audit records: 'exactly as before' means equal."""
    records = sorted((m.to_dict() for m in engine.store.iterate()), key=lambda r: r["id"])
    with engine.store.sql_engine.connect() as connection:
        audits = connection.execute(text("SELECT count(*) FROM audit_log")).scalar_one()
    return records, audits


def comparable(report: ReflectReport) -> dict[str, Any]:
    return {k: v for k, v in asdict(report).items() if k not in ("dry_run", "audit_record_ids")}


def test_dry_run_is_exactly_what_the_real_run_applies(seeded):
    request = ReflectRequest(since=EVERYTHING, dry_run=True)
    before = state(seeded)
    dry = reflect(seeded, ALICE, request)
    assert state(seeded) == before  # a dry run writes nothing
    # decayed: the build-server and planning notes (a change of at least decay_min_change = 0.01 needs
    # about 5.3 idle days at half-life 180, so the trip notes of up to 4 days ago are left alone)
    # archived: none; the retired build server note is idle and decayed, but no other memory holds its words
    assert dry.counts == {"summarized": 2, "promoted": 2, "expired": 1, "decayed": 2, "archived": 0}
    assert dry.audit_record_ids == () and dry.dry_run is True

    real = reflect(seeded, ALICE, replace(request, dry_run=False))
    assert comparable(real) == comparable(dry)
    assert len(real.audit_record_ids) == sum(dry.counts.values())

    summaries = {s["members"]: s for s in real.summaries}
    assert set(summaries) == {5}
    for summary in real.summaries:
        made = get_memory(seeded, ALICE, summary["id"])
        assert made.type.value == "episodic" and made.source == "reflect" and len(made.derived_from) == 5
        for member_id in made.derived_from:
            member = get_memory(seeded, ALICE, member_id)  # kept and readable
            assert member.status == MemoryStatus.ACTIVE and member.metadata[SUMMARIZED_KEY] == made.id
        stored = [seeded.store.get(i).content for i in made.derived_from]  # inspection, not a use
        topic = next(name for name, sentences in TOPICS.items() if stored[0] in sentences)
        assert all(content in TOPICS[topic] for content in stored)
    recurring, single = sorted(real.promotions, key=lambda p: -p["members"])
    assert recurring["members"] == 5 and recurring["type"] == "semantic" and recurring["days"] == 5
    assert single["members"] == 1 and "Helix" in single["content"]
    assert get_memory(seeded, ALICE, single["derived_from"][0]).metadata[USED_KEY] == single["id"]
    assert [e["expires_at"] is not None for e in real.lifecycle["expired"]] == [True]

    records = {r["id"]: r for r in state(seeded)[0]}
    retired = next(r for r in records.values() if "retired build server" in r["content"])
    assert retired["status"] == "active" and retired["importance"] == pytest.approx(0.5 * 2 ** (-200 / 180), abs=1e-4)
    decayed = {d["id"]: d for d in real.lifecycle["decayed"]}
    planning = next(r for r in records.values() if "quarterly planning" in r["content"])
    assert (
        decayed[planning["id"]]["importance_after"]
        == planning["importance"]
        == pytest.approx(0.6 * 2 ** (-70 / 180), abs=1e-4)
    )
    assert planning["metadata"]["importance_base"] == 0.6
    untouched = [r for r in records.values() if "Pinned" in r["content"] or "sure fact" in r["content"]]
    assert [r["version"] for r in untouched] == [1, 1]
    assert all(r["version"] == 1 for r in records.values() if r["owner_id"] == "bob")

    # the summary is in the index and recalled: packed, or collapsed into the member whose words it took
    pack = pack_for(seeded, ALICE, "Postgres 16 migration pg_trgm extension on staging", max_items=8)
    made = {s["id"] for s in real.summaries}
    assert any(item.id in made for item in pack.items) or any(
        c.id in made and c.reason == "derived" for c in pack.retrieval_plan.collapsed
    )
    assert seeded.index.count() == seeded.store.count()

    again = reflect(seeded, ALICE, request)
    assert again.counts == {"summarized": 0, "promoted": 0, "expired": 0, "decayed": 0, "archived": 0}, again[
        "promotions"
    ]


def test_only_what_another_memory_holds_word_for_word_is_archived(make_engine, fake_embedder, clock):
    """Archiving hides; it may hide only what lives on elsewhere (archive must not take
    what an agent later asks about). An idle note is archived once a promotion holds all its words."""
    clock.moment = NOW
    engine = make_engine(fake_embedder, clock=clock)
    note = "The staging database password rotates every first Monday."
    import_records(
        engine,
        Principal.local("alice"),
        [
            line(
                note,
                access_count=6,
                created_at=ago(days=600),
                last_accessed_at=ago(days=600),
                occurred_at=ago(days=600),
            ),
            line("An idle note nobody else repeats.", created_at=ago(days=600), occurred_at=ago(days=600)),
        ],
    )
    noted = next(m.id for m in engine.store.iterate() if m.content == note)
    # read for three questions 600 days ago (the store's bookkeeping write, with that day's time)
    engine.store.record_access({noted: 0}, ago(days=600), [(noted, f"question-{i}") for i in range(3)])
    first = reflect(engine, ALICE, ReflectRequest(since=EVERYTHING))
    assert first.counts["promoted"] == 1 and first.counts["archived"] == 0  # carried only from this pass on
    second = reflect(engine, ALICE, ReflectRequest(since=EVERYTHING))
    archived = [get_memory(engine, ALICE, a["id"]) for a in second.lifecycle["archived"]]
    assert [m.content for m in archived] == [note]
    assert [m.status for m in archived] == [MemoryStatus.ARCHIVED]
    pack = pack_for(engine, ALICE, "staging database password rotation")
    assert note in pack.context_text  # its words are still recalled, through the promotion


def test_a_dry_run_text_lists_each_candidate_and_what_the_limit_left_out(seeded):
    """The new user's finding: a dry run showed only counts, and the candidate limit cut silently."""
    dry = reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING, dry_run=True))
    lines = render_reflect_text(dry).splitlines()
    listed = [line for line in lines[lines.index(f"Candidates: {sum(dry.counts.values())}") + 1 :] if line[:2] == "- "]
    assert len(listed) == sum(dry.counts.values())
    expired = next(line for line in listed if line.startswith("- expire-"))
    assert "Temporary door code 4410" in expired and "has passed" in expired
    summary = next(line for line in listed if line.startswith("- summarize-"))
    assert "(+3 more)" in summary and "memories within cosine distance" in summary  # the new one and 5 members
    assert not any(line.startswith("Left out:") for line in lines)
    episodes = sum(1 for m in seeded.store.iterate("alice") if m.type.value == "episodic")
    cut = reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING, dry_run=True, limit=4))
    assert episodes > 4 and cut.candidates["left_out"] == episodes - 4
    assert render_reflect_text(cut).splitlines()[-1].startswith(f"Left out: {episodes - 4} episodes of the window")


def test_audit_records_hold_before_and_after(seeded):
    real = reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING))
    records = list_audit(seeded, ALICE, limit=100)
    assert sorted(r.id for r in records) == sorted(real.audit_record_ids)
    assert [r.created_at for r in records] == sorted((r.created_at for r in records), reverse=True)
    assert {r.plan_id for r in records} == {real.plan_id}
    assert {r.actor for r in records} == {"alice/a1"}
    expired = list_audit(seeded, ALICE, action="expiry")
    assert len(expired) == 1
    (only,) = expired[0].memory_ids
    assert expired[0].before[only] == {"status": "active", "version": 1}  # only what changed
    assert expired[0].after[only]["status"] == "expired" and expired[0].after[only]["version"] == 2
    summary = list_audit(seeded, ALICE, action="summarize")[0]
    created = summary.memory_ids[0]
    assert summary.before[created] is None and summary.after[created]["derived_from"] == summary.memory_ids[1:]
    assert list_audit(seeded, Principal(owner_id="bob"), limit=100) == []  # another tenant sees none
    assert list_audit(seeded, ALICE, since=format_time(NOW + timedelta(seconds=1))) == []


def test_a_concurrent_change_between_plan_and_apply_leaves_everything_as_it_was(seeded):
    plan = prepare_plan(seeded, ALICE, ReflectRequest(since=EVERYTHING))
    member_id = plan.of("summarize")[0].pairs[1][1].id
    archive_memory(seeded, ALICE, member_id)  # another writer moves one planned memory
    before = state(seeded)
    with pytest.raises(ConflictError, match=member_id):
        apply_plan(seeded, plan, "alice/a1")
    assert state(seeded) == before
    # planning again on what is there now succeeds
    assert reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING)).counts["summarized"] >= 1


def test_a_failing_audit_write_rolls_the_whole_run_back(seeded):
    before = state(seeded)
    with seeded.store.sql_engine.begin() as connection:  # a real fault of the store, not a patch
        connection.execute(
            text(
                "CREATE TRIGGER audit_full BEFORE INSERT ON audit_log WHEN NEW.action = 'decay' "
                "BEGIN SELECT RAISE(ABORT, 'audit log is full'); END"
            )
        )
    with pytest.raises(StoreError, match="nothing was applied"):
        reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING))
    assert state(seeded) == before
    with seeded.store.sql_engine.begin() as connection:
        connection.execute(text("DROP TRIGGER audit_full"))
    assert reflect(seeded, ALICE, ReflectRequest(since=EVERYTHING)).counts["decayed"] == 2


def test_the_same_evidence_is_promoted_once(seeded):
    first = reflect(seeded, ALICE, ReflectRequest(actions_csv="promote", since=EVERYTHING))
    assert first.counts["promoted"] == 2
    helix = next(p["derived_from"][0] for p in first.promotions if p["members"] == 1)
    seeded.store.record_access({helix: 20}, format_time(NOW))
    again = reflect(seeded, ALICE, ReflectRequest(actions_csv="promote", since=EVERYTHING))
    assert again.counts["promoted"] == 0


def test_window_limit_and_filters_bound_the_pass(seeded):
    recent = reflect(seeded, ALICE, ReflectRequest(dry_run=True, time_window_hours=0.5))
    assert recent.candidates["episodes"] == 0 and recent.counts["summarized"] == 0
    assert recent.filters["time_window_hours"] == 0.5
    small = reflect(seeded, ALICE, ReflectRequest(dry_run=True, since=EVERYTHING, limit=2, actions_csv="summary"))
    assert small.candidates["episodes"] == 2 and small.filters["limit"] == 2
    elsewhere = reflect(seeded, ALICE, ReflectRequest(dry_run=True, since=EVERYTHING, path_filter="access%"))
    assert elsewhere.counts == {"summarized": 0, "promoted": 0, "expired": 1, "decayed": 0, "archived": 0}
    other_bucket = reflect(seeded, ALICE, ReflectRequest(dry_run=True, since=EVERYTHING, bucket="work"))
    assert sum(other_bucket.counts.values()) == 0
    text_report = render_reflect_text(small)
    assert text_report.splitlines()[:3] == ["### Memory Reflect Report", "Dry Run: true", "Actions: summarize"]


def test_team_memories_change_only_for_members_who_ask(make_engine, fake_embedder, clock):
    clock.moment = NOW
    engine = make_engine(fake_embedder, clock=clock)
    old = ago(days=300)
    import_records(
        engine,
        Principal.local("alice"),
        [
            line("Team runbook: restart the ingest workers after a deploy.", team_id="team-a", created_at=old),
            line("Alice's personal reminder about the dentist.", created_at=old),
        ],
    )
    import_records(
        engine, Principal.local("carol"), [line("Carol's team note on dashboards.", team_id="team-a", created_at=old)]
    )
    personal = reflect(engine, ALICE, ReflectRequest(actions_csv="decay"))
    (only,) = personal.lifecycle["decayed"]
    assert "dentist" in get_memory(engine, ALICE, only["id"]).content
    outsider = Principal(owner_id="mallory", team_ids=("team-x",))
    before = state(engine)
    with pytest.raises(PermissionDeniedError):
        reflect(engine, outsider, ReflectRequest(actions_csv="decay", team_id="team-a"))
    assert state(engine) == before
    team = reflect(engine, ALICE, ReflectRequest(actions_csv="decay", team_id="team-a"))
    assert team.counts["decayed"] == 2
    assert {get_memory(engine, ALICE, a["id"]).team_id for a in team.lifecycle["decayed"]} == {"team-a"}
    assert list_audit(engine, Principal(owner_id="carol", team_ids=("team-a",)))[0].team_id == "team-a"


# -- properties over random stores and requests ------------------------------------------------

WORDS = ["deploy", "database", "migration", "cache", "login", "invoice"]  # few, so that notes overlap and cluster


def random_store(seed: int) -> list[tuple[str, dict[str, Any]]]:
    """20-40 (owner, import line) pairs drawn from a seeded generator: owners, teams, buckets, paths,
    ages, sessions, reads, expiries, importances and types, with notes that overlap enough to cluster."""
    rng = random.Random(seed)
    made = []
    for index in range(rng.randint(20, 40)):
        when = ago(hours=rng.choice([1, 3, 5, 20, 30, 24 * 3, 24 * 100, 24 * 300]))
        fields: dict[str, Any] = {
            "id": str(uuid.UUID(int=rng.getrandbits(128))),
            "content": " ".join(rng.sample(WORDS, rng.randint(2, 3))) + f" note {index % 3}",
            "path": f"notes/{rng.choice('ab')}",
            "type": rng.choice(["episodic", "episodic", "semantic"]),
            "occurred_at": when,
            "created_at": when,
            "bucket": rng.choice(["personal", "personal", "work"]),
            "importance": rng.choice([0.05, 0.5, 0.9]),
            "access_count": rng.choice([0, 0, 1, 6]),
        }
        team = rng.choice([None, None, None, "team-a", "team-b"])
        if team:
            fields["team_id"] = team
        if rng.random() < 0.8:
            fields["session_id"] = f"s{rng.randint(1, 3)}"
        expiry = rng.choice([None, None, None, -5, 50])
        if expiry is not None:
            fields["expires_at"] = format_time(NOW + timedelta(hours=expiry))
        made.append((rng.choice(["alice", "alice", "alice", "bob"]), fields))
    return made


request_specs = st.fixed_dictionaries(
    {
        "actions_csv": st.sampled_from(
            [None, "summarize", "promote,archive", "decay,expire", "summary,importance_decay"]
        ),
        "bucket": st.sampled_from(["%", "work"]),
        "team_id": st.sampled_from([None, "team-a"]),
        "since": st.sampled_from([None, "2020-01-01T00:00:00Z"]),
        "limit": st.sampled_from([3, 500]),
        "path_filter": st.sampled_from(["%", "notes/%", "notes/a"]),
    }
)


@hsettings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32), asked=request_specs)
def test_properties_of_a_pass(make_engine, fake_embedder, clock, seed, asked):
    clock.moment = NOW
    engine = make_engine(fake_embedder, clock=clock, name=f"p-{uuid.uuid4().hex}")
    try:
        for owner, fields in random_store(seed):
            import_records(engine, Principal.local(owner), [fields])
        request = ReflectRequest(**asked)
        rules = ReflectSettings(promote_min_words=0)  # these notes are short; let them be promoted too
        dry = reflect(engine, ALICE, replace(request, dry_run=True), rules)
        planned = prepare_plan(engine, ALICE, replace(request, dry_run=True), rules)
        before = {m.id: m for m in engine.store.iterate()}
        real = reflect(engine, ALICE, replace(request, dry_run=False), rules)
        assert comparable(real) == comparable(dry) and real.plan_id == planned.plan_id
        stored = {m.id: m for m in engine.store.iterate()}
        assert {a.id: a for c in planned.changes for _, a in c.pairs} == {
            i: stored[i] for c in planned.changes for i in c.memory_ids
        }  # applied exactly as planned
        for name, count in real.counts.items():
            event(f"{name}: {'some' if count else 'none'}")

        # nothing outside the filters, nor another owner's personal memory, was touched
        after = {m.id: m for m in engine.store.iterate()}
        changed = [i for i in before if before[i] != after[i]]
        options_bucket = None if asked["bucket"] == "%" else asked["bucket"]
        for memory_id in changed:
            memory = before[memory_id]
            if asked["team_id"]:
                assert memory.team_id == asked["team_id"]
            else:
                assert memory.team_id is None and memory.owner_id == "alice"
            assert options_bucket is None or memory.bucket == options_bucket
            assert asked["path_filter"] == "%" or memory.path.startswith(asked["path_filter"].rstrip("%"))
        created = [after[i] for i in after if i not in before]
        assert len(created) == real.counts["summarized"] + real.counts["promoted"]
        assert all(set(m.derived_from) <= set(changed) for m in created)

        again = reflect(engine, ALICE, replace(request, dry_run=True), rules)
        assert again.counts["summarized"] == again.counts["promoted"] == 0, (again.promotions, asked)
        assert again.counts["decayed"] == 0 or asked["limit"] == 3  # a small limit may reach further now
    finally:
        engine.close()


def test_leaving_out_a_summary_that_an_archive_relies_on_is_a_conflict_that_writes_nothing(
    make_engine, real_embedder, clock
):  # type: ignore[no-untyped-def]
    """An idle member is archived in the pass that summarizes it into a memory holding all its words;
    without that summary the archive has no ground, so excluding one without the other is refused."""
    clock.moment = NOW
    engine = make_engine(real_embedder, clock=clock)
    old = ago(days=600)
    import_records(
        engine,
        Principal.local("alice"),
        [line(s, session_id="s-old", occurred_at=old, created_at=old) for s in TOPICS["postgres-migration"][:3]],
    )
    dry = reflect(engine, ALICE, ReflectRequest(since=EVERYTHING, dry_run=True, actions_csv="summarize,archive"))
    (summary,) = [s["proposal_id"] for s in dry.summaries]
    assert dry.counts["archived"] == 3
    before = state(engine)
    with pytest.raises(ConflictError, match="changes other proposals"):
        reflect(
            engine,
            ALICE,
            ReflectRequest(since=EVERYTHING, actions_csv="summarize,archive"),
            expected_plan=dry.plan_digest,
            exclude=[summary],
        )
    assert state(engine) == before
    archives = [a["proposal_id"] for a in dry.lifecycle["archived"]]
    done = reflect(
        engine,
        ALICE,
        ReflectRequest(since=EVERYTHING, actions_csv="summarize,archive"),
        expected_plan=dry.plan_digest,
        exclude=[summary, *archives],
    )
    assert done.counts == {"summarized": 0, "promoted": 0, "expired": 0, "decayed": 0, "archived": 0}
    records, audits = state(engine)  # nothing changed; the reviewer's "no" to each proposal is recorded
    assert sorted(done.excluded) == sorted([summary, *archives]) and records == before[0]
    assert audits == before[1] + len(done.excluded) == before[1] + len(list_audit(engine, ALICE, action="decline"))


def test_a_proposal_turned_down_stays_out_until_one_joins_or_it_is_reconsidered(make_engine, real_embedder, clock):  # type: ignore[no-untyped-def]
    """A real run that excludes a proposal records the reviewer's "no": the next dry runs hold it back and
    say why, the audit log names its members; a dry run that reconsiders shows it again and writes nothing;
    a memory joining its cluster makes another proposal, which is made; a real run that reconsiders
    records the clearing."""
    clock.moment = NOW
    engine = make_engine(real_embedder, clock=clock)
    alice = Principal.local("alice")
    migration, trip = TOPICS["postgres-migration"], TOPICS["japan-trip"]
    import_records(engine, alice, [line(s, session_id="s-db") for s in migration[:3]])
    import_records(engine, alice, [line(s, session_id="s-trip") for s in trip[:3]])
    ask = ReflectRequest(since=EVERYTHING, actions_csv="summarize")
    dry = reflect(engine, ALICE, replace(ask, dry_run=True))
    assert len(dry.summaries) == 2
    (no,) = [s["proposal_id"] for s in dry.summaries if "Postgres" in s["content"] or "postgres" in s["content"]]
    members = next(p["memory_ids"][1:] for p in dry.preview if p["proposal_id"] == no)
    done = reflect(engine, ALICE, ask, expected_plan=dry.plan_digest, exclude=[no])
    assert done.counts["summarized"] == 1 and done.excluded == (no,) and len(done.audit_record_ids) == 1
    for _ in range(2):
        again = reflect(engine, ALICE, replace(ask, dry_run=True))
        assert again.summaries == () and [h["proposal_id"] for h in again.held_back] == [no]
        held = again.held_back[0]
        assert sorted(held["memory_ids"]) == sorted(members) and held["declined_by"] == "alice/a1"
        assert held["reason"].startswith("turned down on 2026-11-29 by alice/a1")
        assert f"Held back: 1 (turned down by an earlier review)\n- {no}: turned down" in render_reflect_text(again)
    (declined,) = list_audit(engine, ALICE, action="decline")
    assert sorted(declined.memory_ids) == sorted(members) and declined.reason.startswith("turned down by the reviewer")
    shown = reflect(engine, ALICE, replace(ask, dry_run=True), reconsider=True)
    assert [s["proposal_id"] for s in shown.summaries] == [no] and shown.held_back == ()
    assert [h["proposal_id"] for h in reflect(engine, ALICE, replace(ask, dry_run=True)).held_back] == [no]
    import_records(engine, alice, [line(migration[3], session_id="s-db")])  # one joins: another proposal
    joined = reflect(engine, ALICE, replace(ask, dry_run=True))
    assert joined.held_back == () and len(joined.summaries) == 1 and joined.summaries[0]["proposal_id"] != no
    cleared = reflect(engine, ALICE, ask, reconsider=True)
    assert cleared.counts["summarized"] == 1 and [r.action for r in list_audit(engine, ALICE, action="reconsider")] == [
        "reconsider"
    ]
