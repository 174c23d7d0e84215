"""The use cases end to end on real SQLite, real Qdrant Edge and the real all-MiniLM-L6-v2."""

from __future__ import annotations

import pytest

from retrieval import (
    ModelMismatchError,
    NotFoundError,
    PermissionDeniedError,
    Principal,
    RememberRequest,
    ValidationError,
    add_event,
    archive_memory,
    get_memory,
    remember,
    render_context_text,
    update_state,
)
from retrieval.domain import MemoryStatus
from retrieval.usecases import forget_memory
from service.routes.responses import ContextPackOut, answer
from tests.support import BACKENDS, FakeEmbedder, pack_for, recall_for, search_for

ALICE = Principal(owner_id="alice", agent_id="a1", team_ids=("team-a",))
BOB = Principal(owner_id="bob", agent_id="b1", team_ids=("team-b",))

NOTES = [
    "We chose Qdrant Edge as the embedded vector index because it runs in-process.",
    "The customer reported ticket XJ-4471-QZ about intermittent login failures.",
    "Deploys happen on Tuesdays after the integration tests pass.",
    "Ana prefers short status updates in the morning stand-up.",
    "The billing service times out when the payment gateway is slow.",
    "Release 4.2 added dark mode to the mobile app.",
]


@pytest.fixture(params=BACKENDS)
def engine(request, make_engine, real_embedder, clock):  # type: ignore[no-untyped-def]
    engine = make_engine(real_embedder, backend=request.param, clock=clock)
    for i, note in enumerate(NOTES):
        remember(engine, ALICE, RememberRequest(content=note, path=f"projects/memory-os/notes/{i}"))
    return engine


def test_keyword_only_hit_comes_first(engine):
    pack = pack_for(engine, ALICE, "XJ-4471-QZ")
    assert pack.items[0].path == "projects/memory-os/notes/1"
    components = pack.retrieval_plan.items[0]
    assert components["bm25_rank"] == 1


def test_semantic_query_finds_the_meaning(engine):
    pack = pack_for(engine, ALICE, "which vector database did we pick?")
    assert pack.items[0].path == "projects/memory-os/notes/0"


def test_pack_shape_and_mcp_text(engine):
    pack = pack_for(engine, ALICE, "recent decisions on the memory-os project", max_items=3, max_tokens=1200)
    shape = answer(ContextPackOut, pack).model_dump()  # the REST and --json shape, read from the pack
    assert set(shape) == {"version", "query", "retrieval_plan", "budget", "items", "context_text", "scope"}
    budget = pack.budget
    assert budget.used_items == len(pack.items) <= 3
    assert budget.used_tokens == engine.tokens.count(pack.context_text)
    plan = pack.retrieval_plan
    assert plan.channels == ("dense", "bm25") and plan.candidates.union >= 3
    assert set(shape["items"][0]) >= {"id", "type", "path", "score", "tokens", "shortened", "created_at"}
    text = render_context_text(pack, engine.tokens)
    lines = text.split("\n")
    assert lines[0] == "### XMemo Context"
    assert lines[1] == f"Items: {len(pack.items)}"
    assert lines[2] == (
        f"Budget: used {engine.tokens.count(text)}/1200 tokens, {len(pack.items)}/3 items; dropped 0, shortened 0"
    )
    for line, item in zip(lines[3 : 3 + len(pack.items)], pack.items, strict=True):
        assert line == f"Reference: {item.id} | Type: {item.type} | Location: {item.path}"
    assert text.endswith("Context:\n" + pack.context_text)


