"""Recall reads more than the words of a query, on the real model and both index backends: a memory is
matched by its best sentence, a question naming a speaker prefers that speaker, a date in the question
prefers what occurred then (as of when it is asked), and an index of another layout is rebuilt."""

from __future__ import annotations

import pytest

from retrieval import MemoryEngine, Principal, RememberRequest, remember
from retrieval.domain import ValidationError
from retrieval.engine import index_layout
from tests.support import BACKENDS, in_process, pack_for, settings_for

ALICE = Principal.local("alice")


def _remember(engine: MemoryEngine, content: str, **fields: object) -> str:
    return remember(engine, ALICE, RememberRequest(content=content, path="chat", **fields)).memory.id  # type: ignore[arg-type]


def _dense_score(engine: MemoryEngine, query: str, memory_id: str) -> float:
    pack = pack_for(engine, ALICE, query, max_items=5)
    return next(item["dense_score"] for item in pack.retrieval_plan.items if item["id"] == memory_id)


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_memory_is_matched_by_its_best_sentence(tmp_path, real_embedder, backend):
    text = "We adopted a puppy called Max on Sunday. My car broke down on the highway to Denver."
    query = "whose car broke down on the highway?"
    scores = {}
    for units in ("whole", "sentences"):
        settings = settings_for(tmp_path / units, backend).model_copy(update={"dense_units": units})
        with MemoryEngine(settings, embedder=real_embedder) as engine:
            memory_id = _remember(engine, text)
            _remember(engine, "The quarterly report is due on Friday.")
            scores[units] = _dense_score(engine, query, memory_id)
    whole_vector = real_embedder.embed([text])[0]
    sentence_vector = real_embedder.embed(["My car broke down on the highway to Denver."])[0]
    query_vector = real_embedder.embed_query(query)
    assert scores["whole"] == pytest.approx(float(whole_vector @ query_vector), abs=1e-3)
    assert scores["sentences"] == pytest.approx(float(sentence_vector @ query_vector), abs=1e-3)
    assert scores["sentences"] > scores["whole"] + 0.05


def test_a_question_naming_a_speaker_prefers_that_speakers_memories(tmp_path, real_embedder):
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=real_embedder) as engine:
        caroline = _remember(engine, "I went to a pottery class and made a bowl.", speaker="Caroline")
        melanie = _remember(engine, "I went to a pottery class and made a mug.", speaker="Melanie")
        for name, expected in (("Caroline", caroline), ("Melanie", melanie)):
            pack = pack_for(engine, ALICE, f"What did {name} make at the pottery class?", max_items=2)
            assert pack.items[0].id == expected
            assert pack.retrieval_plan.query["speaker"] == name
        assert pack.context_text.count("Melanie: I went to a pottery class") == 1  # the pack says who said it


def test_a_date_in_the_question_prefers_what_occurred_then(tmp_path, real_embedder):
    with MemoryEngine(settings_for(tmp_path / "data", "edge"), embedder=real_embedder) as engine:
        first = _remember(engine, "Went to the farmers market and bought peaches.", occurred_at="2023-05-13T10:00:00Z")
        second = _remember(engine, "Went to the farmers market and bought plums.", occurred_at="2023-05-20T10:00:00Z")
        query = "What did I buy at the farmers market last Saturday?"
        for asked, expected in (("2023-05-18T09:00:00Z", first), ("2023-05-25T09:00:00Z", second)):
            pack = pack_for(engine, ALICE, query, max_items=2, as_of=asked)
            assert pack.items[0].id == expected
            assert pack.retrieval_plan.query["time_window"]["phrase"] == "last Saturday"
            assert len(pack.items) == 2, "a boost, never a filter"
        with pytest.raises(ValidationError, match="as_of"):
            pack_for(engine, ALICE, query, as_of="2023-05-18T09:00:00")


def test_rest_and_mcp_take_speaker_and_as_of(tmp_path, real_embedder):
    with in_process(tmp_path / "data", embedder=real_embedder) as app:
        alice = app.headers("alice")
        created = app.client.post(
            "/api/v1/remember",
            headers=alice,
            json={
                "content": "Booked the dentist for the kids.",
                "path": "chat",
                "speaker": "Melanie",
                "session_id": "s1",
                "occurred_at": "2023-05-13T10:00:00Z",
            },
        )
        assert created.status_code == 201, created.text
        record = app.client.get(f"/api/v1/memories/{created.json()['id']}", headers=alice).json()
        assert (record["speaker"], record["session_id"]) == ("Melanie", "s1")
        body = {"query": "what did Melanie book last Saturday?", "as_of": "2023-05-18T09:00:00Z"}
        pack = app.client.post("/v1/recall/context", headers=alice, json=body).json()
        assert pack["items"][0]["id"] == record["id"]
        assert pack["retrieval_plan"]["query"]["speaker"] == "Melanie"
        assert pack["retrieval_plan"]["query"]["time_window"]["start"] == "2023-05-13T00:00:00Z"
        for bad in ("2023-05-18T09:00:00", "next week", 17):
            refused = app.client.post("/v1/recall/context", headers=alice, json={**body, "as_of": bad})
            assert refused.status_code == 422 and "as_of" in refused.text
        refused = app.client.post(
            "/api/v1/remember", headers=alice, json={"content": "x", "path": "p", "speaker": "  "}
        )
        assert refused.status_code == 422
        failed, text = app.mcp(alice, "recall_context", {"query": body["query"], "as_of": body["as_of"]})
        assert not failed and "Melanie: Booked the dentist" in text
        failed, text = app.mcp(alice, "recall_context", {"query": "x", "as_of": "soon"})
        assert failed and "as_of" in text


def test_an_index_of_another_layout_is_rebuilt_at_start(tmp_path, fake_embedder, caplog):
    settings = settings_for(tmp_path / "data", "edge")
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        ids = [_remember(engine, f"note {i}. It has two sentences.") for i in range(5)]
    layout = tmp_path / "data" / "index-layout"
    assert layout.read_text().strip() == index_layout(settings) == "dense=sentences+pairs;bm25=speaker,context,month;v2"
    layout.write_text("dense=whole;bm25=content;v1\n")  # as an earlier release left it
    with caplog.at_level("INFO", logger="xmemo.engine"), MemoryEngine(settings, embedder=fake_embedder) as engine:
        assert engine.index.count() == engine.store.count_indexed() == 5
        assert pack_for(engine, ALICE, "note 3", max_items=1).items[0].id == ids[3]
    assert "another layout" in caplog.text
    assert layout.read_text().strip() == index_layout(settings)


def test_a_server_collection_of_an_earlier_layout_asks_for_reindex(tmp_path, fake_embedder):
    from sqlalchemy import text

    from retrieval.domain import ModelMismatchError
    from retrieval.engine import LAYOUT_KEY

    settings = settings_for(tmp_path / "data", "server")
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        memory_id = _remember(engine, "note one. It has two sentences.")
        with engine.store.sql_engine.begin() as connection:  # as a release before the layout was recorded
            connection.execute(text("DELETE FROM meta WHERE key = :k"), {"k": LAYOUT_KEY})
    with pytest.raises(ModelMismatchError, match="xmemo reindex"):
        MemoryEngine(settings, embedder=fake_embedder)
    with MemoryEngine(settings, embedder=fake_embedder, allow_model_change=True) as engine:
        assert engine.reindex() == 1
    with MemoryEngine(settings, embedder=fake_embedder) as engine:
        assert pack_for(engine, ALICE, "note one", max_items=1).items[0].id == memory_id
