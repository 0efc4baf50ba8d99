"""The official ``openai`` SDK as the oracle for OpenAIResponsesProvider.

Each recorded-shape stream in ``responses_corpus/`` is served twice from a
local server, byte chunks cut at awkward places (inside multi-byte
characters, inside JSON escapes of tool arguments): once to the SDK's own
accumulation (``client.responses.stream(...)``), once to our provider. Text,
tool calls (id, call_id, name, parsed arguments), reasoning items, stop
reason and usage must agree. Plain responses are checked the same way with
``responses.create``, and request bodies against the SDK's parameter list.
"""

from __future__ import annotations

import json
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync import LlmError, Message, MessageRequest, OpenAIResponsesProvider, ToolDef
from agcore_sync.llm._thinking_origin import OPENAI_RESPONSES, origin_of, read_envelope
from agcore_sync.llm.events import CostUpdate, MessageComplete
from agcore_sync.llm.types import ThinkingBlock

openai = pytest.importorskip("openai")

CORPUS = Path(__file__).parent / "responses_corpus"
STREAMS = sorted(p.name for p in CORPUS.glob("*.sse"))
MODEL = "gpt-5-mini"


def test_the_corpus_has_at_least_fifteen_streams():
    assert len(STREAMS) >= 15


def _chunks(data: bytes, size: int) -> List[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def _cuts(name: str, data: bytes) -> List[List[bytes]]:
    """Whole; every 5 bytes; and, for the streams with multi-byte text or escapes, every byte."""
    cuts = [[data], _chunks(data, 5)]
    if name.startswith(("02_", "05_")):
        cuts.append(_chunks(data, 1))
    return cuts


def _sdk_stop(status: str, incomplete_reason: Optional[str], has_calls: bool, refused: bool) -> str:
    if status == "incomplete":
        return {"max_output_tokens": "length", "content_filter": "content_filter"}.get(incomplete_reason, "error")
    if refused:
        return "content_filter"
    return "tool_use" if has_calls else "stop"


def _sdk_summary(response: Any) -> Dict[str, Any]:
    text, calls, reasoning, refused = [], [], [], False
    for item in response.output:
        if item.type == "message":
            for part in item.content:
                if part.type == "refusal":
                    refused = True
                    text.append(part.refusal)
                else:
                    text.append(part.text)
        elif item.type == "function_call":
            calls.append((item.call_id, item.name, json.loads(item.arguments or "{}")))
        elif item.type == "reasoning":
            reasoning.append(item.to_dict())
    details = response.incomplete_details
    usage = response.usage
    return {
        "text": "".join(text),
        "calls": calls,
        "reasoning": reasoning,
        "stop": _sdk_stop(response.status, details.reason if details else None, bool(calls), refused),
        "usage": (usage.input_tokens, usage.output_tokens, usage.input_tokens_details.cached_tokens),
    }


def _our_summary(response: Any) -> Dict[str, Any]:
    reasoning = []
    for block in response.message.content:
        if isinstance(block, ThinkingBlock):
            assert origin_of(block) == OPENAI_RESPONSES
            reasoning.append(read_envelope(block.signature)["item"])
    return {
        "text": response.message.text,
        "calls": [(b.id, b.name, b.input) for b in response.message.tool_uses],
        "reasoning": reasoning,
        "stop": response.stop_reason.value,
        "usage": (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.cache_read_tokens),
    }


def _sdk_stream(url: str) -> Dict[str, Any]:
    """Run the SDK's accumulation; return its summary, or its failure (code, message, usage)."""
    with openai.OpenAI(api_key="sk-test", base_url=url, max_retries=0) as client:
        with client.responses.stream(model=MODEL, input="hi") as stream:
            ended = None
            for event in stream:
                if event.type == "error":
                    return {"error": (event.code, None)}
                if event.type in ("response.failed", "response.incomplete"):
                    ended = event.response
            if ended is not None and ended.status == "failed":
                usage = ended.usage
                return {"error": (ended.error.code, (usage.input_tokens, usage.output_tokens))}
            response = ended if ended is not None else stream.get_final_response()
    return _sdk_summary(response)


def _our_stream(provider: OpenAIResponsesProvider) -> Dict[str, Any]:
    usage = None
    events = []
    try:
        for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
            events.append(event)
            if isinstance(event, CostUpdate):
                usage = (event.usage.prompt_tokens, event.usage.completion_tokens)
    except LlmError as exc:
        body = exc.body if isinstance(exc.body, dict) else {}
        return {"error": (body.get("code"), usage)}
    complete = events[-1]
    assert isinstance(complete, MessageComplete)
    return _our_summary(complete.full_response)


@pytest.mark.parametrize("name", STREAMS)
def test_the_sdk_and_the_provider_read_each_recorded_stream_alike(name, stream_server):
    data = (CORPUS / name).read_bytes()
    for steps in _cuts(name, data):
        stream_server.add_response(steps)
        stream_server.add_response(steps)
        expected = _sdk_stream(stream_server.url + "/v1")
        with closing(OpenAIResponsesProvider(MODEL, api_key="sk-test", base_url=stream_server.url + "/v1")) as provider:
            got = _our_stream(provider)
        assert got == expected, f"{name}, {len(steps)} chunks"
    assert not stream_server.errors


def _final_response(name: str) -> Dict[str, Any]:
    last = None
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("data: "):
            last = json.loads(line[6:])
    assert last is not None and last["type"] == "response.completed"
    return last["response"]


@pytest.mark.parametrize("name", [n for n in STREAMS if not n.startswith(("10_", "11_", "12_", "13_"))])
def test_the_sdk_and_the_provider_read_each_plain_response_alike(name, stream_server):
    body = json.dumps(_final_response(name)).encode()
    headers = {"Content-Type": "application/json"}
    stream_server.add_response([body], headers=headers)
    stream_server.add_response([body], headers=headers)
    with openai.OpenAI(api_key="sk-test", base_url=stream_server.url + "/v1", max_retries=0) as client:
        expected = _sdk_summary(client.responses.create(model=MODEL, input="hi"))
    with closing(OpenAIResponsesProvider(MODEL, api_key="sk-test", base_url=stream_server.url + "/v1")) as provider:
        got = _our_summary(provider.chat(MessageRequest(None, [Message.user("hi")])))
    assert got == expected


def test_every_key_of_our_request_body_is_a_parameter_the_sdk_sends_the_same(stream_server):
    """Our body, given to the SDK as keyword arguments, goes out unchanged (no unknown key)."""
    data = (CORPUS / "08_reasoning_summary_call.sse").read_bytes()
    stream_server.add_response([data])
    with closing(OpenAIResponsesProvider("o4-mini", api_key="sk-test", base_url=stream_server.url + "/v1",
                                 reasoning_summary="auto")) as provider:
        tools = [ToolDef("get_weather", "Weather of a city",
                         {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})]
        first = MessageRequest(None, [Message.user("Weather in Oslo?")], system="Be brief.", tools=tools,
                               max_tokens=500, temperature=None)
        response = list(provider.chat_stream(first))[-1].full_response
        second = MessageRequest(None, [Message.user("Weather in Oslo?"), response.message,
                                       Message.tool_result(response.message.tool_uses[0].id, "12C")],
                                system="Be brief.", tools=tools, max_tokens=500)
        ours = provider._body(second, "o4-mini", stream=False)
    stream_server.add_response([json.dumps(_final_response("01_text.sse")).encode()],
                               headers={"Content-Type": "application/json"})
    with openai.OpenAI(api_key="sk-test", base_url=stream_server.url + "/v1", max_retries=0) as client:
        client.responses.create(**ours)
    sent = stream_server.requests[-1].json
    assert sent == ours
    assert ours["include"] == ["reasoning.encrypted_content"] and ours["store"] is False
    assert [item.get("type") for item in ours["input"]] == [None, "reasoning", "function_call",
                                                            "function_call_output"]


def _translate(name: str) -> List[Any]:
    from agcore_sync._http.masking import Masker
    from agcore_sync._http.sse import SseParser
    from agcore_sync.llm._responses_stream import ResponsesStreamTranslator

    translator = ResponsesStreamTranslator(MODEL, pricing=None, masker=Masker(None))
    parser = SseParser()
    events: List[Any] = []
    for sse_event in [*parser.feed((CORPUS / name).read_bytes()), *parser.close()]:
        events.extend(translator.feed(sse_event))
    assert translator.done
    return events


@pytest.mark.parametrize("name", [n for n in STREAMS if not n.startswith(("12_", "13_"))])
def test_a_streamed_response_equals_the_plain_one_and_replays_through_the_accumulator(name):
    from agcore_sync._http.masking import Masker
    from agcore_sync.llm._responses_wire import parse_response
    from agcore_sync.llm.partial import PartialMessageResponse
    from agcore_sync.llm.types import MessageResponse

    events = _translate(name)
    streamed = events[-1].full_response
    final = None
    for line in (CORPUS / name).read_text(encoding="utf-8").splitlines():
        if line.startswith("data: "):
            data = json.loads(line[6:])
            if data["type"] in ("response.completed", "response.incomplete"):
                final = data["response"]
    plain = parse_response(final, MODEL, Masker(None))
    assert streamed.message == plain.message  # reasoning signatures byte-exact, next item ids included
    assert (streamed.stop_reason, streamed.usage) == (plain.stop_reason, plain.usage)
    replay = PartialMessageResponse()
    for event in events[:-1]:
        assert replay.apply(event)
    replay.stop_reason = streamed.stop_reason
    assert replay.finalize() == streamed
    assert MessageResponse.from_dict(json.loads(json.dumps(streamed.to_dict()))) == streamed


def test_a_reasoning_item_pairs_only_with_a_kept_item_that_follows_it_and_goes_back_with_it():
    from agcore_sync.llm._responses_wire import input_items

    message = _translate("19_reasoning_builtin_tool_text.sse")[-1].full_response.message
    envelopes = [read_envelope(b.signature) for b in message.content if isinstance(b, ThinkingBlock)]
    # rs_01 is followed by a web search (not kept), rs_02 by the message.
    assert [(e["item"]["id"], e["next_item_id"]) for e in envelopes] == [("rs_01", None), ("rs_02", "msg_01")]
    items = input_items((Message.user("Weather?"), message, Message.user("thanks")), store=False)
    assert [(i.get("type"), i.get("id")) for i in items] == [
        (None, None), ("reasoning", "rs_01"), ("reasoning", "rs_02"), ("message", "msg_01"), (None, None)]
    assert items[3]["content"] == [{"type": "output_text", "text": "It is sunny.", "annotations": []}]


def test_the_text_format_of_a_pydantic_output_equals_what_responses_parse_sends(stream_server):
    import attrs
    import pydantic

    class City(pydantic.BaseModel):
        name: str
        population: int

    @attrs.frozen
    class WithOutput(MessageRequest):  # the output= field the loops put on requests (issue 9)
        output: object = None

    answer = _final_response("01_text.sse")
    answer["output"][0]["content"][0]["text"] = '{"name": "Oslo", "population": 709037}'
    body = json.dumps(answer).encode()
    for _ in range(2):
        stream_server.add_response([body], headers={"Content-Type": "application/json"})
    with openai.OpenAI(api_key="sk-test", base_url=stream_server.url + "/v1", max_retries=0) as client:
        parsed = client.responses.parse(model=MODEL, input="hi", text_format=City)
    assert parsed.output_parsed == City(name="Oslo", population=709037)
    with closing(OpenAIResponsesProvider(MODEL, api_key="sk-test", base_url=stream_server.url + "/v1")) as provider:
        response = provider.chat(WithOutput(None, [Message.user("hi")], output=City))
    sdk_body, our_body = (r.json for r in stream_server.requests)
    assert our_body["text"] == sdk_body["text"]
    assert json.loads(response.message.text) == {"name": "Oslo", "population": 709037}