@pytest.mark.parametrize("max_tokens", [30, 60, 120, 400])
def test_the_mcp_text_is_counted_whole_and_fits_the_budget(engine, max_tokens):
    """Before: with max_tokens 30 the MCP text was 107 tokens while its Budget line said "used 30/30"."""
    pack = pack_for(engine, ALICE, "login failures ticket", max_items=8, max_tokens=max_tokens)
    text = render_context_text(pack, engine.tokens)
    lines = text.split("\n")
    budget_line = next(line for line in lines if line.startswith("Budget:"))
    if "too small" in budget_line:
        assert lines[:2] == ["### XMemo Context", "Items: 1"] and lines[3].startswith("Reference: ") and len(lines) == 4
        return
    used = int(budget_line.split("used ")[1].split("/")[0])
    assert used == engine.tokens.count(text) <= max_tokens
    shown = int(lines[1].removeprefix("Items: "))
    assert sum(1 for line in lines if line.startswith("Reference: ")) == shown >= 1
    assert text.split("Context:\n", 1)[1].startswith("[1] ")


@pytest.mark.parametrize("max_tokens", [12, 30, 64])
def test_a_budget_too_small_for_one_reference_says_the_least_that_holds_it(engine, max_tokens):
    """Before: the text dropped the seed's `Items:` line, and with max_tokens 64-79 said the heading and
    one reference need "50 tokens and more" while it was itself 64 tokens. Contract section 7: below the
    least budget that holds the heading, the Items line and one Reference line, the text is those, a
    Budget line naming that least budget (a true count), and nothing else."""
    pack = pack_for(engine, ALICE, "login failures ticket", max_items=8, max_tokens=max_tokens)
    lines = render_context_text(pack, engine.tokens).split("\n")
    assert lines[:2] == ["### XMemo Context", "Items: 1"] and len(lines) == 4
    assert lines[3] == f"Reference: {pack.items[0].id} | Type: {pack.items[0].type} | Location: {pack.items[0].path}"
    prefix = f"Budget: too small: max_tokens {max_tokens} cannot hold the heading, the Items line and one reference; "
    assert lines[2].startswith(prefix + "they need max_tokens ")
    least = int(lines[2].removeprefix(prefix + "they need max_tokens "))
    assert least > max_tokens
    fits = render_context_text(
        pack_for(engine, ALICE, "login failures ticket", max_items=8, max_tokens=least), engine.tokens
    )
    assert "too small" not in fits and engine.tokens.count(fits) <= least
    below = render_context_text(
        pack_for(engine, ALICE, "login failures ticket", max_items=8, max_tokens=least - 1), engine.tokens
    )
    assert f"they need max_tokens {least}" in below


def test_no_match_text(engine):
    pack = pack_for(engine, BOB, "anything at all")
    assert pack.items == () and render_context_text(pack, engine.tokens) == "No matching XMemo memory was found."


def test_semantic_key_noop_then_supersede(engine):
    first = remember(engine, ALICE, RememberRequest(content="Use Python 3.11", path="prefs", semantic_key="python"))
    again = remember(engine, ALICE, RememberRequest(content="Use Python 3.11", path="prefs", semantic_key="python"))
    assert again.outcome == "unchanged" and again.memory.id == first.memory.id
    assert again.deduplicated is True
    newer = remember(engine, ALICE, RememberRequest(content="Use Python 3.12", path="prefs", semantic_key="python"))
    assert newer.outcome == "superseded" and newer.memory.version == 2
    assert get_memory(engine, ALICE, first.memory.id).status == MemoryStatus.SUPERSEDED
    found = recall_for(engine, ALICE, "which Python version", limit=5)
    ids = [r.id for r in found.results]
    assert newer.memory.id in ids and first.memory.id not in ids


def test_dedupe_merges_near_identical(engine):
    base = remember(engine, ALICE, RememberRequest(content="The office wifi password rotates monthly.", path="it"))
    merged = remember(
        engine,
        ALICE,
        RememberRequest(content="The office wifi password rotates monthly!", path="it", dedupe=True, importance=0.9),
    )
    assert merged.outcome == "merged" and merged.memory.id == base.memory.id
    assert merged.memory.importance == 0.9 and merged.memory.version == 2
    different = remember(engine, ALICE, RememberRequest(content="Printer is on floor 3.", path="it", dedupe=True))
    assert different.outcome == "created"


