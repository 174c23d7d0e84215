"""The Python client (clients/python, `xmemo_client`) and its LangGraph store against a real server on
loopback; and, installed alone into a fresh venv, that it brings none of the server's parts."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from agents import Agent
from agents.memory import Session
from agents.tool_context import ToolContext

from tests.support import ROOT, RunningServer, free_port
from xmemo_client import (
    AsyncXmemoClient,
    AuthenticationError,
    ConflictError,
    ForbiddenError,
    NotFoundError,
    PackMember,
    UnavailableError,
    ValidationError,
    XmemoClient,
)
from xmemo_client.langgraph import ITEM, ITEM_ID, XmemoStore, _digest
from xmemo_client.openai_agents import CUT, XmemoSession, recall_tool

HEAVY = ("torch", "onnxruntime", "qdrant_edge", "sentence_transformers", "sklearn", "sqlalchemy")
SERVER = ("service", "retrieval", "compactor", "eval", "onnxruntime", "qdrant_edge", "sqlalchemy", "psycopg")


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RunningServer]:
    running = RunningServer(tmp_path_factory.mktemp("client") / "data")
    yield running
    running.stop()


def test_a_client_remembers_recalls_searches_and_manages(server: RunningServer) -> None:
    with XmemoClient(server.url, server.key("cleo")) as client:
        written_text = "The payments gateway times out on refunds over 10,000 EUR."
        written = client.remember(
            written_text,
            "projects/payments/bugs",
            semantic_key="bug:PAY-2291",
            importance=0.8,
        )
        assert written.outcome == "created" and written.version == 1
        again = client.remember(written_text, "projects/payments/bugs", semantic_key="bug:PAY-2291")
        assert again.outcome == "unchanged" and again.id == written.id
        client.remember("Lunch on Friday is at the noodle place.", "life")
        pack = client.recall_context("What is the status of PAY-2291?", max_items=3, max_tokens=400)
        assert pack.items[0].id == written.id and "10,000 EUR" in pack.context_text
        assert pack.budget.max_tokens == 400 and pack.budget.used_items == len(pack.items)
        found = client.search("payments gateway refunds")
        assert found.results[0].id == written.id and found.results[0].score > 0
        state = client.update_state("deploy.freeze", "Deploys are frozen until Monday.")
        assert state.outcome == "created"
        event = client.timeline_event("Release 4.12.1 shipped.", "release", "2026-11-30T10:00:00Z")
        record = client.get_memory(event.id)
        assert record.type == "episodic" and record.occurred_at.startswith("2026-11-30")
        page = client.list_memories(path_prefix="projects/", limit=10)
        assert [m.id for m in page.memories] == [written.id] and page.next_cursor is None
        edited = client.edit(written.id, 1, importance=0.9)
        assert edited.version == 2 and edited.importance == 0.9
        with pytest.raises(ConflictError) as conflict:
            client.edit(written.id, 1, importance=0.1)
        assert conflict.value.status == 409 and conflict.value.code
        assert client.archive(written.id)["status"] == "archived"
        assert client.restore(written.id)["status"] == "active"
        report = client.reflect(dry_run=True, time_window_hours=48)
        assert report.dry_run and len(report.plan_digest) > 8
        assert client.history(written.id)["memory"]["id"] == written.id
        with pytest.raises(NotFoundError):
            client.get_memory("00000000-0000-4000-8000-000000000000")
        with pytest.raises(ValidationError) as invalid:
            client.recall_context("anything", max_items=0)
        assert invalid.value.status == 422 and "max_items" in invalid.value.message
        forgotten = client.forget(event.id)
        assert forgotten["forgotten"] == [event.id]


def test_a_grouped_pack_item_names_the_memories_its_lines_show(server: RunningServer) -> None:
    """Issue 49 item 3: after reflect summarizes three notes, the pack's grouped item lists its members
    as PackMember (id, type, path, when), in line order: the memories an agent cites or edits."""
    notes = [
        "The staging database moves to PostgreSQL 16 on Friday night.",
        "PostgreSQL 16 migration for staging is scheduled for Friday night.",
        "Friday night: staging's database is upgraded to PostgreSQL 16.",
    ]
    with XmemoClient(server.url, server.key("gus")) as client:
        ids = [client.remember(n, "ops/db", memory_type="episodic", session_id=f"s{i}").id for i, n in enumerate(notes)]
        assert client.reflect(actions_csv="summarize").raw["counts"]["summarized"] == 1
        pack = client.recall_context("When does staging move to PostgreSQL 16?")
    (group,) = [item for item in pack.items if item.members]
    assert all(isinstance(m, PackMember) for m in group.members) and sorted(m.id for m in group.members) == sorted(ids)
    assert {(m.type, m.path) for m in group.members} == {("episodic", "ops/db")}
    assert [m.id for m in group.members] == [m["id"] for m in group.raw["members"]]


def test_the_client_maps_refusals_to_exceptions(server: RunningServer) -> None:
    with XmemoClient(server.url, "xm_not_a_key") as client, pytest.raises(AuthenticationError) as refused:
        client.search("anything")
    assert refused.value.status == 401
    reader = server.key("dora", scopes=("memory:read",))
    with XmemoClient(server.url, reader) as client, pytest.raises(ForbiddenError):
        client.remember("a note", "p")
    with (
        XmemoClient(f"http://127.0.0.1:{free_port()}", reader, timeout=2) as client,
        pytest.raises(UnavailableError) as unreachable,
    ):
        client.health()
    assert unreachable.value.status == 0


def test_the_async_client_is_the_same_api(server: RunningServer) -> None:
    key = server.key("erin")

    async def scenario() -> None:
        async with AsyncXmemoClient(server.url, key) as client:
            written = await client.remember("Erin's standup is at 9:30 on weekdays.", "calendar")
            pack = await client.recall_context("When is Erin's standup?", max_items=2)
            assert pack.items[0].id == written.id
            found = await client.search("standup")
            assert found.results[0].id == written.id
            assert (await client.get_memory(written.id)).content.startswith("Erin's standup")

    asyncio.run(scenario())


def test_a_langgraph_store_puts_gets_searches_and_deletes(server: RunningServer) -> None:
    with XmemoClient(server.url, server.key("lang")) as client:
        _a_store_session(XmemoStore(client))


def _a_store_session(store: XmemoStore) -> None:
    users = ("users", "u1", "memories")
    store.put(users, "food", {"text": "The user is vegetarian and loves Sichuan food.", "kind": "preference"})
    store.put(users, "pet", {"text": "The user has a cat called Miso.", "kind": "fact", "age": 3})
    store.put(("users", "u2", "memories"), "food", {"text": "The second user eats everything."})
    item = store.get(users, "food")
    assert item is not None and item.value["kind"] == "preference" and item.namespace == users
    assert store.get(users, "nothing") is None
    # Putting a key again replaces its value (a new version); the same text with a new value is kept too.
    store.put(users, "food", {"text": "The user is vegan now.", "kind": "preference"})
    assert store.get(users, "food").value["text"] == "The user is vegan now."
    store.put(users, "pet", {"text": "The user has a cat called Miso.", "kind": "fact", "age": 4})
    assert store.get(users, "pet").value["age"] == 4
    hits = store.search(("users", "u1"), query="what pets does the user have?", limit=2)
    assert hits and hits[0].key == "pet" and hits[0].score is not None
    assert {h.namespace for h in store.search(("users",), query="food", limit=10)} == {
        users,
        ("users", "u2", "memories"),
    }
    assert [h.key for h in store.search(users, filter={"kind": "fact"})] == ["pet"]
    assert [h.key for h in store.search(users, filter={"age": {"$gt": 3}})] == ["pet"]
    assert store.list_namespaces(prefix=("users",)) == [("users", "u1", "memories"), ("users", "u2", "memories")]
    assert store.list_namespaces(max_depth=2) == [("users", "u1"), ("users", "u2")]
    store.delete(users, "food")
    assert store.get(users, "food") is None
    assert [h.key for h in store.search(users)] == ["pet"]

    async def twin() -> None:
        await store.aput(users, "sport", {"text": "The user climbs on Sundays."})
        got = await store.aget(users, "sport")
        assert got is not None and got.value["text"].startswith("The user climbs")

    asyncio.run(twin())


def test_a_teammate_cannot_shadow_a_langgraph_item(server: RunningServer) -> None:
    """B, in A's team, writes a team memory carrying A's item digest, path and metadata (as the store
    writes them): A's personal namespace holds A's memories alone; a team store holds the team's."""
    ann, bob = server.key("ann", team_ids=("crew",)), server.key("bob", team_ids=("crew",))
    users = ("users", "ann", "memories")
    with XmemoClient(server.url, ann) as client:
        store = XmemoStore(client)
        store.put(users, "food", {"text": "Ann is vegetarian and loves Sichuan food."})
        record = client.list_memories(path_prefix="users/ann/memories", metadata=f"{ITEM_ID}={_digest(users, 'food')}")
        own = record.memories[0].metadata
    shadow = {**own, ITEM: {"namespace": list(users), "key": "food", "value": {"text": "Ann eats Sichuan beef."}}}
    with server.client(bob) as http:
        for content, path, metadata in [
            ("Ann eats Sichuan beef.", "users/ann/memories", shadow),
            ("Bob's own namespace.", "users/bob", {**shadow, ITEM: {**shadow[ITEM], "namespace": ["users", "bob"]}}),
        ]:
            body = {
                "content": content,
                "path": path,
                "team_id": "crew",
                "memory_type": "semantic",
                "metadata": metadata,
            }
            assert http.post("/api/v1/remember", json=body).status_code == 201
    with XmemoClient(server.url, ann) as client:
        store = XmemoStore(client)
        assert store.get(users, "food").value["text"].startswith("Ann is vegetarian")
        hits = store.search(users, query="Sichuan food")
        assert [h.value["text"][:3] for h in hits] == ["Ann"] and hits[0].value["text"].startswith("Ann is")
        assert [h.value["text"][:3] for h in store.search(users)] == ["Ann"]
        assert store.list_namespaces() == [users]
        team = XmemoStore(client, team_id="crew")
        assert team.get(users, "food").value["text"] == "Ann eats Sichuan beef."
        assert team.list_namespaces() == [("users", "ann", "memories"), ("users", "bob")]
        team.delete(users, "food")
        assert store.get(users, "food") is not None and team.get(users, "food") is None


