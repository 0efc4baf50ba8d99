"""AnthropicProvider: structured output, images and documents, thinking, effort, extra_body and prompt caching.

Payloads follow Anthropic's documented shapes (Messages API reference,
"Structured outputs", "Vision", "PDF support", "Extended thinking", "Prompt
caching"); every request the provider sends is read back from the mock.
"""

from __future__ import annotations

import dataclasses
import json
from typing import Any, Dict, List

import pytest
import responses

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.anthropic import AnthropicProvider, _place_cache_breakpoints
from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.errors import OutputRefusedError
from agcore_sync.llm.events import MessageComplete
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.output import OutputSchema, anthropic_output_format
from agcore_sync.llm.types import Message, MessageRequest, StopReason, TextBlock, ThinkingBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

MODEL = "claude-sonnet-4-5"
URL = "https://api.anthropic.com/v1/messages"
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


@dataclasses.dataclass
class City:
    """A city."""

    name: str
    population: int


def body(content: List[Dict[str, Any]], stop_reason: str = "end_turn", **usage: int) -> Dict[str, Any]:
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF", "type": "message", "role": "assistant", "model": MODEL,
        "content": content, "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": 25, "output_tokens": 12, "cache_creation_input_tokens": 0,
                  "cache_read_input_tokens": 0, **usage},
    }


@pytest.fixture
def api():
    with responses.RequestsMock() as rsps:
        yield rsps


@pytest.fixture
def provider():
    p = AnthropicProvider(MODEL, api_key="sk-ant-test-0123456789")
    yield p
    p.close()


def sent(api, i: int = 0) -> Dict[str, Any]:
    return json.loads(api.calls[i].request.body)


def answer(api, content, **kwargs):
    api.add(responses.POST, URL, json=body(content, **kwargs))


# -- structured output --------------------------------------------------------------


def test_native_output_sends_output_config_format_and_returns_the_instance(api, provider):
    answer(api, [{"type": "text", "text": '{"name": "Lyon", "population": 522250}'}])
    cycle = LlmCycle(provider)
    response = cycle.submit("Which city?", output=City)
    assert response.output == City("Lyon", 522250)
    wire = sent(api)
    assert wire["output_config"] == {"format": anthropic_output_format(OutputSchema.of(City))}
    assert wire["output_config"]["format"]["type"] == "json_schema"
    assert "tools" not in wire


def test_effort_and_format_share_one_output_config(api, provider):
    answer(api, [{"type": "text", "text": '{"name": "Lyon", "population": 1}'}])
    LlmCycle(provider, CycleConfig(reasoning_effort="low")).submit("Which city?", output=City)
    assert set(sent(api)["output_config"]) == {"format", "effort"}
    assert sent(api)["output_config"]["effort"] == "low"


def test_stop_reason_refusal_raises_output_refused_error_without_a_retry(api, provider):
    answer(api, [{"type": "text", "text": "I can't help with that."}], stop_reason="refusal")
    with pytest.raises(OutputRefusedError) as info:
        LlmCycle(provider, CycleConfig(output_retries=2)).submit("Which city?", output=City)
    assert info.value.refusal == "I can't help with that."
    assert len(api.calls) == 1


def test_tool_mode_forces_the_output_tool_with_tool_choice_tool(api, provider):
    answer(api, [{"type": "tool_use", "id": "toolu_01A", "name": "final_result",
                  "input": {"name": "Lyon", "population": 3}}], stop_reason="tool_use")
    response = LlmCycle(provider, CycleConfig(output_mode="tool")).submit("Which city?", output=City)
    assert response.output == City("Lyon", 3)
    wire = sent(api)
    assert wire["tool_choice"] == {"type": "tool", "name": "final_result"}
    assert wire["tools"][0]["name"] == "final_result" and "output_config" not in wire


def test_a_streamed_answer_carries_the_output_on_its_message_complete(api, provider):
    events = [
        ("message_start", {"type": "message_start", "message": {
            "id": "msg_1", "type": "message", "role": "assistant", "model": MODEL, "content": [],
            "stop_reason": None, "stop_sequence": None, "usage": {"input_tokens": 20, "output_tokens": 1}}}),
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": '{"name": "Lyon", '}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": '"population": 7}'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "end_turn", "stop_sequence": None},
                           "usage": {"output_tokens": 9}}),
        ("message_stop", {"type": "message_stop"}),
    ]
    raw = "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()
    api.add(responses.POST, URL, body=raw, content_type="text/event-stream")
    streamed = list(LlmCycle(provider).submit_stream("Which city?", output=City))
    complete = [e for e in streamed if isinstance(e, MessageComplete)][-1]
    assert complete.full_response.output == City("Lyon", 7)
    assert sent(api)["stream"] is True and "output_config" in sent(api)


