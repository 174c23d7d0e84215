"""What a pack left out, by id and why (retrieval_plan.dropped), which the recall playground shows:
computed by hand from the unlimited pack of the same query on a real store."""

from __future__ import annotations

from retrieval import Principal, import_records
from tests.support import pack_for

ALICE = Principal(owner_id="alice")
QUERY = "deploy checklist"


def _store(make_engine):  # type: ignore[no-untyped-def]
    engine = make_engine()
    words = {  # distinct words, so that no two memories are near-duplicates that collapse into one
        "payments": "ledger refund card issuer settlement chargeback",
        "search": "index shard replica ranking synonym crawler",
        "billing": "invoice tax plan coupon proration dunning",
        "mail": "smtp bounce spam template queue relay",
        "auth": "token session password oauth scope login",
    }
    import_records(
        engine,
        ALICE,
        [
            {
                "content": f"deploy checklist for {name}: "
                + " ".join(f"{word}-{n}" for n in range(5) for word in vocabulary.split())
                + ".",
                "path": "ops",
                "importance": importance,
            }
            for (name, vocabulary), importance in zip(words.items(), (0.9, 0.7, 0.5, 0.3, 0.2), strict=True)
        ],
    )
    return engine


def test_an_unlimited_budget_drops_only_what_max_items_leaves(make_engine):  # type: ignore[no-untyped-def]
    engine = _store(make_engine)
    full = [i.id for i in pack_for(engine, ALICE, QUERY, max_items=50, max_tokens=12000).items]
    assert len(full) == 5
    pack = pack_for(engine, ALICE, QUERY, max_items=2, max_tokens=12000)
    assert [i.id for i in pack.items] == full[:2]
    # The packer reads 2 x max_items down the ranking: the next two are left out by the item limit.
    assert [(d.id, d.reason) for d in pack.retrieval_plan.dropped] == [
        (full[2], "item_limit"),
        (full[3], "item_limit"),
    ]
    assert pack.budget.dropped_items == 0


def test_a_tight_budget_shortens_the_top_and_drops_the_rest(make_engine):  # type: ignore[no-untyped-def]
    engine = _store(make_engine)
    full = [i.id for i in pack_for(engine, ALICE, QUERY, max_items=50, max_tokens=12000).items]
    pack = pack_for(engine, ALICE, QUERY, max_items=2, max_tokens=40)
    assert [(i.id, i.shortened) for i in pack.items] == [(full[0], True)]  # each memory is ~90 tokens
    assert [(d.id, d.reason) for d in pack.retrieval_plan.dropped] == [
        (full[1], "budget"),
        (full[2], "item_limit"),
        (full[3], "item_limit"),
    ]
    assert pack.budget.dropped_items == 1 and pack.budget.shortened_items == 1


def test_the_relevance_floor_is_named_as_the_reason(make_engine):  # type: ignore[no-untyped-def]
    engine = _store(make_engine)
    full = pack_for(engine, ALICE, QUERY, max_items=2, max_tokens=12000)
    scores = {d.id: d.score for d in full.retrieval_plan.dropped} | {i.id: i.score for i in full.items}
    pack = pack_for(engine, ALICE, QUERY, max_items=2, max_tokens=12000, relevance_floor=1.0)
    top = pack.items[0].score
    assert len(pack.items) == 1 and all(s < top for i, s in scores.items() if i != pack.items[0].id)
    assert [(d.id, d.reason) for d in pack.retrieval_plan.dropped] == [
        (i, "floor") for i in sorted(scores, key=lambda i: -scores[i]) if i != pack.items[0].id
    ]
    assert pack.budget.dropped_items == 0
