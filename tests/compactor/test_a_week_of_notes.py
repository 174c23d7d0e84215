"""A new user's week of notes on a payments project, reflected on for real: what the pack keeps,
what clusters, what is promoted, and a review that leaves one proposal out (compactor/plan.py)."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from compactor import ReflectRequest, ReflectSettings, reflect
from retrieval import ConflictError, Principal, archive_memory, get_memory, import_records
from retrieval.domain import format_time, script_of
from retrieval.usecases import render_context_text
from tests.support import pack_for, recall_for, search_for

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ALICE = Principal(owner_id="alice", agent_id="a1")
WEEK = ReflectRequest(time_window_hours=240)
FIX = (
    "PAY-2291 root cause: we multiplied by 100 for zero-decimal currencies. "
    "refunds/amount.py now uses the ISO 4217 minor-units table."
)
FIX_SENTENCE = "refunds/amount.py now uses the ISO 4217 minor-units table."
BUG = [
    ("payments/bugs", "PAY-2291: refunds for JPY orders were 100x too large."),
    ("payments/bugs", FIX),
    ("payments/bugs", "Reran the refund job for PAY-2291 after the fix; amounts match Stripe now."),
]
CHINESE = [
    ("payments/rules", "退款审批规则：超过5000元的退款需要财务主管审批。"),
    ("payments/contacts", "对账问题请联系财务部的王芳，她负责每月的对账。"),
    ("payments/bugs", "支付宝回调重复通知的bug已修复，现在用订单号去重。"),
]
STANDUP = "The payments standup is at 9:30 in the Kestrel room."
UNRELATED = [  # six questions the standup note does not answer, for which it is still the best there is
    "When is the standup?",
    "Which room do we meet in?",
    "Is the standup at 9:30 or 10:00?",
    "Where is Kestrel?",
    "Who comes to the payments standup?",
    "Is there a meeting on Monday morning?",
]
VAULT = "The Stripe webhook secret lives in vault at payments/stripe/webhook."
OTHER = [
    ("payments/ops", "Deploys of the payments service need a second reviewer."),
    ("payments/ops", "Settlement files from Adyen arrive at 02:00 UTC."),
    ("payments/ops", STANDUP),
    ("payments/ops", VAULT),
]


def at(days: float) -> str:
    return format_time(NOW - timedelta(days=days))


def week() -> list[dict[str, Any]]:
    notes = [(2.0, BUG), (4.0, CHINESE), (5.0, OTHER)]
    return [
        {"content": text, "path": path, "occurred_at": at(day - i / 24), "session_id": f"day-{day}"}
        for day, group in notes
        for i, (path, text) in enumerate(group)
    ]


@pytest.fixture
def engine(make_engine, real_embedder, clock):  # type: ignore[no-untyped-def]
    clock.moment = NOW
    opened = make_engine(real_embedder, clock=clock)
    import_records(opened, Principal.local("alice"), week())
    return opened


def ids_of(engine: Any, texts: list[str]) -> list[str]:
    by_text = {m.content: m.id for m in engine.store.iterate("alice")}
    return [by_text[t] for t in texts]


def proposals(report: dict[str, Any]) -> list[str]:
    return [p["proposal_id"] for p in report.preview]


def test_reflect_on_a_week_keeps_the_fix_language_and_promotes_only_what_was_used(engine) -> None:  # type: ignore[no-untyped-def]
    (standup, vault) = ids_of(engine, [STANDUP, VAULT])
    for question in UNRELATED:  # ranked first (a pack of one) for six questions, never fetched
        assert [item.id for item in pack_for(engine, ALICE, question, max_items=1).items] == [standup]
    for question in ("Where is the Stripe webhook secret?", "vault path for webhooks", "Stripe secret"):
        assert vault in [item.id for item in pack_for(engine, ALICE, question).items]
    get_memory(engine, ALICE, vault)
    get_memory(engine, ALICE, vault)  # used: fetched by id twice, after being read for three questions

    report = reflect(engine, ALICE, WEEK)

    summaries = report.summaries
    assert len(summaries) == 1 and set(summaries[0]["derived_from"]) == set(ids_of(engine, [t for _, t in BUG]))
    assert summaries[0]["path"] == "payments/bugs"  # the members' common folder
    assert {tuple(p["derived_from"]) for p in report.promotions} == {(vault,)}  # the standup note is not
    pack = pack_for(engine, ALICE, "How did we fix PAY-2291?")
    assert FIX_SENTENCE in pack.context_text  # the fix itself, whether the summary or the member carries it
    for made in summaries + report.promotions:
        assert len({script_of(get_memory(engine, ALICE, i).content) for i in made["derived_from"]}) == 1


def test_with_the_model_trusted_on_chinese_the_unrelated_chinese_notes_would_cluster(engine) -> None:  # type: ignore[no-untyped-def]
    """The control: without the lexical check, the English model puts the three Chinese notes in one
    cluster, which is what the test above rules out."""
    trusting = ReflectSettings(embedded_scripts=("Latin", "Han"))
    dry = reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True), trusting)
    chinese = set(ids_of(engine, [t for _, t in CHINESE]))
    assert any(set(s["derived_from"]) == chinese for s in dry.summaries)
    checked = reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True))
    assert not any(set(s["derived_from"]) & chinese for s in checked.summaries)


def test_leaving_one_proposal_out_applies_exactly_the_others(engine) -> None:  # type: ignore[no-untyped-def]
    older = [
        {"content": "Old runbook: rotate the Adyen API key by hand.", "type": "semantic", "created_at": at(200)},
        {"content": "Old note: the sandbox merchant id is 4411.", "type": "semantic", "created_at": at(300)},
        {"content": "Freeze on payments deploys until Friday.", "expires_at": at(1), "created_at": at(3)},
    ]
    import_records(engine, Principal.local("alice"), [{"path": "payments/old", **line} for line in older])
    dry = reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True, actions_csv="summarize,decay"))
    summary = dry.summaries[0]["proposal_id"]
    assert summary in proposals(dry) and len(proposals(dry)) >= 2
    done = reflect(
        engine,
        ALICE,
        ReflectRequest(time_window_hours=240, actions_csv="summarize,decay"),
        expected_plan=dry.plan_digest,
        exclude=[summary],
    )
    assert proposals(done) == [p for p in proposals(dry) if p != summary] and done.excluded == (summary,)
    assert len(done.audit_record_ids) == len(proposals(dry)) - 1 and done.counts["summarized"] == 0
    made = dry.summaries[0]["id"]
    assert made not in {m.id for m in engine.store.iterate("alice")}
    asked = ReflectRequest(time_window_hours=240, dry_run=True, actions_csv="summarize,decay")
    again = reflect(engine, ALICE, asked)
    assert proposals(again) == [] and [h["proposal_id"] for h in again.held_back] == [summary]  # the "no" sticks
    assert proposals(reflect(engine, ALICE, asked, reconsider=True)) == [summary]  # until it is reconsidered


def test_an_exclusion_from_another_plan_writes_nothing(engine) -> None:  # type: ignore[no-untyped-def]
    dry = reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True))
    with pytest.raises(ConflictError, match="no proposal summarize-000000000000"):
        reflect(engine, ALICE, WEEK, expected_plan=dry.plan_digest, exclude=["summarize-000000000000"])
    assert reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True)) == dry


def test_a_summary_groups_the_notes_a_pack_holds_under_one_header_and_never_takes_a_place_of_its_own(engine) -> None:  # type: ignore[no-untyped-def]
    """While its members are live, the bug's summary never ranks as an item of its own: the three notes
    a pack holds are shown once, as one block under the summary's id (one header, not three), each
    note whole; the tokens saved are left for further memories (retrieval/ranking/grouping.py)."""
    question = "What does refunds/amount.py use now?"
    before = pack_for(engine, ALICE, question, max_tokens=1500)
    summary = reflect(engine, ALICE, WEEK).summaries[0]["id"]
    after = pack_for(engine, ALICE, question, max_tokens=1500)
    bug = ids_of(engine, [t for _, t in BUG])
    assert set(bug) <= {item.id for item in before.items}
    assert summary in {item.id for item in after.items} and not set(bug) & {item.id for item in after.items}
    assert {(c.id, c.into, c.reason) for c in after.retrieval_plan.collapsed} >= {(b, summary, "grouped") for b in bug}
    block = after.blocks[[item.id for item in after.items].index(summary)]
    for _, text in BUG:
        assert after.context_text.count(text) == 1 and f"- {text}" in block  # each note whole, once
    item = after.items[[i.id for i in after.items].index(summary)]
    by_id = {m.id: m for m in engine.store.iterate("alice")}
    lines = [line for line in block.splitlines() if line.startswith("- ")]
    assert [f"- {by_id[m.id].content}" for m in item.members] == lines  # each line cites its own memory
    assert all((m.type, m.path) == (by_id[m.id].type.value, by_id[m.id].path) for m in item.members)
    assert all(i.members == () for i in after.items if i.id != summary)
    text = render_context_text(after, engine.tokens)  # the MCP text cites the members too, never the summary
    cited = [line.split(" | ")[0].removeprefix("Reference: ") for line in text.splitlines() if "Reference: " in line]
    assert summary not in cited and cited.index(item.members[0].id) == [i.id for i in after.items].index(summary)
    assert cited[cited.index(item.members[0].id) :][: len(item.members)] == [m.id for m in item.members]
    assert f"Items: {len(cited)}" in text.splitlines() and len(cited) == len(after.items) - 1 + len(item.members)
    assert "Summary of" not in after.context_text  # the heading is the summary's own text, not shown
    assert after.budget.used_tokens < before.budget.used_tokens  # two headers saved, nothing else lost
    assert {t for _, t in BUG + OTHER if t in before.context_text} <= {
        t for _, t in BUG + OTHER if t in after.context_text
    }
    tight = pack_for(engine, ALICE, question, max_tokens=90)
    assert FIX_SENTENCE in tight.context_text and tight.budget.used_tokens <= 90


def test_a_summary_whose_member_was_archived_is_ranked_as_itself(engine) -> None:  # type: ignore[no-untyped-def]
    """Archived, the symptom's note is no longer in the ranking; the summary is then the only memory
    holding its words, so it takes a place of its own, heading and all."""
    summary = reflect(engine, ALICE, WEEK).summaries[0]["id"]
    symptom = ids_of(engine, [BUG[0][1]])[0]
    archive_memory(engine, ALICE, symptom)
    pack = pack_for(engine, ALICE, "Which orders had refunds that were too large?", max_tokens=1500)
    ids = [item.id for item in pack.items]
    assert summary in ids and symptom not in ids
    assert "Summary of 3 related memories" in pack.blocks[ids.index(summary)]
    assert "refunds for JPY orders were 100x too large" in pack.context_text


# The week: notes on one project that are neighbours in a small store and restate nothing
# (what was proposed as three "Recurring topic" facts), and one fact said again on three days.
CUTOFF = [
    "EU card settlement closes at 17:00 CET; a payment captured later settles the next business day.",
    "Reminder from finance: the EU settlement cutoff is 17:00 CET, anything captured after it settles a day later.",
    "Checked with the acquirer: EU card settlement still closes at 17:00 CET, later captures settle next business day.",
]
NEIGHBOURS = {
    6.0: [
        ("payments/risk", "The risk-engine sandbox answers 429 as soon as we send more than 50 requests per second."),
        ("payments/ledger", "The ledger is append-only: a correction is always a new entry, never an update of one."),
        ("payments/settlement", CUTOFF[0]),
    ],
    5.0: [
        ("payments/load", "The load test of checkout ran at 1,200 rps for ten minutes: p99 was 180 ms, no errors."),
        (
            "payments/ledger",
            "Migration 0142 adds ledger_entries.reversal_of so a reversal points at the entry it undoes.",
        ),
        ("payments/settlement", "Card payment retries back off exponentially, with at most 5 attempts per payment."),
    ],
    4.0: [
        ("payments/risk", "PR #815 adds jittered exponential backoff to the retries of the risk-engine client."),
        ("payments/ledger", "PR #812 renames ledger_entry.amt to amount_minor across the ledger service and tests."),
        ("payments/ops", "The refund runbook is in ops/runbooks/refunds.md, next to the settlement runbook."),
    ],
    3.0: [("payments/settlement", CUTOFF[1])],
    2.0: [("payments/settlement", CUTOFF[2])],
}


def test_only_a_fact_said_again_on_other_days_is_promoted_and_each_proposal_is_filed_under_its_members(  # type: ignore[no-untyped-def]
    make_engine, real_embedder, clock
) -> None:
    clock.moment = NOW
    engine = make_engine(real_embedder, clock=clock, name="neighbours")
    lines = [
        {"content": text, "path": path, "occurred_at": at(day - i / 24), "session_id": f"day-{day}"}
        for day, notes in NEIGHBOURS.items()
        for i, (path, text) in enumerate(notes)
    ]
    import_records(engine, Principal.local("alice"), lines)
    stored = {m.id: m for m in engine.store.iterate("alice")}
    asked = ReflectRequest(time_window_hours=240, dry_run=True)

    dry = reflect(engine, ALICE, asked)

    (promotion,) = dry.promotions
    assert {stored[i].content for i in promotion["derived_from"]} == set(CUTOFF)
    assert promotion["path"] == "payments/settlement"
    reason = next(p["reason"] for p in dry.preview if p["proposal_id"] == promotion["proposal_id"])
    assert reason.startswith(
        f'"{CUTOFF[0]}" restated in 3 memories over 3 sessions and 3 days (2026-11-23 to 2026-11-27)'
    )
    assert "cosine up to 0.9" in reason
    assert reason.endswith("filed under payments/settlement")
    for made in dry.summaries + dry.promotions:  # whatever else is proposed lies in one folder
        paths = {stored[i].path for i in made["derived_from"]}
        assert len(paths) == 1 and made["path"] == paths.pop()
    first_line = promotion["content"].splitlines()[1]
    assert "17:00 CET" in first_line  # the text leads with the fact that recurred

    real = reflect(
        engine, ALICE, replace(asked, dry_run=False), expected_plan=dry.plan_digest, exclude=[promotion["proposal_id"]]
    )
    assert real.excluded == (promotion["proposal_id"],)
    for _ in range(2):  # turned down, it stays out of the next dry runs
        again = reflect(engine, ALICE, asked)
        assert again.promotions == () and [h["proposal_id"] for h in again.held_back] == [promotion["proposal_id"]]


def test_notes_that_name_one_ticket_on_two_days_recur_though_their_words_differ(
    make_engine, real_embedder, clock
) -> None:  # type: ignore[no-untyped-def]
    clock.moment = NOW
    engine = make_engine(real_embedder, clock=clock, name="ticket")
    notes = [
        (3.0, "PAY-2291: refunds for JPY orders were 100x too large, reported by the Tokyo merchant."),
        (3.0, "Support asked whether the refund amounts for yen orders can be corrected by hand this week."),
        (1.0, "PAY-2291 is fixed: refunds/amount.py reads the ISO 4217 minor-units table for every currency."),
    ]
    import_records(
        engine,
        Principal.local("alice"),
        [{"content": t, "path": "payments/bugs", "occurred_at": at(d), "session_id": f"day-{d}"} for d, t in notes],
    )
    dry = reflect(engine, ALICE, ReflectRequest(time_window_hours=240, dry_run=True))
    reasons = [p["reason"] for p in dry.preview if p["action"] == "promote"]
    assert len(reasons) == 1 and "both name PAY-2291" in reasons[0] and "cosine" not in reasons[0], dry.preview


def test_search_and_recall_show_the_note_that_matched_never_the_summary_holding_it(engine) -> None:  # type: ignore[no-untyped-def]
    """While its notes are live, a summary only groups them in a pack; search and the light recall list
    the notes themselves, whole, so an agent that cites or edits a result's id touches the note."""
    summary = reflect(engine, ALICE, WEEK).summaries[0]["id"]
    (fix,) = ids_of(engine, [FIX])
    for question in ("PAY-2291 root cause", "zero-decimal currencies minor-units table", "How did we fix PAY-2291?"):
        searched = search_for(engine, ALICE, question, min_score=0.0).results
        recalled = recall_for(engine, ALICE, question).results
        for results in (searched, recalled):
            assert summary not in [r.id for r in results] and fix in [r.id for r in results]
            assert next(r.content for r in results if r.id == fix) == FIX
    symptom = ids_of(engine, [BUG[0][1]])[0]
    archive_memory(engine, ALICE, symptom)  # the summary is now the only readable copy of the symptom
    found = search_for(engine, ALICE, "Which orders had refunds that were too large?", min_score=0.0).results
    assert summary in [r.id for r in found] and symptom not in [r.id for r in found]
