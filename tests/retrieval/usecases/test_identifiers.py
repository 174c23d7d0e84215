"""Exact identifiers win, and Chinese and Japanese memories are found by their words: the constructed
suite of tests/data/identifier_suite.json on the real model and both index backends, plus the
multilingual BM25 terms."""

from __future__ import annotations

import itertools
import json
from typing import Any

import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, import_records, remember
from retrieval.encoding import SparseEncoder, identifier_terms
from tests.support import BACKENDS, TEST_DATA, pack_for, search_for

SUITE = json.loads((TEST_DATA / "identifier_suite.json").read_text())
ALICE = Principal(owner_id="alice")


def test_identifier_terms() -> None:
    assert identifier_terms("PAY-2291") == ["xpayh2291", "n2291"]
    assert identifier_terms("bug:PAY-2291") == ["xbugcpayh2291", "xpayh2291", "n2291"]
    assert identifier_terms("4.12.1 and 41.2.1") == ["x4d12d1", "n4", "n12", "n1", "x41d2d1", "n41", "n2", "n1"]
    assert identifier_terms("pool size 20, p53") == ["n20", "n53"]
    assert identifier_terms("no identifiers here") == []


def test_a_look_alike_shares_only_the_number() -> None:
    sparse = SparseEncoder()
    query = set(sparse.query("PAY-2291").indices)
    assert len(query & set(sparse.document("PAY-2291 is open").indices)) == 3  # pay, 2291, and the whole id
    assert len(query & set(sparse.document("NOT-2291 is open").indices)) == 1  # 2291


@pytest.mark.parametrize(
    ("text", "minimum"),
    [
        ("青龙计划的向量数据库选型已经完成，下一步是性能测试。", 8),
        ("東京でラーメンを食べた。", 4),
        ("我们在 Qdrant Edge 上测试了 BM25。", 5),
    ],
)
def test_cjk_text_is_segmented_into_words(text: str, minimum: int) -> None:
    assert len(SparseEncoder().document(text).indices) >= minimum


def _filler() -> list[dict[str, Any]]:
    spec = SUITE["filler"]
    sentences = [
        f"{s.capitalize()} {v} {t}" for s, v, t in itertools.product(spec["subjects"], spec["verbs"], spec["tails"])
    ]
    return [
        {"content": f"{text} (note {i})", "path": "notes/filler", "type": "episodic"}
        for i, text in enumerate(sentences[: spec["count"]])
    ]


@pytest.fixture(params=BACKENDS)
def suite_engine(request, make_engine, real_embedder) -> tuple[MemoryEngine, dict[str, str]]:  # type: ignore[no-untyped-def]
    engine = make_engine(real_embedder, backend=request.param)
    ids = {}
    for memory in SUITE["memories"]:
        fields = {k: v for k, v in memory.items() if k != "key"}
        ids[memory["key"]] = remember(engine, ALICE, RememberRequest(**fields)).memory.id
    import_records(engine, ALICE, _filler())
    return engine, ids


@pytest.mark.parametrize("case", SUITE["queries"], ids=[q["query"] for q in SUITE["queries"]])
def test_the_memory_about_an_identifier_ranks_first(suite_engine, case: dict[str, Any]) -> None:  # type: ignore[no-untyped-def]
    engine, ids = suite_engine
    names = {v: k for k, v in ids.items()}
    pack = pack_for(engine, ALICE, case["query"], max_items=10, max_tokens=1500)
    order = [names.get(item.id, "filler") for item in pack.items]
    assert order[0] in case["first"], order
    for above in case["above"]:
        for below in case["below"]:
            if below in order:
                assert above in order and order.index(above) < order.index(below), order


def test_chinese_japanese_and_mixed_memories(make_engine, real_embedder) -> None:  # type: ignore[no-untyped-def]
    """The attack pass: 青龙计划, 向量数据库 and 牛肉面 got no BM25 candidate; a verbatim prefix found
    nothing; strict search for 青龙 returned the unrelated 牛肉面 memory."""
    engine = make_engine(real_embedder)
    notes = {
        "qinglong": "青龙计划的向量数据库选型已经完成，我们选择了 Qdrant Edge，下一步是性能测试。",
        "noodles": "午饭在公司楼下吃了一碗牛肉面，味道不错。",
        "tokyo": "東京オフィスの会議は毎週水曜日の午前十時に始まります。",
        "mixed": "The 青龙 project uses BM25 and dense vectors together for hybrid search.",
        "english": "The payments database connection pool size is 20.",
    }
    ids = {k: remember(engine, ALICE, RememberRequest(content=v, path="notes")).memory.id for k, v in notes.items()}
    names = {v: k for k, v in ids.items()}
    for query, expected in [
        ("青龙计划", "qinglong"),
        ("向量数据库", "qinglong"),
        ("牛肉面", "noodles"),
        ("青龙计划的向量数据库选型", "qinglong"),
        ("東京オフィスの会議", "tokyo"),
        ("connection pool size", "english"),
    ]:
        pack = pack_for(engine, ALICE, query, max_items=3)
        assert pack.retrieval_plan.candidates.bm25 >= 1, query
        assert names[pack.items[0].id] == expected, (query, [names[i.id] for i in pack.items])
    strict = search_for(engine, ALICE, "青龙")
    assert {names[r.id] for r in strict.results} <= {"qinglong", "mixed"} and strict.results