# -- thinking, extra_body ------------------------------------------------------------


def test_a_thinking_budget_is_sent_and_max_tokens_leaves_room_for_the_answer(api, provider):
    answer(api, [{"type": "thinking", "thinking": "Let me think", "signature": "EqQBCgIYAhIM1gbcDa9GJwZA"},
                 {"type": "text", "text": "42"}])
    response = provider.chat(MessageRequest(None, [Message.user("q")], thinking=2048))
    wire = sent(api)
    assert wire["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert wire["max_tokens"] > 2048
    assert response.message.content[0] == ThinkingBlock("Let me think", "EqQBCgIYAhIM1gbcDa9GJwZA")


def test_adaptive_thinking_and_signed_thinking_going_back_unchanged(api, provider):
    answer(api, [{"type": "text", "text": "ok"}])
    history = [Message.user("q"), Message("assistant", [ThinkingBlock("hmm", "sig-1"), TextBlock("a")]),
               Message.user("more")]
    provider.chat(MessageRequest(None, history, thinking="adaptive", max_tokens=5000))
    wire = sent(api)
    assert wire["thinking"] == {"type": "adaptive"} and wire["max_tokens"] == 5000
    assert wire["messages"][1]["content"][0] == {"type": "thinking", "thinking": "hmm", "signature": "sig-1"}


@pytest.mark.parametrize("budget, max_tokens", [(1023, None), (4096, 4096), (5000, 4096)])
def test_a_thinking_budget_under_1024_or_not_below_max_tokens_is_a_value_error_at_the_call(budget, max_tokens):
    with pytest.raises(ValueError, match="thinking budget"):
        CycleConfig(thinking=budget, max_tokens=max_tokens)
    with pytest.raises(ValueError, match="thinking budget"):
        MessageRequest(None, [Message.user("q")], thinking=budget, max_tokens=max_tokens)


def test_extra_body_is_merged_last_and_replaces_top_level_keys(api, provider):
    answer(api, [{"type": "text", "text": "ok"}])
    provider.chat(MessageRequest(None, [Message.user("q")], max_tokens=100,
                                 extra_body={"max_tokens": 7, "metadata": {"user_id": "u-1"}}))
    wire = sent(api)
    assert wire["max_tokens"] == 7 and wire["metadata"] == {"user_id": "u-1"}


# -- images and documents -------------------------------------------------------------


def test_images_and_documents_become_image_and_document_blocks(api, provider):
    answer(api, [{"type": "text", "text": "a cat"}])
    image = ImageBlock.from_bytes(PNG, "image/png")
    pdf = DocumentBlock.from_bytes(b"%PDF-1.4 tiny", "application/pdf")
    url_image = ImageBlock.from_url("https://example.com/cat.jpg")
    provider.chat(MessageRequest(None, [Message.user("Describe", image, url_image, pdf)]))
    content = sent(api)["messages"][0]["content"]
    assert content[0] == {"type": "text", "text": "Describe"}
    assert content[1] == {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                      "data": image.data}}
    assert content[2] == {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}}
    assert content[3]["type"] == "document" and content[3]["source"]["media_type"] == "application/pdf"


