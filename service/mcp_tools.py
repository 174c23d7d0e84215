"""The MCP endpoint: each tool is a thin wrapper over the use case its REST route calls (the XMemo contract)."""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Annotated, Any

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import WithJsonSchema

from compactor import ReflectRequest, ReflectSettings, reflect, render_reflect_text
from retrieval import (
    MemoryEngine,
    Principal,
    RememberRequest,
    XMemoError,
    recall,
    recall_context,
    remember,
    render_context_text,
    search_memory,
)
from retrieval.usecases import render_identity_text, render_search_text

from .api_docs import describe_tools
from .loop_reads import read_for_query

__all__ = ["build_mcp"]

# Pydantic's lax mode would turn `true` into 1 before a tool runs. Numbers pass through unconverted
# instead, so that the use case's own check refuses a boolean with the 422 that REST gives; the
# schema still tells clients the type.
Integer = Annotated[Any, WithJsonSchema({"type": "integer"})]
Number = Annotated[Any, WithJsonSchema({"type": "number"})]


def _principal(ctx: Context) -> Principal:
    request = ctx.request_context.request
    principal = getattr(getattr(request, "state", None), "principal", None)
    if not isinstance(principal, Principal):  # the edge middleware guarantees it; fail closed anyway
        raise ToolError("401 unauthorized: no authenticated principal")
    return principal


@contextlib.contextmanager
def _tool_errors() -> Iterator[None]:
    """Domain errors reach the MCP client as tool errors carrying the REST status."""
    try:
        yield
    except XMemoError as error:
        raise ToolError(f"{error.status} {error.code}: {error.message}") from error


def build_mcp(engine_of: Callable[[], MemoryEngine], reflect_settings: ReflectSettings) -> MCPServer:
    server: MCPServer = MCPServer(name="xmemo", instructions="Long-term memory for agents: remember, recall, reflect.")

    async def run(function: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """Run a use case off the event loop; domain errors reach the client with the REST status."""
        with _tool_errors():
            return await to_thread.run_sync(lambda: function(engine_of(), *args, **kwargs))

    async def read(
        function: Callable[..., Any],
        principal: Principal,
        query: str,
        *,
        filters: dict[str, Any],
        items: Any = None,
        **kwargs: Any,
    ) -> Any:
        """A read of `query`, run as the REST routes run it (service/loop_reads.py read_for_query)."""
        with _tool_errors():
            engine = engine_of()
            return await read_for_query(
                engine,
                principal,
                query,
                lambda vector: function(engine, principal, query, query_vector=vector, **kwargs, **filters),
                items=items,
                **filters,
            )

    @server.tool(name="remember", description="Persist a memory (content at a logical path).")
    async def remember_tool(
        content: str,
        path: str,
        ctx: Context,
        memory_type: str = "auto",
        bucket: str = "personal",
        scope: str = "",
        team_id: str | None = None,
        importance: Number = 0.5,
        semantic_key: str | None = None,
        dedupe: bool = False,
        occurred_at: str | None = None,
        speaker: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        principal = _principal(ctx)
        result = await run(
            remember,
            principal,
            RememberRequest(
                content=content,
                path=path,
                memory_type=memory_type,
                bucket=bucket,
                scope=scope,
                team_id=team_id,
                importance=importance,
                semantic_key=semantic_key,
                dedupe=dedupe,
                source="mcp",
                occurred_at=occurred_at,
                speaker=speaker,
                session_id=session_id,
                metadata=metadata or {},
            ),
        )
        data = result.to_dict()
        return f"Remembered: {data['id']} (version {data['version']}, {data['outcome']})"

    @server.tool(
        name="recall_context",
        description="Bounded context pack for a task: ranked memories under item and token budgets.",
    )
    async def recall_context_tool(
        query: str,
        ctx: Context,
        max_items: Integer = 8,
        max_tokens: Integer = 1500,
        scope: str = "",
        team_id: str = "",
        bucket: str = "",
        path_filter: str = "",
        memory_type: str = "",
        as_of: str | None = None,
    ) -> str:
        filters: dict[str, Any] = {
            "scope": scope or None,
            "team_id": team_id or None,
            "bucket": bucket or None,
            "path_filter": path_filter or None,
            "memory_type": memory_type or None,
        }
        pack = await read(
            recall_context,
            _principal(ctx),
            query,
            max_items=max_items,
            max_tokens=max_tokens,
            as_of=as_of,
            filters=filters,
            items=max_items,
        )
        return render_context_text(pack, engine_of().tokens)

    @server.tool(name="recall", description="Light best-effort recall: the few most relevant memories.")
    async def recall_tool(query: str, ctx: Context, limit: Integer = 5) -> str:
        found = await read(recall, _principal(ctx), query, limit=limit, filters={}, items=limit)
        return render_search_text(found.results, "XMemo Recall")

    @server.tool(name="search_memory", description="Strict search: only memories that match well; may return nothing.")
    async def search_memory_tool(query: str, ctx: Context, limit: Integer = 10, min_score: Number = None) -> str:
        found = await read(search_memory, _principal(ctx), query, limit=limit, min_score=min_score, filters={})
        return render_search_text(found.results, "XMemo Search")

    @server.tool(
        name="reflect",
        description=(
            "Bounded maintenance pass: summarize and promote similar episodes, expire, decay and archive. "
            "Preview with dry_run=true first."
        ),
    )
    async def reflect_tool(
        ctx: Context,
        actions_csv: str = "summarize,promote,expire,decay,archive",
        dry_run: bool = False,
        time_window_hours: Number = 24.0,
        since: str = "",
        until: str = "",
        path_filter: str = "%",
        owner_filter: str = "",
        bucket: str = "%",
        scope: str = "",
        team_id: str = "",
        limit: Integer = 500,
        expected_plan: str = "",
        exclude: list[str] | None = None,
    ) -> str:
        request = ReflectRequest(
            actions_csv=actions_csv,
            dry_run=dry_run,
            time_window_hours=time_window_hours,
            since=since or None,
            until=until or None,
            path_filter=path_filter,
            owner_filter=owner_filter or None,
            bucket=bucket,
            scope=scope or None,
            team_id=team_id or None,
            limit=limit,
        )
        report = await run(
            reflect, _principal(ctx), request, reflect_settings, expected_plan=expected_plan or None, exclude=exclude
        )
        return render_reflect_text(report)

    @server.tool(name="get_mcp_identity", description="Who this connection is: owner, agent, tenant and scopes.")
    async def get_mcp_identity(ctx: Context) -> str:
        principal = _principal(ctx)
        return render_identity_text(
            {
                "owner_id": principal.owner_id,
                "agent_id": principal.agent_id,
                "organization_id": principal.organization_id,
                "workspace_id": principal.workspace_id,
                "project_id": principal.project_id,
                "scopes": principal.scopes,
            }
        )

    _refuse_unknown_arguments(server)
    return server


def _refuse_unknown_arguments(server: MCPServer) -> None:
    """An argument a tool does not take is an error, as an unknown field is a 422 over REST: a misspelt
    `max_token` must not pass silently as the default. Each tool's argument model forbids extra fields,
    and its published input schema says so (`additionalProperties: false`)."""
    for tool in server._tool_manager.list_tools():  # the SDK has no public hook for the argument model
        model = tool.fn_metadata.arg_model
        model.model_config["extra"] = "forbid"
        model.model_rebuild(force=True)
        tool.parameters = model.model_json_schema(by_alias=True)
    describe_tools(server._tool_manager.list_tools())
