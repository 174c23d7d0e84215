"""A pack never holds the same words twice: copies, near-duplicates and reflect's own memories collapse
into one, and recall_context says what collapsed."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import settings as hsettings
from hypothesis import strategies as st

from compactor import ReflectRequest, reflect
from retrieval import Memory, MemoryType, Principal, import_records
from retrieval.domain import carries, normalise
from retrieval.ranking import NEAR_DUPLICATE_COSINE, Collapsed, collapse_restatements
from tests.support import pack_for

ALICE = Principal(owner_id="alice")


def memory(memory_id: str, content: str, derived_from: tuple[str, ...] = ()) -> Memory:
    return Memory(
        id=memory_id,
        owner_id="alice",
        content=content,
        path="notes",
        type=MemoryType.EPISODIC,
        derived_from=derived_from,
    )


def test_a_copy_collapses_into_the_better_ranked_one() -> None:
    ranked = [
        memory("a", "The pool size is 20."),
        memory("b", "Deploys run at noon."),
        memory("c", "the pool  size is 20."),
    ]
    kept, collapsed = collapse_restatements(ranked, {}, 10)
    assert kept == [0, 1]
    assert collapsed == [Collapsed("c", "a", "contained")]


def test_a_longer_text_holding_a_kept_one_takes_its_place() -> None:
    ranked = [
        memory("short", "Pool size is 20."),
        memory("other", "Deploys run at noon."),
        memory("long", "We agreed: pool size is 20. It was 10 before the incident."),
    ]
    kept, collapsed = collapse_restatements(ranked, {}, 10)
    assert kept == [2, 1]  # the superset stands where the shorter one stood
    assert [(c.id, c.into, c.reason) for c in collapsed] == [("short", "long", "contained")]


def test_near_duplicates_by_vector() -> None:
    base = np.array([1.0, 0.0, 0.0], dtype=np.float32)
    close = np.array([1.0, 0.2, 0.0], dtype=np.float32)  # cosine 0.98
    far = np.array([1.0, 0.5, 0.0], dtype=np.float32)  # cosine 0.89
    assert (
        float(close @ base / np.linalg.norm(close)) >= NEAR_DUPLICATE_COSINE > float(far @ base / np.linalg.norm(far))
    )
    ranked = [
        memory("a", "Pool size twenty."),
        memory("b", "Twenty connections in the pool."),
        memory("c", "Pool of 20."),
    ]
    kept, collapsed = collapse_restatements(ranked, {"a": base, "b": close, "c": far}, 10)
    assert kept == [0, 2] and [(c.id, c.reason) for c in collapsed] == [("b", "near-duplicate")]


def test_a_summary_hides_a_member_only_when_it_holds_every_sentence_of_it() -> None:
    """The new user's finding: a summary kept the first of a fix's two sentences, and recall collapsed the
    fix into it; the second sentence, the fix itself, was nowhere in the pack."""
    fix = memory(
        "m1", "We multiplied by 100 for zero-decimal currencies. refunds/amount.py now uses the minor-units table."
    )
    partial = memory(
        "s",
        "Summary of 3 related memories (2023-05-08):\n- We multiplied by 100 for zero-decimal currencies.",
        derived_from=("m1", "m2", "m3"),
    )
    assert not carries(partial.content, fix.content)
    kept, collapsed = collapse_restatements([partial, fix], {}, 10)
    assert kept == [0, 1] and collapsed == []  # derived_from says nothing: the words decide
    whole = memory(
        "t",
        "Summary of 2 related memories (2023-05-08):\n- Alice: We multiplied by 100 for zero-decimal "
        "currencies.\n- Bo: The refund job reran.\n- Alice: refunds/amount.py now uses the minor-units table.",
    )
    assert carries(whole.content, fix.content)
    kept, collapsed = collapse_restatements([whole, fix], {}, 10)
    assert kept == [0] and [(c.id, c.into, c.reason) for c in collapsed] == [("m1", "t", "carried")]
    kept, collapsed = collapse_restatements([fix, whole], {}, 10)  # ranked first, the member stays itself
    assert kept == [0, 1] and collapsed == []


def test_keep_bounds_the_walk() -> None:
    ranked = [memory(str(i), f"Fact number {i} about something else entirely.") for i in range(10)]
    kept, _ = collapse_restatements(ranked, {}, 3)
    assert kept == [0, 1, 2]


@hsettings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.sampled_from(["alpha beta", "beta", "alpha beta gamma", "delta", "Delta.", "gamma delta"]),
        min_size=1,
        max_size=8,
    )
)
def test_no_kept_text_holds_another(texts: list[str]) -> None:
    ranked = [memory(str(i), t) for i, t in enumerate(texts)]
    kept, collapsed = collapse_restatements(ranked, {}, len(ranked))
    kept_texts = [normalise(texts[i]) for i in kept]
    for i, a in enumerate(kept_texts):
        assert all(i == j or a not in b for j, b in enumerate(kept_texts))
    assert len(kept) + len(collapsed) == len(ranked)  # every memory is kept or said to have collapsed


def test_recall_context_packs_a_promotion_or_its_evidence_not_both(make_engine, clock) -> None:  # type: ignore[no-untyped-def]
    """The new user's finding: after a real reflect, the original and its promoted copy were items 1 and 2."""
    engine = make_engine(clock=clock)
    note = "The connection pool size is 20 for the payments database after the incident review."
    import_records(
        engine,
        ALICE,
        [
            {
                "content": note,
                "path": "ops/db",
                "type": "episodic",
                "access_count": 9,
                "occurred_at": "2026-11-29T10:00:00Z",
            }
        ],
    )
    import_records(
        engine,
        ALICE,
        [{"content": f"Unrelated note {i} about lunch and the weather.", "path": "misc"} for i in range(5)],
    )
    (noted,) = [m.id for m in engine.store.iterate("alice") if m.content == note]
    for question in ("pool size?", "payments database connections", "what did the incident review change?"):
        pack_for(engine, ALICE, question)  # read for three questions (and fetched 9 times, imported)
    report = reflect(engine, ALICE, ReflectRequest(actions_csv="promote", since="2000-01-01T00:00:00Z"))
    assert report.counts["promoted"] == 1 and report.promotions[0]["derived_from"] == [noted]
    pack = pack_for(engine, ALICE, "connection pool size", max_items=8)
    contents = [engine.store.get(item.id).content for item in pack.items]  # type: ignore[union-attr]
    assert contents.count(note) == 1
    assert len(pack.retrieval_plan.collapsed) == 1
    assert pack.retrieval_plan.collapsed[0].into == pack.items[0].id


def test_a_text_across_two_kept_ones_is_no_restatement() -> None:
    """Review finding: a NUL in a memory matched across the joined kept texts and crashed recall."""
    ranked = [memory("1", "ab"), memory("2", "cd"), memory("3", "b\x00cd")]
    kept, collapsed = collapse_restatements(ranked, {}, 10)
    assert kept == [0, 2]  # it holds "cd" whole, so it takes that one's place; "ab" is not held
    assert [(c.id, c.into, c.reason) for c in collapsed] == [("2", "3", "contained")]
