"""Tools returning an ImageBlock or a list of blocks, and MCP image content reaching the model as an image."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest

from agcore_sync.llm.media import ImageBlock
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Role, TextBlock, ToolResultBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.mcp.tools import content_blocks
from agcore_sync.tools.function import tool
from agcore_sync.tools.invocation import ToolInvocation
from agcore_sync.tools.registry import ToolRegistry

PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
MEDIA_SERVER = str(Path(__file__).resolve().parents[1] / "mcp_servers" / "media_server.py")


def test_an_image_result_is_blocks_and_its_text_names_the_image():
    image = ImageBlock.from_bytes(PNG, "image/png")
    invocation = ToolInvocation("snap", {}, output=image)
    assert invocation.blocks == (image,)
    assert invocation.result_content() == (image,)
    assert invocation.content() == "[image: image/png]"


def test_other_results_are_not_blocks():
    assert ToolInvocation("t", {}, output="text").blocks is None
    assert ToolInvocation("t", {}, output=[]).result_content() == "[]"
    assert ToolInvocation("t", {}, output=[TextBlock("a"), "b"]).blocks is None
    assert ToolInvocation("t", {}, error=ValueError("x")).blocks is None


def test_a_tool_returning_blocks_reaches_the_model_as_a_tool_result_of_blocks():
    image = ImageBlock.from_bytes(PNG, "image/png")

    @tool
    def snap() -> Any:
        """Take a picture."""
        return [TextBlock("x" * 50), image]

    provider = MockProvider([MockProvider.tool_calls(("c1", "snap", {})), MockProvider.text("ok")])
    with ToolRegistry() as registry:
        registry.register(snap)
        LlmCycle(provider, CycleConfig(max_tool_result_bytes=10)).submit_with_tools("look", registry)
    result = provider.requests[1].messages[-1].content[0]
    assert isinstance(result, ToolResultBlock) and not result.is_error
    assert result.content[1] == image
    assert result.content[0].text.startswith("x" * 10 + "\n[... 40 bytes cut"), "text blocks are cut, images kept"


def test_content_blocks_translate_every_mcp_content_type():
    blocks = content_blocks([
        {"type": "text", "text": "hi"},
        {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
        {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
        {"type": "resource_link", "uri": "file:///a.md", "name": "a"},
        {"type": "resource", "resource": {"uri": "memo://1", "text": "body"}},
        {"type": "resource", "resource": {"uri": "memo://2", "blob": "AAE=", "mimeType": "application/zip"}},
        {"type": "image", "data": "PHN2Zy8+", "mimeType": "image/svg+xml"},
        {"type": "hologram"},
    ])
    assert blocks[0] == TextBlock("hi")
    assert blocks[1] == ImageBlock("image/png", data="iVBORw0KGgo=")
    assert "audio/wav" in blocks[2].text and "file:///a.md" in blocks[3].text
    assert blocks[4].text == "[resource <memo://1>]\nbody"
    assert "memo://2" in blocks[5].text and "application/zip" in blocks[5].text
    assert "image/svg+xml" in blocks[6].text and blocks[6].text.endswith("not shown]")
    assert "hologram" in blocks[7].text


@pytest.fixture
def media_client():
    pytest.importorskip("mcp", reason="the official MCP Python SDK (test extra) is not installed")
    client = McpClient("media", StdioTransport(sys.executable, [MEDIA_SERVER]))
    try:
        client.connect()
        yield client
    finally:
        client.close()


def test_an_mcp_image_reaches_the_model_as_an_image_block(media_client):
    provider = MockProvider([MockProvider.tool_calls(("c1", "picture", {})), MockProvider.text("a red dot")])
    with ToolRegistry() as registry:
        for mcp_tool in media_client.into_tools():
            registry.register(mcp_tool)
        LlmCycle(provider).submit_with_tools("what is it?", registry)
    message = provider.requests[1].messages[-1]
    assert message.role is Role.TOOL
    caption, image = message.content[0].content
    assert caption == TextBlock("a red dot")
    assert isinstance(image, ImageBlock) and image.media_type == "image/png"


def test_mcp_audio_and_resources_arrive_as_text_with_their_uris(media_client):
    tools = {t.name: t for t in media_client.into_tools()}
    blocks = tools["mixed"].execute({})
    texts = [b.text for b in blocks if isinstance(b, TextBlock)]
    assert any(isinstance(b, ImageBlock) for b in blocks)
    assert any("audio/wav" in t for t in texts)
    assert any("file:///srv/notes.md" in t for t in texts)
    assert "[resource <memo://1>]\nremember the milk" in texts
    assert any("memo://2" in t for t in texts)