def test_a_tool_returning_an_image_sends_it_inside_the_tool_result(api, provider):
    @tool
    def snapshot() -> Any:
        """Take a picture."""
        return [TextBlock("the garden"), ImageBlock.from_bytes(PNG, "image/png")]

    answer(api, [{"type": "tool_use", "id": "toolu_01", "name": "snapshot", "input": {}}], stop_reason="tool_use")
    answer(api, [{"type": "text", "text": "I see a garden."}])
    with ToolRegistry() as registry:
        registry.register(snapshot)
        LlmCycle(provider).submit_with_tools("What is outside?", registry)
    result = sent(api, 1)["messages"][-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_01"
    assert result["content"][0] == {"type": "text", "text": "the garden"}
    assert result["content"][1]["type"] == "image" and result["content"][1]["source"]["type"] == "base64"


# -- prompt caching -------------------------------------------------------------------


@tool
def read_page(page: int) -> str:
    """Read one page of the manual.

    Args:
        page: the page number.
    """
    return f"page {page}: " + "lorem ipsum " * 20


def breakpoints(wire: Dict[str, Any]) -> List[str]:
    found = [f"tool:{t['name']}" for t in wire.get("tools", []) if "cache_control" in t]
    if isinstance(wire.get("system"), list):
        found += ["system" for b in wire["system"] if "cache_control" in b]
    for i, message in enumerate(wire["messages"]):
        found += [f"message:{i}" for b in message["content"] if "cache_control" in b]
    return found


def unmarked(messages: List[Dict[str, Any]]) -> List[Dict[str, Any]]:
    return [{**m, "content": [{k: v for k, v in b.items() if k != "cache_control"} for b in m["content"]]}
            for m in messages]


def test_a_recorded_tool_loop_reads_the_previous_rounds_cache_and_usage_shows_the_reads(api, provider):
    answer(api, [{"type": "tool_use", "id": "toolu_1", "name": "read_page", "input": {"page": 1}}],
           stop_reason="tool_use", input_tokens=50, cache_creation_input_tokens=2000)
    answer(api, [{"type": "tool_use", "id": "toolu_2", "name": "read_page", "input": {"page": 2}}],
           stop_reason="tool_use", input_tokens=60, cache_read_input_tokens=2000, cache_creation_input_tokens=150)
    answer(api, [{"type": "text", "text": "Done."}], input_tokens=40, cache_read_input_tokens=2150,
           cache_creation_input_tokens=140)
    pricing = Pricing(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)
    with ToolRegistry() as registry, AgentSession(provider, CycleConfig(prompt_cache=True), registry,
                                                  system_prompt="You read manuals.", pricing=pricing) as session:
        registry.register(read_page)
        session.submit_turn("Summarise pages 1 and 2.")
        rounds = [sent(api, i) for i in range(3)]
        assert session.cost_so_far.cache_read_tokens == 4150
        assert session.cost_so_far.cache_write_tokens == 2290
        expected = pricing.cost(session.cost_so_far)
        assert session.cost_usd == pytest.approx(expected)
        without_cache = Pricing(input=3.0, output=15.0).cost(session.cost_so_far)
        assert session.cost_usd < without_cache, "cache reads are billed at the cache price"
    assert breakpoints(rounds[0]) == ["tool:read_page", "system", "message:0"]
    for n in (1, 2):
        # Round n+1 carries a breakpoint exactly where round n's last one was, and one at its own end.
        assert breakpoints(rounds[n]) == ["tool:read_page", "system", f"message:{2 * n - 2}", f"message:{2 * n}"]
        previous, current = rounds[n - 1], rounds[n]
        assert current["tools"] == previous["tools"] and current["system"] == previous["system"]
        assert unmarked(current["messages"][: len(previous["messages"])]) == unmarked(previous["messages"]), \
            "the previous request's content is a prefix of this one (markers do not change the cached content)"
        assert len(breakpoints(current)) <= 4


def test_no_cache_control_without_prompt_cache(api, provider):
    answer(api, [{"type": "text", "text": "ok"}])
    provider.chat(MessageRequest(None, [Message.user("q")], system="s"))
    assert breakpoints(sent(api)) == [] and sent(api)["system"] == "s"


def test_breakpoints_skip_thinking_blocks_and_empty_bodies():
    wire = {"messages": [{"role": "assistant", "content": [{"type": "text", "text": "a"},
                                                           {"type": "thinking", "thinking": "t", "signature": "s"}]}]}
    _place_cache_breakpoints(wire)
    assert "cache_control" in wire["messages"][0]["content"][0]
    assert "cache_control" not in wire["messages"][0]["content"][1]
    empty: Dict[str, Any] = {"messages": []}
    _place_cache_breakpoints(empty)
    assert empty == {"messages": []}


def test_stop_reason_refusal_maps_to_content_filter(api, provider):
    answer(api, [], stop_reason="refusal")
    assert provider.chat(MessageRequest(None, [Message.user("q")])).stop_reason is StopReason.CONTENT_FILTER
