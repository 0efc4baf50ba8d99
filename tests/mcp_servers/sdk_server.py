"""An MCP server written with the official MCP Python SDK (``mcp`` >= 2), for tests.

Run as::

    python tests/mcp_servers/sdk_server.py [stdio]
    python tests/mcp_servers/sdk_server.py http PORT [--json-response] [--stateless]
                                                     [--resumable] [--retry-ms N]

Options (both transports): ``--page-size N`` makes ``tools/list`` answer in
pages of N tools linked by ``nextCursor``; ``--named`` adds a prompt
``r\u00e9sum\u00e9`` and a resource ``note://caf\u00e9`` (names that travel
base64-wrapped in the 2026-07-28 ``Mcp-Name`` header).

Over HTTP the server listens on 127.0.0.1 (PORT 0 picks a free port) at path
``/mcp`` and prints one line ``LISTENING http://127.0.0.1:<port>/mcp`` on
stdout once the socket is bound, so a test can wait for it instead of
polling. ``--json-response`` answers POSTs with JSON instead of an SSE
stream; ``--stateless`` runs without ``Mcp-Session-Id``; ``--resumable`` keeps
every SSE event in memory so a client can resume a dropped stream with
``Last-Event-ID`` (the ``drop_stream`` tool drops one); ``--retry-ms`` sets
the SSE ``retry`` the server announces.

Because the SDK speaks every protocol version from 2024-11-05 to
2026-07-28, the same tools serve the handshake era (elicit / sample / roots
become server-to-client requests) and the 2026-07-28 era (they become
``input_required`` results the client answers and retries).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import socket
import sys
import warnings
from typing import Annotated, Any, List, Optional, Tuple

import anyio
from mcp.server.mcpserver import (
    Context,
    Elicit,
    ElicitationResult,
    ListRoots,
    MCPServer,
    Resolve,
    Sample,
)
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.streamable_http import EventCallback, EventMessage, EventStore
from mcp.shared.exceptions import MCPError
from mcp.types import (
    CreateMessageResult,
    ListRootsResult,
    ListToolsResult,
    PaginatedRequestParams,
    SamplingMessage,
    TextContent,
)
from pydantic import BaseModel, Field


class PagedServer(MCPServer):
    """MCPServer whose ``tools/list`` answers in pages when ``page_size`` is set."""

    page_size: Optional[int] = None

    async def _handle_list_tools(self, ctx: Any, params: Optional[PaginatedRequestParams]) -> ListToolsResult:
        tools = await self.list_tools()
        if not self.page_size:
            return ListToolsResult(tools=tools)
        start = int(params.cursor) if params is not None and params.cursor else 0
        end = start + self.page_size
        return ListToolsResult(tools=tools[start:end], next_cursor=str(end) if end < len(tools) else None)


# The log tool uses the logging capability, deprecated in 2026-07-28; the
# warning would only add noise to the server's stderr.
warnings.filterwarnings("ignore", message=".*deprecated as of 2026-07-28.*")

server = PagedServer("agcore-test-server", version="1.0.0")
_added = itertools.count(1)


@server.tool()
def echo(text: str) -> str:
    """Return the text unchanged."""
    return text


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
async def slow(seconds: float, text: str = "done") -> str:
    """Wait ``seconds``, then return ``text``."""
    # This tool exists to be slow (timeouts, cancellation, crash mid-call):
    # the sleep is its job, not a synchronisation.
    await anyio.sleep(seconds)
    return text


@server.tool()
def fail(message: str = "this tool always fails") -> str:
    """Raise, so the server answers with an ``isError`` result."""
    raise ToolError(message)


@server.tool()
def rpc_error(code: int = -32602, message: str = "refused on purpose") -> str:
    """Answer with a JSON-RPC error (not an isError result); ``data`` echoes the code."""
    raise MCPError(code=code, message=message, data={"refused": code})


class Weather(BaseModel):
    """A weather report."""

    city: str
    temperature: float = Field(description="degrees Celsius")
    conditions: str


@server.tool()
def structured(city: str) -> Weather:
    """Return a structured weather report (the tool has an outputSchema)."""
    return Weather(city=city, temperature=21.5, conditions="sunny")


@server.tool()
def nbytes(n: int) -> str:
    """Return ``n`` bytes of ASCII text."""
    return "x" * n


@server.tool()
def env_keys() -> str:
    """Return the names of the server's environment variables as a JSON list."""
    return json.dumps(sorted(os.environ))


@server.tool()
async def change_tools(ctx: Context) -> str:
    """Add a tool named ``added_<n>`` and send notifications/tools/list_changed."""
    name = f"added_{next(_added)}"

    def added() -> str:
        return name

    server.add_tool(added, name=name, description="A tool added at run time.")
    await ctx.session.send_tool_list_changed()
    return name


@server.tool()
async def progress(ctx: Context, steps: int = 3) -> str:
    """Report ``steps`` progress notifications, then return."""
    for step in range(1, steps + 1):
        await ctx.report_progress(step, steps, f"step {step} of {steps}")
    return f"{steps} steps"


