"""The MCP endpoint: each tool is a thin wrapper over the use case its REST route calls (the XMemo contract).

The tools are registered in groups (writes, reads, reflect, identity), each a function over one `_Tools`:
what every tool needs, the engine getter and the reflect settings, and the two ways a use case runs (a
read of a query as the REST routes run it, anything else on a worker thread)."""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar

from anyio import to_thread
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import CallToolResult, InputRequiredResult
from pydantic import BeforeValidator, ValidationInfo, WithJsonSchema

from compactor import ReflectRequest, ReflectSettings, reflect, render_reflect_text
from retrieval import (
    LightRecallRequest,
    MemoryEngine,
    PreparedRead,
    Principal,
    RecallRequest,
    RememberRequest,
    SearchRequest,
    XMemoError,
    recall,
    recall_context,
    remember,
    render_context_text,
    search_memory,
)
from retrieval.domain import DEFAULT_PACK_ITEMS, DEFAULT_PACK_TOKENS, DEFAULT_RECALL_LIMIT, DEFAULT_SEARCH_LIMIT
from retrieval.usecases import ReadRequest, render_identity_text, render_search_text

from .api_docs import describe_tools
from .loop_reads import read_for_query

__all__ = ["build_mcp"]

# Pydantic's lax mode would turn `true` into 1 before a tool runs. Numbers pass through unconverted
# instead, so that the use case's own check refuses a boolean with the 422 that REST gives; the
# schema still tells clients the type.
Integer = Annotated[Any, WithJsonSchema({"type": "integer"})]
Number = Annotated[Any, WithJsonSchema({"type": "number"})]


def _json_boolean(value: Any, info: ValidationInfo) -> Any:
    """A JSON `true` or `false` alone, as REST's StrictBool takes: lax mode would read "yes" or 1 as true."""
    if not isinstance(value, bool):
        raise ValueError(f"{info.field_name} must be true or false (a JSON boolean), not {value!r}")
    return value


Boolean = Annotated[bool, BeforeValidator(_json_boolean)]

Request = TypeVar("Request", bound=ReadRequest)
Result = TypeVar("Result")


def _request_principal(ctx: Context) -> Principal:
    """Who calls over HTTP: the key the edge middleware authenticated (service/middleware.py)."""
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


@dataclass(frozen=True, slots=True)
class _Tools:
    """What the tools share: the engine (opened in the app's lifespan) and reflect's settings."""

    engine_of: Callable[[], MemoryEngine]
    reflect_settings: ReflectSettings
    principal_of: Callable[[Context], Principal]

    async def run(self, function: Callable[..., Result], *args: Any, **kwargs: Any) -> Result:
        """Run a use case off the event loop; domain errors reach the client with the REST status."""
        with _tool_errors():
            return await to_thread.run_sync(lambda: function(self.engine_of(), *args, **kwargs))

    async def read(
        self,
        ctx: Context,
        build: Callable[[], Request],
        use_case: Callable[[MemoryEngine, PreparedRead[Request]], Result],
    ) -> Result:
        """A read of a query, run as the REST routes run it (service/loop_reads.py); the request is built
        inside, so that a refused one is the tool error REST's 422 is."""
        with _tool_errors():
            return await read_for_query(self.engine_of(), self.principal_of(ctx), build(), use_case)


Forward = Callable[[str, dict[str, Any]], Awaitable[CallToolResult]]


class _Server(MCPServer):
    """The tools as listed; with `forward`, each call is answered by it (another server's endpoint)."""

    def __init__(self, forward: Forward | None) -> None:
        super().__init__(name="xmemo", instructions="Long-term memory for agents: remember, recall, reflect.")
        self.forward = forward

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> CallToolResult | InputRequiredResult:
        if self.forward is not None:
            return await self.forward(name, arguments)
        return await super().call_tool(name, arguments, context)


