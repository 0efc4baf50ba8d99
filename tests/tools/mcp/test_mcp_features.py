"""Protocol pieces against the stdlib raw server and pure values: pages, broken tools, errors, content, sampling."""

from __future__ import annotations

import base64
import logging
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync import CycleConfig, ImageBlock, LlmCycle, MockProvider, TextBlock, ToolRegistry
from agcore_sync.llm.types import MessageRequest, Role
from agcore_sync.mcp import McpTool, McpToolResult, sampling_handler_for
from agcore_sync.mcp.client.sampling import USER_REJECTED
from agcore_sync.mcp.shared.content import mcp_blocks, mcp_message
from agcore_sync.mcp.shared.pages import fetch_all
from agcore_sync.tools.error import McpConnectionError, McpError

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(8)).decode()


# -- lists follow nextCursor ------------------------------------------------------


def test_every_list_follows_next_cursor_to_the_end(open_client, raw_server):
    with open_client(raw_server) as client:
        assert [r.uri for r in client.list_resources()] == ["raw://r0", "raw://r1", "raw://r2"]
        assert [p.name for p in client.list_prompts()] == ["first", "second"]
        cursors = [(m.get("params") or {}).get("cursor") for m in client.transport.requests("resources/list")]
    assert cursors == [None, "p2", "p3"]


def test_a_server_repeating_a_cursor_is_an_error_not_a_loop():
    def request(method: str, params: Optional[Dict[str, Any]]) -> Dict[str, Any]:
        return {"resources": [{"uri": "x://1"}], "nextCursor": "again"}

    with pytest.raises(McpError, match="repeated"):
        fetch_all(request, "resources/list", "resources", "loop")


# -- one broken tool does not sink the turn ---------------------------------------------


def test_tools_with_an_invalid_schema_or_name_are_left_out_with_a_warning_and_the_rest_work(
    open_client, raw_server, caplog
):
    caplog.set_level(logging.WARNING, logger="agcore_sync.mcp")
    with open_client(raw_server + ["--broken-tools"], name="shaky") as client:
        tools = client.into_tools()
        names = {tool.name for tool in tools}
        assert "echo" in names and "broken" not in names and "bad.name" not in names
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("'shaky'" in w and "'broken'" in w for w in warnings)
        assert any("'shaky'" in w and "'bad.name'" in w for w in warnings)
        registry = ToolRegistry()
        registry.register_all(tools)
        try:
            provider = MockProvider([MockProvider.tool_calls(("echo", {"text": "still here"})),
                                     MockProvider.text("done")])
            response = LlmCycle(provider, CycleConfig()).submit_with_tools("go", registry)
        finally:
            registry.close()
    assert response.message.text == "done"
    tool_message = provider.requests[-1].messages[-1]
    assert tool_message.content[0].text == "still here"


def test_a_prefix_that_makes_a_name_too_long_leaves_the_tool_out(open_client, raw_server, caplog):
    with open_client(raw_server) as client:
        tools = client.into_tools(prefix="p" * 60)
    kept = {tool.server_tool_name for tool in tools}
    assert "echo" in kept  # 60 + 4 = 64 characters: allowed
    assert "params" not in kept  # 66: left out
    assert any("ppparams'" in r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)


# -- errors ---------------------------------------------------------------------------


def test_a_crash_error_carries_the_stderr_tail_in_its_message_and_is_not_also_a_warning(
    open_client, raw_server, caplog
):
    caplog.set_level(logging.DEBUG, logger="agcore_sync.mcp")
    with open_client(raw_server) as client:
        with pytest.raises(McpConnectionError) as caught:
            client.call_tool("crash", {"code": 3, "lines": ["fatal: out of cheese", "giving up"]})
    assert "fatal: out of cheese\ngiving up" in str(caught.value)
    assert str(caught.value).count("out of cheese") == 1
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING and "out of cheese" in r.getMessage()]


# -- content ----------------------------------------------------------------------------