def test_update_state_is_a_versioned_slot(engine):
    one = update_state(engine, ALICE, state_key="task.current", content="writing tests")
    two = update_state(engine, ALICE, state_key="task.current", content="fixing the packer")
    same = update_state(engine, ALICE, state_key="task.current", content="fixing the packer")
    assert (one.memory.version, two.memory.version) == (1, 2)
    assert same.memory.id == two.memory.id and same.outcome == "unchanged"
    assert two.memory.type.value == "working"
    with pytest.raises(ValidationError):
        update_state(engine, ALICE, state_key="Bad Key", content="x")


def test_timeline_event(engine):
    event = add_event(
        engine,
        ALICE,
        content="Deployed 4.3 to production",
        event_type="deploy",
        occurred_at="2026-11-20T10:00:00+01:00",
        session_id="s1",
    )
    assert event.memory.type.value == "episodic" and event.memory.occurred_at == "2026-11-20T09:00:00.000000Z"
    twice = add_event(
        engine,
        ALICE,
        content="Deployed 4.3 to production",
        event_type="deploy",
        occurred_at="2026-11-20T10:00:00+01:00",
    )
    assert twice.memory.id != event.memory.id
    with pytest.raises(ValidationError):
        add_event(engine, ALICE, content="x", event_type="deploy", occurred_at="yesterday")


def test_search_is_strict(engine):
    strong = search_for(engine, ALICE, "XJ-4471-QZ")
    assert strong.results and strong.results[0].path == "projects/memory-os/notes/1"
    weak = search_for(engine, ALICE, "quantum chromodynamics lattice simulation")
    assert weak.results == ()


def test_tenants_and_teams(engine):
    team_note = remember(
        engine,
        ALICE,
        RememberRequest(content="Team A ships the search index on Monday.", path="team", team_id="team-a"),
    )
    assert pack_for(engine, BOB, "search index monday").items == ()
    carol = Principal(owner_id="carol", team_ids=("team-a",))
    assert [i.id for i in pack_for(engine, carol, "search index monday").items] == [team_note.memory.id]
    with pytest.raises(PermissionDeniedError):
        pack_for(engine, BOB, "x", team_id="team-a")
    with pytest.raises(PermissionDeniedError):
        remember(engine, BOB, RememberRequest(content="x", path="p", team_id="team-a"))
    with pytest.raises(NotFoundError):
        get_memory(engine, BOB, team_note.memory.id)


def test_archive_hides_from_recall_but_keeps(engine):
    pack = pack_for(engine, ALICE, "XJ-4471-QZ")
    target = pack.items[0].id
    archived = archive_memory(engine, ALICE, target)
    assert archived.status == MemoryStatus.ARCHIVED and archived.version == 2
    assert target not in [i.id for i in pack_for(engine, ALICE, "XJ-4471-QZ").items]
    assert get_memory(engine, ALICE, target).content == NOTES[1]
    with pytest.raises(NotFoundError):
        archive_memory(engine, BOB, target)


def test_filters(engine):
    remember(
        engine,
        ALICE,
        RememberRequest(
            content="Deploy checklist lives in the wiki.", path="ops/runbooks", bucket="work", memory_type="procedural"
        ),
    )
    pack = pack_for(engine, ALICE, "deploy", bucket="work")
    assert [i.path for i in pack.items] == ["ops/runbooks"]
    pack = pack_for(engine, ALICE, "deploy", path_filter="projects/%")
    assert pack.items and all(i.path.startswith("projects/") for i in pack.items)
    pack = pack_for(engine, ALICE, "deploy", memory_type="procedural")
    assert [i.type for i in pack.items] == ["procedural"]
    assert pack_for(engine, ALICE, "deploy", path_filter="nowhere/%").items == ()


@pytest.mark.parametrize(
    "kwargs",
    [{"max_items": 0}, {"max_items": 51}, {"max_tokens": 0}, {"max_tokens": 12001}, {"memory_type": "dream"}],
)
def test_recall_context_validation(engine, kwargs):
    with pytest.raises(ValidationError):
        pack_for(engine, ALICE, "q", **kwargs)