@server.tool()
async def log(ctx: Context, level: str = "info", message: str = "hello") -> str:
    """Send one notifications/message at ``level``."""
    await ctx.session.send_log_message(level=level, data=message, logger="sdk_server")  # type: ignore[arg-type]
    return "logged"


@server.tool()
async def drop_stream(ctx: Context, text: str = "resumed") -> str:
    """Close this request's SSE stream, then answer (resumption over HTTP)."""
    await ctx.report_progress(1, 2, "before the drop")
    await ctx.close_sse_stream()
    await ctx.report_progress(2, 2, "after the drop")
    return text


class Preferences(BaseModel):
    """What ``elicit`` asks for; two fields have defaults."""

    name: str
    color: str = "blue"
    count: int = 3


@server.tool()
async def elicit_raw(ctx: Context) -> str:
    """Ask for Preferences with a plain elicitation/create; return the client's raw answer as JSON.

    Handshake versions only (2026-07-28 has no server-to-client requests).
    """
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "color": {"type": "string", "default": "blue"},
            "count": {"type": "integer", "default": 3},
        },
        "required": ["name"],
    }
    answer = await ctx.session.elicit_form("Tell me your preferences", schema, related_request_id=ctx.request_id)
    return json.dumps({"action": answer.action, "content": answer.content}, sort_keys=True)


def _ask_preferences() -> Elicit[Preferences]:
    return Elicit("Tell me your preferences", Preferences)


@server.tool()
def elicit(
    answer: Annotated[ElicitationResult[Preferences], Resolve(_ask_preferences)],
) -> str:
    """Ask the client for preferences (elicitation) and report what came back."""
    if answer.action != "accept":
        return f"action={answer.action}"
    data = answer.data
    return f"action=accept name={data.name} color={data.color} count={data.count}"


def _sample_prompt(prompt: str) -> Sample:
    return Sample(
        [SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
        max_tokens=50,
    )


@server.tool()
def sample(prompt: str, reply: Annotated[CreateMessageResult, Resolve(_sample_prompt)]) -> str:
    """Ask the client's model (sampling) and return its text."""
    content = reply.content
    text = content.text if isinstance(content, TextContent) else repr(content)
    return f"{reply.model}: {text}"


def _list_roots() -> ListRoots:
    return ListRoots()


@server.tool()
def roots(found: Annotated[ListRootsResult, Resolve(_list_roots)]) -> str:
    """Ask the client for its roots and return them as a JSON list of [uri, name]."""
    return json.dumps([[str(root.uri), root.name] for root in found.roots])


class _MemoryEventStore(EventStore):
    """Keeps every SSE event so a dropped stream can be replayed after Last-Event-ID."""

    def __init__(self) -> None:
        self._events: List[Tuple[str, str, Any]] = []
        self._ids = itertools.count(1)

    async def store_event(self, stream_id: str, message: Any) -> str:
        event_id = str(next(self._ids))
        self._events.append((event_id, stream_id, message))
        return event_id

    async def replay_events_after(self, last_event_id: str, send_callback: EventCallback) -> Optional[str]:
        found = [i for i, event in enumerate(self._events) if event[0] == last_event_id]
        if not found:
            return None
        stream_id = self._events[found[0]][1]
        for event_id, sid, message in self._events[found[0] + 1 :]:
            if sid == stream_id and message is not None:
                await send_callback(EventMessage(message, event_id))
        return stream_id


def _add_named() -> None:
    """Register a prompt and a resource whose names are not plain ASCII."""

    @server.prompt(name="r\u00e9sum\u00e9")
    def resume(topic: str) -> str:
        return f"Summarise {topic}."

    @server.resource("note://caf\u00e9", name="note", mime_type="text/plain")
    def note() -> str:
        return "espresso"


def _serve_http(args: argparse.Namespace) -> None:
    import uvicorn

    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", args.port))
    sock.listen(128)
    app = server.streamable_http_app(
        json_response=args.json_response,
        stateless_http=args.stateless,
        event_store=_MemoryEventStore() if args.resumable else None,
        retry_interval=args.retry_ms,
    )
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    uv_server = uvicorn.Server(config)
    port = sock.getsockname()[1]
    print(f"LISTENING http://127.0.0.1:{port}/mcp", flush=True)
    anyio.run(lambda: uv_server.serve(sockets=[sock]))


def main(argv: Optional[List[str]] = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("transport", nargs="?", default="stdio", choices=("stdio", "http"))
    parser.add_argument("port", nargs="?", type=int, default=0)
    parser.add_argument("--page-size", type=int, default=None)
    parser.add_argument("--json-response", action="store_true")
    parser.add_argument("--stateless", action="store_true")
    parser.add_argument("--resumable", action="store_true")
    parser.add_argument("--retry-ms", type=int, default=None)
    parser.add_argument("--named", action="store_true")
    args = parser.parse_args(argv)
    server.page_size = args.page_size
    if args.named:
        _add_named()
    if args.transport == "stdio":
        server.run("stdio")
    else:
        _serve_http(args)


if __name__ == "__main__":
    main(sys.argv[1:])