def build_mcp(
    engine_of: Callable[[], MemoryEngine],
    reflect_settings: ReflectSettings,
    *,
    principal_of: Callable[[Context], Principal] = _request_principal,
    forward: Forward | None = None,
) -> MCPServer:
    """The MCP tools over `engine_of`'s store for the principal `principal_of` names (over HTTP: the
    request's key; over stdio: the CLI's owner, cli/mcp_stdio.py); `forward`: every call answered by it."""
    server = _Server(forward)
    tools = _Tools(engine_of, reflect_settings, principal_of)
    _write_tools(server, tools)
    _read_tools(server, tools)
    _reflect_tools(server, tools)
    _refuse_unknown_arguments(server)
    return server


def _write_tools(server: MCPServer, tools: _Tools) -> None:
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
        dedupe: Boolean = False,
        occurred_at: str | None = None,
        speaker: str | None = None,
        session_id: str | None = None,
        metadata: dict[str, Any] | None = None,
    ) -> str:
        request = RememberRequest(
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
        )
        result = await tools.run(remember, tools.principal_of(ctx), request)
        return f"Remembered: {result.id} (version {result.version}, {result.outcome})"


def _read_tools(server: MCPServer, tools: _Tools) -> None:
    @server.tool(
        name="recall_context",
        description="Bounded context pack for a task: ranked memories under item and token budgets.",
    )
    async def recall_context_tool(
        query: str,
        ctx: Context,
        max_items: Integer = DEFAULT_PACK_ITEMS,
        max_tokens: Integer = DEFAULT_PACK_TOKENS,
        scope: str = "",
        team_id: str = "",
        bucket: str = "",
        path_filter: str = "",
        memory_type: str = "",
        as_of: str | None = None,
    ) -> str:
        def build() -> RecallRequest:
            return RecallRequest(
                query=query,
                max_items=max_items,
                max_tokens=max_tokens,
                as_of=as_of,
                scope=scope,
                team_id=team_id,
                bucket=bucket,
                path_filter=path_filter,
                memory_type=memory_type,
            )

        pack = await tools.read(ctx, build, recall_context)
        return render_context_text(pack, tools.engine_of().tokens)

    @server.tool(name="recall", description="Light best-effort recall: the few most relevant memories.")
    async def recall_tool(
        query: str,
        ctx: Context,
        limit: Integer = DEFAULT_RECALL_LIMIT,
        scope: str = "",
        team_id: str = "",
        bucket: str = "",
        path_filter: str = "",
        memory_type: str = "",
    ) -> str:
        def build() -> LightRecallRequest:
            return LightRecallRequest(
                query=query,
                limit=limit,
                scope=scope,
                team_id=team_id,
                bucket=bucket,
                path_filter=path_filter,
                memory_type=memory_type,
            )

        found = await tools.read(ctx, build, recall)
        return render_search_text(found.results, "XMemo Recall")

    @server.tool(name="search_memory", description="Strict search: only memories that match well; may return nothing.")
    async def search_memory_tool(
        query: str,
        ctx: Context,
        limit: Integer = DEFAULT_SEARCH_LIMIT,
        min_score: Number = None,
        scope: str = "",
        team_id: str = "",
        bucket: str = "",
        path_filter: str = "",
        memory_type: str = "",
    ) -> str:
        def build() -> SearchRequest:
            return SearchRequest(
                query=query,
                limit=limit,
                min_score=min_score,
                scope=scope,
                team_id=team_id,
                bucket=bucket,
                path_filter=path_filter,
                memory_type=memory_type,
            )

        found = await tools.read(ctx, build, search_memory)
        return render_search_text(found.results, "XMemo Search")


def _reflect_tools(server: MCPServer, tools: _Tools) -> None:
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
        dry_run: Boolean = False,
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
        reconsider: bool = False,
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
        report = await tools.run(
            reflect,
            tools.principal_of(ctx),
            request,
            tools.reflect_settings,
            expected_plan=expected_plan or None,
            exclude=exclude,
            reconsider=reconsider,
        )
        return render_reflect_text(report)

    @server.tool(name="get_mcp_identity", description="Who this connection is: owner, agent, tenant and scopes.")
    async def get_mcp_identity(ctx: Context) -> str:
        principal = tools.principal_of(ctx)
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