@pytest.mark.parametrize(
    "request_kwargs",
    [
        {"content": "   ", "path": "p"},
        {"content": "x" * (64 * 1024 + 1), "path": "p"},
        {"content": "ok", "path": ""},
        {"content": "ok", "path": "p", "importance": 1.5},
        {"content": "ok", "path": "p", "expires_at": "tomorrow"},
        {"content": "ok", "path": "p", "memory_type": "dream"},
    ],
)
def test_remember_validation(engine, request_kwargs):
    before = engine.store.count()
    with pytest.raises(ValidationError):
        remember(engine, ALICE, RememberRequest(**request_kwargs))
    assert engine.store.count() == before


def test_reads_are_counted_in_batches(engine):
    """A pack moves last_accessed_at and notes its question; only a fetch by id counts as a use."""
    pack = pack_for(engine, ALICE, "XJ-4471-QZ")
    pack_for(engine, ALICE, "  xj-4471-qz ")  # the same question, case and spacing aside
    engine.read_tracker.flush()
    shown = engine.store.get(pack.items[0].id)
    assert shown.access_count == 0 and shown.last_accessed_at is not None
    assert engine.store.questions_read([shown.id]) == {shown.id: 1}
    get_memory(engine, ALICE, shown.id)
    engine.read_tracker.flush()
    assert engine.store.get(shown.id).access_count == 1


def test_store_refuses_another_model_until_reindex(make_engine, tmp_path):
    engine = make_engine(FakeEmbedder(), name="mm")
    remember(engine, ALICE, RememberRequest(content="a fact", path="p"))
    engine.close()

    class OtherModel(FakeEmbedder):
        name = "fake:other"

    with pytest.raises(ModelMismatchError):
        make_engine(OtherModel(), name="mm")
    rebuilt = make_engine(OtherModel(), name="mm", allow_model_change=True)
    assert rebuilt.reindex() == 1
    rebuilt.close()
    reopened = make_engine(OtherModel(), name="mm")
    assert pack_for(reopened, ALICE, "a fact").items


def test_reindex_to_a_model_of_another_dimension_starts_a_new_index_without_calling_it_damaged(make_engine, caplog):
    engine = make_engine(FakeEmbedder(), name="dim")
    remember(engine, ALICE, RememberRequest(content="a fact about the deploy", path="p"))
    engine.close()

    class SmallerModel(FakeEmbedder):
        name = "fake:hash-32"
        dimension = 32

    with caplog.at_level("INFO", logger="xmemo"):
        rebuilt = make_engine(SmallerModel(), name="dim", allow_model_change=True)
        assert rebuilt.reindex() == 1
    assert "damaged" not in caplog.text and "starting a new index" in caplog.text
    rebuilt.close()
    reopened = make_engine(SmallerModel(), name="dim")
    assert reopened.index.dimension == 32
    assert pack_for(reopened, ALICE, "deploy").items


def test_query_vectors_are_never_shared_between_models(make_engine, real_embedder):
    fake = make_engine(FakeEmbedder(), name="fake")
    real = make_engine(real_embedder, name="real")
    for engine in (fake, real):
        remember(engine, ALICE, RememberRequest(content="the same words in both stores", path="p"))
    for engine in (fake, real, fake):
        assert pack_for(engine, ALICE, "the same words in both stores").items


def test_a_forget_the_record_took_is_answered_as_done_when_the_index_cannot_follow(make_engine, real_embedder):
    """Before: a hard forget answered 503 after it committed, when the index refused the deletion."""
    engine = make_engine(real_embedder, name="forget")
    made = remember(engine, ALICE, RememberRequest(content="the vault code is 9931", path="secrets")).memory
    engine.index.close()  # the embedded shard is gone from under the engine: every index call now fails
    forgotten = forget_memory(engine, ALICE, made.id)
    assert forgotten.forgotten == [made.id] and engine.store.get(made.id) is None
    engine.close()
    reopened = make_engine(real_embedder, name="forget")  # the start repairs the index from the record
    assert made.id not in set(reopened.index.iter_ids())