def test_mcp_content_becomes_text_and_image_blocks_with_markers_for_the_rest():
    blocks = mcp_blocks([
        {"type": "text", "text": "hello"},
        {"type": "image", "data": PNG, "mimeType": "image/png"},
        {"type": "image", "data": PNG, "mimeType": "image/bmp"},
        {"type": "audio", "data": base64.b64encode(bytes(10)).decode(), "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.txt", "name": "a"},
        {"type": "resource", "resource": {"uri": "file:///b.txt", "text": "bee"}},
        {"type": "resource", "resource": {"uri": "file:///c.png", "mimeType": "image/png", "blob": PNG}},
        {"type": "resource", "resource": {"uri": "file:///d.bin", "mimeType": "application/zip", "blob": PNG}},
        {"type": "hologram"},
    ])
    assert blocks[0] == TextBlock("hello")
    assert blocks[1] == ImageBlock("image/png", data=PNG)
    assert isinstance(blocks[2], TextBlock) and "image/bmp" in blocks[2].text
    assert blocks[3].text.startswith("[audio: audio/wav, 10 bytes")
    assert "file:///a.txt" in blocks[4].text
    assert blocks[5].text == "[resource <file:///b.txt>]\nbee"
    assert blocks[6] == ImageBlock("image/png", data=PNG)
    assert "file:///d.bin" in blocks[7].text and "application/zip" in blocks[7].text
    assert "hologram" in blocks[8].text


def test_a_prompt_message_becomes_a_message_with_its_role():
    message = mcp_message({"role": "assistant", "content": {"type": "text", "text": "hi"}})
    assert (message.role, message.text) == (Role.ASSISTANT, "hi")


class _Caller:
    server_name = "double"

    def __init__(self, result: McpToolResult) -> None:
        self.result = result

    def call_tool(self, name: str, args: Any = None, timeout: Any = None) -> McpToolResult:
        return self.result


SCHEMA = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}


def test_structured_content_that_does_not_match_the_output_schema_is_a_recoverable_mcp_error():
    tool = {"name": "count", "inputSchema": {"type": "object"}, "outputSchema": SCHEMA}
    good = McpTool(_Caller(McpToolResult((), {"n": 3})), tool)
    assert good.execute({}) == {"n": 3}
    bad = McpTool(_Caller(McpToolResult(({"type": "text", "text": "{}"},), {"n": "three"})), tool)
    with pytest.raises(McpError, match=r"does not match its outputSchema at \$\.n") as caught:
        bad.execute({})
    assert caught.value.recoverable
    missing = McpTool(_Caller(McpToolResult(({"type": "text", "text": "x"},), None)), tool)
    with pytest.raises(McpError, match="no structuredContent"):
        missing.execute({})


def test_a_tool_result_with_an_image_is_a_list_of_blocks():
    tool = McpTool(_Caller(McpToolResult(({"type": "text", "text": "look"},
                                          {"type": "image", "data": PNG, "mimeType": "image/png"}))),
                   {"name": "pic"})
    assert tool.execute({}) == [TextBlock("look"), ImageBlock("image/png", data=PNG)]


# -- sampling ---------------------------------------------------------------------------


def _params(**extra: Any) -> Dict[str, Any]:
    return {
        "messages": [
            {"role": "user", "content": {"type": "text", "text": "what is this?"}},
            {"role": "user", "content": [{"type": "image", "data": PNG, "mimeType": "image/png"}]},
        ],
        "maxTokens": 200,
        **extra,
    }


def test_sampling_maps_preferences_context_stops_and_images_into_the_provider_request():
    provider = MockProvider([MockProvider.text("a cat", model="big-model")])
    seen: List[Any] = []

    def model_for(preferences: Any) -> str:
        seen.append(preferences)
        return "big-model"

    handler = sampling_handler_for(provider, model_for=model_for, context=lambda include: f"context for {include}",
                                   max_tokens=100)
    result = handler(_params(systemPrompt="Be brief.", includeContext="thisServer", stopSequences=["END"],
                             temperature=0.2, modelPreferences={"hints": [{"name": "claude"}]}))
    assert result == {"role": "assistant", "content": {"type": "text", "text": "a cat"}, "model": "big-model",
                      "stopReason": "endTurn"}
    request: MessageRequest = provider.requests[0]
    assert request.model == "big-model" and seen == [{"hints": [{"name": "claude"}]}]
    assert request.system == "Be brief.\n\ncontext for thisServer"
    assert request.max_tokens == 100 and request.stop == ("END",) and request.temperature == 0.2
    assert request.messages[1].content == (ImageBlock("image/png", data=PNG),)


def test_a_refused_sampling_request_never_reaches_the_provider():
    provider = MockProvider([])
    asked: List[Any] = []
    handler = sampling_handler_for(provider, approve=lambda params: asked.append(params) or False)
    with pytest.raises(McpError) as caught:
        handler(_params())
    assert caught.value.code == USER_REJECTED and asked and provider.requests == []


def test_sampling_handler_for_checks_its_arguments():
    with pytest.raises(TypeError, match="LlmProvider"):
        sampling_handler_for(object())
    with pytest.raises(TypeError, match="approve"):
        sampling_handler_for(MockProvider([]), approve="yes")