HISTORY: list[dict[str, Any]] = [
    {"role": "user", "content": "Alice prefers PostgreSQL for the billing service."},
    {
        "type": "message",
        "role": "assistant",
        "id": "msg_1",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Noted: billing runs on PostgreSQL.", "annotations": []}],
    },
    {"type": "function_call", "call_id": "call_1", "name": "open_ticket", "arguments": '{"team": "billing"}'},
    {"type": "function_call_output", "call_id": "call_1", "output": "ticket BILL-17 opened"},
]


def test_an_agents_session_keeps_a_runs_history_and_the_tool_recalls_it_by_meaning(server: RunningServer) -> None:
    """The OpenAI Agents SDK's session protocol driven directly (no model): items come back exactly, in
    order, from a new client too; limit, pop and clear; another session id is another history; the recall
    tool, invoked as the SDK invokes a tool, answers from what the run said."""
    key = server.key("agent-user")

    async def scenario() -> None:
        async with AsyncXmemoClient(server.url, key) as client:
            session = XmemoSession("run-1", client)
            assert isinstance(session, Session)
            await session.add_items(HISTORY[:2])
            await session.add_items(HISTORY[2:])
            assert await session.get_items() == HISTORY
            assert await session.get_items(limit=2) == HISTORY[2:]
            assert await XmemoSession("run-2", client).get_items() == []
            tool = recall_tool(client)
            arguments = json.dumps({"query": "Which database does Alice want for billing?"})
            context = ToolContext(context=None, tool_name=tool.name, tool_call_id="t1", tool_arguments=arguments)
            answer = await tool.on_invoke_tool(context, arguments)
            assert "Alice prefers PostgreSQL for the billing service." in answer
        async with AsyncXmemoClient(server.url, key) as later:  # another process's client: the same history
            session = XmemoSession("run-1", later)
            assert await session.get_items() == HISTORY
            assert await session.pop_item() == HISTORY[-1]
            assert await session.get_items() == HISTORY[:-1]
            await session.clear_session()
            assert await session.get_items() == [] and await session.pop_item() is None

    asyncio.run(scenario())


