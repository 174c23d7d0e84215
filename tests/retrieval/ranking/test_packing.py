"""The greedy token packer: budgets, rank order, honest reports, never an empty pack."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from retrieval.ranking import ELLIPSIS, MIN_SHORTENED_TOKENS, PackCandidate, pack_context, token_counter

counter = token_counter()

words = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=12)
bodies = st.lists(words, min_size=1, max_size=60).map(" ".join).filter(lambda t: t.strip() != "")
candidates = st.lists(
    st.tuples(st.sampled_from(["episodic", "semantic"]), st.text(min_size=1, max_size=20).filter(str.strip), bodies),
    min_size=1,
    max_size=20,
).map(
    lambda rows: [
        PackCandidate(f"id-{i:03d}", f"2026-11-29 · {t} · {p.strip()}", b) for i, (t, p, b) in enumerate(rows)
    ]
)


@settings(max_examples=300, deadline=None)
@given(candidates, st.integers(1, 50), st.integers(1, 1200))
def test_pack_respects_budgets_and_reports_truthfully(ranked, max_items, max_tokens):
    pack = pack_context(ranked, max_items, max_tokens, counter)
    assert counter.count(pack.context_text) == pack.used_tokens
    assert pack.used_tokens <= max_tokens
    assert len(pack.items) <= max_items
    assert pack.context_text == "".join(item.text for item in pack.items)
    ranks = [item.rank for item in pack.items]
    assert ranks == sorted(ranks), "rank order kept"
    assert len(set(item.id for item in pack.items)) == len(pack.items)
    assert pack.shortened == sum(item.shortened for item in pack.items)
    packed = {item.rank for item in pack.items}
    assert pack.dropped == sum(1 for rank in range(min(max_items, len(ranked))) if rank not in packed)
    for number, item in enumerate(pack.items, start=1):
        candidate = ranked[item.rank]
        whole = f"[{number}] {candidate.header}\n{candidate.body.strip()}\n"
        assert (item.text != whole) == item.shortened
        assert item.tokens == counter.count(item.text)
    assert pack.items, "a match never yields an empty pack"
    assert pack.items[0].rank == 0, "the top item is always packed"


@settings(max_examples=100, deadline=None)
@given(candidates, st.integers(1, 50), st.integers(MIN_SHORTENED_TOKENS, 1200))
def test_pack_never_empty_with_a_reasonable_budget(ranked, max_items, max_tokens):
    pack = pack_context(ranked, max_items, max_tokens, counter)
    assert pack.context_text.strip()


def test_everything_fits_nothing_dropped():
    ranked = [PackCandidate(f"m{i}", "h", f"fact number {i}.") for i in range(3)]
    pack = pack_context(ranked, 8, 1500, counter)
    assert [i.id for i in pack.items] == ["m0", "m1", "m2"]
    assert pack.context_text == "[1] h\nfact number 0.\n[2] h\nfact number 1.\n[3] h\nfact number 2.\n"
    assert (pack.dropped, pack.shortened) == (0, 0)


def test_item_limit_is_not_a_drop():
    ranked = [PackCandidate(f"m{i}", "h", f"fact {i}") for i in range(5)]
    pack = pack_context(ranked, 2, 1500, counter)
    assert [i.id for i in pack.items] == ["m0", "m1"]
    assert pack.dropped == 0


def test_long_item_is_shortened_at_a_sentence_boundary():
    long_body = "First sentence is short. " + "Second sentence goes on and on " * 40 + "."
    ranked = [PackCandidate("a", "h", long_body)]
    pack = pack_context(ranked, 8, 40, counter)
    (item,) = pack.items
    assert item.shortened
    assert item.text == "[1] h\nFirst sentence is short." + ELLIPSIS + "\n" or item.text.endswith(ELLIPSIS + "\n")
    assert pack.used_tokens <= 40


def test_item_that_cannot_fit_is_skipped_and_a_later_one_packed():
    big = "word " * 400
    ranked = [
        PackCandidate("top", "h", "the top memory"),
        PackCandidate("big", "h", big),
        PackCandidate("small", "h", "tiny"),
    ]
    top_tokens = counter.count("[1] h\nthe top memory\n")
    small_tokens = counter.count("[2] h\ntiny\n")
    budget = top_tokens + small_tokens + 3  # too little to shorten "big" (< MIN_SHORTENED_TOKENS)
    assert budget - top_tokens < MIN_SHORTENED_TOKENS
    pack = pack_context(ranked, 8, budget, counter)
    assert [i.id for i in pack.items] == ["top", "small"]
    assert pack.dropped == 1
    assert pack.shortened == 0


def test_top_item_alone_over_budget_is_shortened_not_dropped():
    ranked = [PackCandidate("a", "a long header " * 10, "content " * 100)]
    pack = pack_context(ranked, 8, 5, counter)
    assert len(pack.items) == 1 and pack.items[0].shortened
    assert 0 < pack.used_tokens <= 5


def test_a_shortened_chinese_item_keeps_its_header():
    """Before: a Chinese text has no space to cut at, so a shortened item fell to the last resort, which
    dropped its `[n] date · type · path` line; an English one kept it."""
    chinese = "支付宝回调重复通知会导致订单状态被覆盖，现在用订单号去重并记录每一次回调的时间和结果" * 3
    english = "The Alipay callback notified twice and overwrote the order state " * 3
    for body in (chinese, english):
        pack = pack_context([PackCandidate("a", "2026-11-29 · episodic · payments/bugs", body)], 8, 40, counter)
        (item,) = pack.items
        assert item.text.startswith("[1] 2026-11-29 · episodic · payments/bugs\n") and item.shortened
        assert pack.used_tokens <= 40 and "\ufffd" not in item.text
    tiny = pack_context([PackCandidate("a", "2026-11-29 · episodic · payments/bugs", chinese)], 8, 22, counter)
    assert tiny.items[0].text.startswith("[1] 2026-11-29") and tiny.used_tokens <= 22
