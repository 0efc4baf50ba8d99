"""The official MCP Python SDK's client (``mcp``) against McpServer over stdio and Streamable HTTP.

The SDK is asynchronous; each test drives it with ``anyio.run`` in the
test's thread, so nothing async runs in the library.
"""

from __future__ import annotations

from typing import Any, Dict, List

import pytest

mcp = pytest.importorskip("mcp")
anyio = pytest.importorskip("anyio")

import mcp_types as types  # noqa: E402
from mcp import ClientSession, StdioServerParameters  # noqa: E402
from mcp.client.stdio import stdio_client  # noqa: E402
from mcp.client.streamable_http import streamable_http_client  # noqa: E402


async def _sampling(context: Any, params: Any) -> Any:
    return types.CreateMessageResult(role="assistant", content=types.TextContent(type="text", text="forty-two"),
                                     model="sdk-model")


async def _elicitation(context: Any, params: Any) -> Any:
    return types.ElicitResult(action="accept", content={"color": "blue"})


def _exercise(open_streams: Any) -> Dict[str, Any]:
    seen: Dict[str, Any] = {"logs": [], "progress": []}

    async def logging_callback(params: Any) -> None:
        seen["logs"].append(params.data)

    async def progress(value: float, total: Any, message: Any) -> None:
        seen["progress"].append((value, total))

    async def main() -> None:
        async with open_streams() as streams:
            read, write = streams[0], streams[1]
            async with ClientSession(read, write, sampling_callback=_sampling, elicitation_callback=_elicitation,
                                     logging_callback=logging_callback) as session:
                init = await session.initialize()
                seen["server"] = init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name
                seen["tools"] = sorted(t.name for t in (await session.list_tools()).tools)
                seen["add"] = await session.call_tool("add", {"a": 20, "b": 22})
                seen["fail"] = await session.call_tool("fail", {})
                seen["shout"] = await session.call_tool("shout", {"text": "hey"}, progress_callback=progress)
                seen["sample"] = await session.call_tool("ask_model", {"question": "q"})
                seen["elicit"] = await session.call_tool("ask_user", {"question": "q"})
                seen["readme"] = await session.read_resource("demo://readme")
                seen["prompt"] = await session.get_prompt("greet", {"who": "Bo"})

    anyio.run(main)
    return seen


def _check(seen: Dict[str, Any]) -> None:
    assert seen["server"] == "demo"
    assert {"add", "ask_model", "ask_user", "fail", "shout"} <= set(seen["tools"])
    add = seen["add"]
    assert add.content[0].text == "42"
    assert (add.structured_content if hasattr(add, "structured_content") else add.structuredContent) == {"result": 42}
    fail = seen["fail"]
    assert (fail.is_error if hasattr(fail, "is_error") else fail.isError) is True
    assert seen["shout"].content[0].text == "HEY"
    assert seen["logs"] == ["shouting hey"]
    assert seen["progress"] == [(1, 2), (2, 2)]
    assert seen["sample"].content[0].text == "forty-two"
    assert seen["elicit"].content[0].text == "accept:{'color': 'blue', 'size': 3}"
    assert seen["readme"].contents[0].text == "read me"
    assert seen["prompt"].messages[0].content.text == "Say hello to Bo, warmly."


def test_the_sdk_client_uses_every_feature_over_stdio(stdio_argv: List[str]) -> None:
    params = StdioServerParameters(command=stdio_argv[0], args=stdio_argv[1:])
    _check(_exercise(lambda: stdio_client(params)))


def test_the_sdk_client_uses_every_feature_over_streamable_http(http_server: Any) -> None:
    _check(_exercise(lambda: streamable_http_client(http_server.url)))