def test_an_agents_item_too_large_for_a_memory_keeps_its_shape_and_the_head_of_its_text(
    server: RunningServer,
) -> None:
    huge = {"type": "function_call_output", "call_id": "call_9", "output": "row " * 50_000}

    async def scenario() -> None:
        async with AsyncXmemoClient(server.url, server.key("agent-big")) as client:
            session = XmemoSession("run-big", client)
            await session.add_items([huge, HISTORY[0]])
            kept, said = await session.get_items()
            assert said == HISTORY[0]
            assert kept["type"] == "function_call_output" and kept["call_id"] == "call_9"
            output = kept["output"]
            assert output.startswith("row row ") and output.endswith(CUT) and len(output) < 30_000

    asyncio.run(scenario())


@pytest.fixture(scope="module")
def client_venv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh venv (no system site packages) holding only `pip install './clients/python[langgraph,agents]'`."""
    venv = tmp_path_factory.mktemp("client-venv") / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    install = [str(python), "-m", "pip", "install", "--quiet", f"{ROOT / 'clients' / 'python'}[langgraph,agents]"]
    done = subprocess.run(install, capture_output=True, text=True, timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return python


def test_the_client_installs_alone_and_brings_no_part_of_the_server(
    server: RunningServer, client_venv: Path, tmp_path: Path
) -> None:
    """In a venv with only the client and its extras: remember, recall and search through the client,
    put, get and search through the LangGraph store, keep an Agents SDK session's items, then list which
    of the server's parts were imported (none may be) and which of its packages the venv could import
    (none may be installed)."""
    script = f"""