def test_a_store_of_the_english_tokenizer_moves_through_reindex(make_engine) -> None:  # type: ignore[no-untyped-def]
    """An old store's BM25 vectors were made by the English tokenizer: it refuses to open until
    `xmemo reindex` (the engine's reindex), which rebuilds them; then Chinese words are found."""
    from retrieval import ModelMismatchError
    from retrieval.engine import MemoryEngine
    from tests.support import FakeEmbedder, settings_for

    engine = make_engine(name="old")
    remember(engine, ALICE, RememberRequest(content="青龙计划的向量数据库选型已经完成。", path="notes"))
    engine.store.set_meta("sparse_model", "bm25:k1=1.2:b=0.75:avg_len=64.0")  # as the first release wrote it
    data_dir = engine.settings.data_dir
    engine.close()
    with pytest.raises(ModelMismatchError, match="reindex"):
        MemoryEngine(settings_for(data_dir, "edge"), embedder=FakeEmbedder())
    with MemoryEngine(settings_for(data_dir, "edge"), embedder=FakeEmbedder(), allow_model_change=True) as moving:
        assert moving.reindex() == 1
    with MemoryEngine(settings_for(data_dir, "edge"), embedder=FakeEmbedder()) as moved:
        pack = pack_for(moved, ALICE, "青龙计划", max_items=3)
        assert pack.retrieval_plan.candidates.bm25 == 1 and pack.items


def test_a_long_run_of_letters_costs_linear_time() -> None:
    """Review finding: unanchored, the identifier pattern retried inside every run of letters (16,000
    letters took 7.7 s); a remember of 64 KiB could hold a core for minutes."""
    from tests.support import finishes

    assert finishes(lambda: identifier_terms("a" * 65536 + " PAY-2291"), 30.0) == ["xpayh2291", "n2291"]


def test_the_memory_keyed_by_an_identifier_leads_the_notes_that_mention_it(make_engine, real_embedder) -> None:  # type: ignore[no-untyped-def]
    """Review finding: the ticket keyed `bug:PAY-2291` whose text does not repeat the id ranked behind a
    release note and a standup that mention it in passing. A key's identifier is the writer's own name
    for the fact; a word of a key (`ops` in `ops:pool`) is not one."""
    engine = make_engine(real_embedder)
    notes = {
        "ticket": ("Refunds over 10,000 EUR time out in the payments gateway; the fix is in review.", "bug:PAY-2291"),
        "release": ("Release 4.12.1 notes: fixed PAY-2288, upgraded the driver; PAY-2291 is still open.", None),
        "standup": ("Standup: we talked about PAY-2291 again, Dana needs the gateway logs first.", None),
        "pool": ("The payments database connection pool size is 20.", "ops:pool"),
        "ops": ("Ops status: the payments gateway status page is green this week.", None),
    }
    ids = {
        name: remember(engine, ALICE, RememberRequest(content=text, path="notes", semantic_key=key)).memory.id
        for name, (text, key) in notes.items()
    }
    names = {v: k for k, v in ids.items()}
    for query in ("What is the status of PAY-2291?", "pay-2291", "status of bug:PAY-2291"):
        pack = pack_for(engine, ALICE, query, max_items=3)
        assert names[pack.items[0].id] == "ticket", (query, [names[i.id] for i in pack.items])
        assert search_for(engine, ALICE, query).results[0].id == ids["ticket"], query
    assert pack.retrieval_plan.ranking["key_boost"] > 0
    # A plain word of a key names nothing: the ops note, not the pool's key, answers an ops question.
    pack = pack_for(engine, ALICE, "ops status of the payments gateway", max_items=3)
    assert names[pack.items[0].id] == "ops", [names[i.id] for i in pack.items]


def test_points_written_before_the_payload_held_keys_are_boosted_from_the_record(make_engine, real_embedder) -> None:  # type: ignore[no-untyped-def]
    """The index's payload carries each memory's key, so a query naming one reads no record; a shard
    written by an earlier release lacks the field until it is built again, and its keys come from SQL."""
    engine = make_engine(real_embedder)
    notes = {
        "ticket": ("Refunds over 10,000 EUR time out in the payments gateway; the fix is in review.", "bug:PAY-2291"),
        "standup": ("Standup: we talked about PAY-2291 again, Dana needs the gateway logs first.", None),
    }
    memories = {
        name: remember(engine, ALICE, RememberRequest(content=text, path="notes", semantic_key=key)).memory
        for name, (text, key) in notes.items()
    }
    names = {m.id: name for name, m in memories.items()}
    query = "What is the status of PAY-2291?"
    assert names[pack_for(engine, ALICE, query, max_items=2).items[0].id] == "ticket"
    points = engine.feed.points(list(memories.values()))
    assert [p.payload["semantic_key"] for p in points] == ["bug:PAY-2291", ""]
    for point in points:
        del point.payload["semantic_key"]
    engine.index.upsert(points)
    pack = pack_for(engine, ALICE, query, max_items=2)
    assert names[pack.items[0].id] == "ticket" and pack.retrieval_plan.ranking["key_boost"] > 0