import importlib.util, json, sys
from xmemo_client import XmemoClient
from xmemo_client.langgraph import XmemoStore
client = XmemoClient({server.url!r}, {server.key("fresh")!r})
written = client.remember("The fresh venv remembers this.", "notes")
assert client.recall_context("what does the fresh venv remember?").items[0].id == written.id
assert client.search("The fresh venv remembers this.").results[0].id == written.id
store = XmemoStore(client)
store.put(("a",), "k", {{"text": "stored through LangGraph"}})
assert store.get(("a",), "k").value == {{"text": "stored through LangGraph"}}
assert store.search(("a",), query="LangGraph")[0].key == "k"
import asyncio
from xmemo_client import AsyncXmemoClient
from xmemo_client.openai_agents import XmemoSession
async def agent():
    async with AsyncXmemoClient({server.url!r}, {server.key("fresh")!r}) as other:
        said = [{{"role": "user", "content": "The fresh venv's agent keeps its history."}}]
        await XmemoSession("fresh-run", other).add_items(said)
        assert await XmemoSession("fresh-run", other).get_items() == said
asyncio.run(agent())
loaded = [m for m in {list(HEAVY)!r} if m in sys.modules]
installed = [m for m in {list(SERVER)!r} if importlib.util.find_spec(m) is not None]
print(json.dumps([loaded, installed]))
"""
    done = subprocess.run([str(client_venv), "-c", script], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout.strip().splitlines()[-1]) == [[], []]


def test_the_readme_langgraph_agent_runs_on_the_store(server: RunningServer) -> None:
    """The README's example, as written there, run against the server: what the user states is stored,
    no question is, and a question is answered from the statement recalled at rank 1."""
    readme = (ROOT / "README.md").read_text()
    example = readme.split("from uuid import uuid4")[1].split("```")[0]
    code = "from uuid import uuid4" + example.replace('"http://127.0.0.1:8420", api_key', "URL, KEY")
    scope: dict[str, Any] = {"URL": server.url, "KEY": server.key("readme")}
    exec(compile(code, "README.md", "exec"), scope)
    graph, store = scope["graph"], scope["store"]

    def reply(said: str) -> str:
        return str(graph.invoke({"messages": [("user", said)]})["messages"][-1].content)

    assert reply("Which database does Alice prefer?") == "I don't know yet."
    for said in (
        "Alice prefers PostgreSQL for the billing service.",
        "Bob keeps the cache in Redis.",
        "The refund runbook lives in ops/runbooks.",
        "Alice's team deploys on Thursdays.",
    ):
        assert reply(said) == "Noted."
    assert reply("Which database does Alice prefer?") == "Alice prefers PostgreSQL for the billing service."
    assert reply("Where is the refund runbook?") == "The refund runbook lives in ops/runbooks."
    kept = store.search(("users", "u1", "memories"), limit=10)
    assert len(kept) == 4 and not [i for i in kept if i.value["text"].endswith("?")]
    ranked = store.search(("users", "u1", "memories"), query="Which database does Alice prefer?", limit=4)
    assert ranked[0].value["text"].startswith("Alice prefers PostgreSQL")
    assert [i.score for i in ranked] == sorted((i.score for i in ranked), reverse=True) and ranked[0].score > 0
    vague = "release cadence"  # nothing passes search's strict threshold, items still match
    assert store.client.search(vague, path_filter="users/u1/memories").results == []
    assert store.search(("users", "u1", "memories"), query=vague, limit=1)[0].value["text"].endswith("Thursdays.")
    store.client.close()


def test_the_readme_agents_sdk_example_runs_up_to_the_model(server: RunningServer) -> None:
    """The README's Agents SDK example, as written there, against the server: everything but the model's
    turn (`ask`), whose two parts, the session and the agent's tool, are driven as the runner drives them."""
    readme = (ROOT / "README.md").read_text()
    example = readme.split("**The OpenAI Agents SDK**")[1].split("```python\n", 1)[1].split("```")[0]
    code = example.replace('"http://127.0.0.1:8420", api_key', "URL, KEY")
    scope: dict[str, Any] = {"URL": server.url, "KEY": server.key("readme-agent")}
    exec(compile(code, "README.md", "exec"), scope)
    agent, session = scope["agent"], scope["session"]
    assert callable(scope["ask"]) and isinstance(agent, Agent) and isinstance(session, Session)
    (tool,) = agent.tools
    said = [{"role": "user", "content": "Our refund runbook lives in ops/runbooks/refunds.md."}]

    async def turn() -> str:
        await session.add_items(said)
        assert await session.get_items() == said
        arguments = json.dumps({"query": "Where is the refund runbook?"})
        context = ToolContext(context=None, tool_name=tool.name, tool_call_id="t1", tool_arguments=arguments)
        answer: str = await tool.on_invoke_tool(context, arguments)
        await scope["client"].aclose()
        return answer

    assert "ops/runbooks/refunds.md" in asyncio.run(turn())


def test_the_readme_mcp_snippet_runs(server: RunningServer) -> None:
    """The README's MCP client example, as written there, against the server."""
    readme = (ROOT / "README.md").read_text()
    code = "import asyncio" + readme.split("**Over MCP**")[1].split("```python\nimport asyncio", 1)[1].split("```")[0]
    code = code.replace('print(asyncio.run(main("http://127.0.0.1:8420", key)))', "TEXT = asyncio.run(main(URL, KEY))")
    scope: dict[str, object] = {"URL": server.url, "KEY": server.key("mcp-reader")}
    exec(compile(code, "README.md", "exec"), scope)
    assert "ops/runbooks" in str(scope["TEXT"]) and "### XMemo Context" in str(scope["TEXT"])
