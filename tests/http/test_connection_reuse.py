"""Streams give their connection back: counted at a keep-alive HTTP/1.1 server on 127.0.0.1.

Every assertion is a connection count (or which connection carried a
request), never a time. The server (``tests/support/keepalive_server.py``)
keeps each connection open for as many requests as the client sends on it,
as the real APIs do; a client that closed a connection after each stream
would show one connection per request.
"""

from __future__ import annotations

import itertools
import json
import logging
import threading
from typing import Any, Dict, List

import pytest

from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.bedrock import BedrockProvider
from agcore_sync.llm.errors import LlmConnectionError, RateLimitError
from agcore_sync.llm.events import CostUpdate, Error, MessageComplete, TextDelta
from agcore_sync.llm.gemini import GeminiProvider
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.responses import OpenAIResponsesProvider
from agcore_sync.llm.types import Message, MessageRequest
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.mcp import McpClient
from agcore_sync.mcp.transports.http import HttpTransport
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry
from tests.support import bedrock_wire, responses_wire
from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage
from tests.support.keepalive_server import KeepAliveServer, Reply, Request, sse

#: The client's read timeout.
CLIENT_TIMEOUT = 10.0
#: Bound on joining the client threads of the many-thread test.
JOIN_TIMEOUT = 60.0

PROVIDERS = ["openai", "anthropic", "responses", "bedrock", "gemini"]


# -- wire payloads, shaped like the providers' documented streams ------------


def _openai_chunk(choices: List[Dict[str, Any]], usage: Any = None) -> Dict[str, Any]:
    return {"id": "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT", "object": "chat.completion.chunk",
            "created": 1741569952, "model": "gpt-4o-mini-2024-07-18", "system_fingerprint": "fp_06737a9306",
            "choices": choices, "usage": usage}


def _openai_choice(delta: Dict[str, Any], finish_reason: Any = None) -> List[Dict[str, Any]]:
    return [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}]


_OPENAI_USAGE = {"prompt_tokens": 9, "completion_tokens": 2, "total_tokens": 11,
                 "prompt_tokens_details": {"cached_tokens": 0, "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0,
                                               "accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0}}


def openai_text(text: str) -> List[bytes]:
    return sse(
        _openai_chunk(_openai_choice({"role": "assistant", "content": "", "refusal": None})),
        *(_openai_chunk(_openai_choice({"content": piece})) for piece in (text[:3], text[3:])),
        _openai_chunk(_openai_choice({}, "stop")),
        _openai_chunk([], _OPENAI_USAGE),
        "[DONE]",
    )


def openai_tool_call(call_id: str, name: str, arguments: str) -> List[bytes]:
    first = {"role": "assistant", "content": None, "tool_calls": [
        {"index": 0, "id": call_id, "type": "function", "function": {"name": name, "arguments": ""}}]}
    piece = {"tool_calls": [{"index": 0, "function": {"arguments": arguments}}]}
    return sse(_openai_chunk(_openai_choice(first)), _openai_chunk(_openai_choice(piece)),
               _openai_chunk(_openai_choice({}, "tool_calls")), _openai_chunk([], _OPENAI_USAGE), "[DONE]")


def _anthropic(name: str, data: Dict[str, Any]) -> bytes:
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def _anthropic_start() -> bytes:
    return _anthropic("message_start", {"type": "message_start", "message": {
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL", "type": "message", "role": "assistant", "content": [],
        "model": "claude-sonnet-4-5-20250929", "stop_reason": None, "stop_sequence": None,
        "usage": {"input_tokens": 12, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "output_tokens": 1}}})


def _anthropic_end(stop_reason: str) -> List[bytes]:
    return [_anthropic("message_delta", {"type": "message_delta",
                                         "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                                         "usage": {"output_tokens": 3}}),
            _anthropic("message_stop", {"type": "message_stop"})]


def anthropic_text(text: str) -> List[bytes]:
    return [
        _anthropic_start(),
        _anthropic("content_block_start", {"type": "content_block_start", "index": 0,
                                           "content_block": {"type": "text", "text": ""}}),
        _anthropic("ping", {"type": "ping"}),
        *(_anthropic("content_block_delta", {"type": "content_block_delta", "index": 0,
                                             "delta": {"type": "text_delta", "text": piece}})
          for piece in (text[:3], text[3:])),
        _anthropic("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_anthropic_end("end_turn"),
    ]


def anthropic_tool_call(call_id: str, name: str, arguments: str) -> List[bytes]:
    return [
        _anthropic_start(),
        _anthropic("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {
            "type": "tool_use", "id": call_id, "name": name, "input": {}}}),
        _anthropic("content_block_delta", {"type": "content_block_delta", "index": 0,
                                           "delta": {"type": "input_json_delta", "partial_json": arguments}}),
        _anthropic("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_anthropic_end("tool_use"),
    ]


def responses_text(text: str) -> List[bytes]:
    return responses_wire.text_stream("resp_1", [text[:3], text[3:]])


def responses_tool_call(call_id: str, name: str, arguments: str) -> List[bytes]:
    return responses_wire.calls_stream("resp_1", [(call_id, name, json.loads(arguments))])


def bedrock_text(text: str) -> List[bytes]:
    return bedrock_wire.text_stream([text[:3], text[3:]])


def bedrock_tool_call(call_id: str, name: str, arguments: str) -> List[bytes]:
    return [bedrock_wire.message_start(), bedrock_wire.tool_start(0, call_id, name),
            bedrock_wire.tool_delta(0, arguments), bedrock_wire.block_stop(0), bedrock_wire.message_stop("tool_use"),
            bedrock_wire.metadata(10, 5)]


def _halves(body: bytes) -> List[bytes]:
    return [body[:len(body) // 2], body[len(body) // 2:]]


def gemini_text(text: str) -> List[bytes]:
    chunks = [gemini_chunk([{"text": text[:2]}]), gemini_chunk([{"text": text[2:]}]),
              gemini_chunk([], "STOP", usage=gemini_usage(9, 2))]
    return [half for c in chunks for half in _halves(gemini_sse(c))]


def gemini_tool_call(call_id: str, name: str, arguments: str) -> List[bytes]:
    call = {"functionCall": {"id": call_id, "name": name, "args": json.loads(arguments)}}
    return _halves(gemini_sse(gemini_chunk([call], "STOP", usage=gemini_usage(9, 4))))


TEXT = {"openai": openai_text, "anthropic": anthropic_text, "responses": responses_text, "gemini": gemini_text}
TOOL_CALL = {"openai": openai_tool_call, "anthropic": anthropic_tool_call, "responses": responses_tool_call,
             "gemini": gemini_tool_call}
TEXT["bedrock"] = bedrock_text
TOOL_CALL["bedrock"] = bedrock_tool_call


def make_provider(kind: str, url: str) -> Any:
    if kind == "openai":
        return OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=f"{url}/v1", timeout=CLIENT_TIMEOUT)
    if kind == "bedrock":
        return BedrockProvider("us.anthropic.claude-sonnet-4-5-20250929-v1:0", api_key="test-bedrock-key",
                               base_url=url, timeout=CLIENT_TIMEOUT)
    if kind == "responses":
        return OpenAIResponsesProvider(model="gpt-4.1-mini", api_key="sk-test", base_url=f"{url}/v1",
                                       timeout=CLIENT_TIMEOUT)
    if kind == "gemini":
        return GeminiProvider("gemini-2.5-flash", api_key="test-key", base_url=url, timeout=CLIENT_TIMEOUT)
    return AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test", base_url=url, timeout=CLIENT_TIMEOUT)


def ask(text: str) -> MessageRequest:
    return MessageRequest(model=None, messages=(Message.user(text),), max_tokens=64)


def text_of(events: List[Any]) -> str:
    assert isinstance(events[-1], MessageComplete), events[-1]
    return events[-1].full_response.message.text


# -- one provider, one connection ---------------------------------------------


@pytest.mark.parametrize("kind", PROVIDERS)
def test_five_streams_in_a_row_through_one_provider_use_one_connection(kind):
    with KeepAliveServer(lambda request: Reply(TEXT[kind]("Hello"))) as server:
        provider = make_provider(kind, server.url)
        try:
            answers = [text_of(list(provider.chat_stream(ask("Say hello")))) for _ in range(5)]
        finally:
            provider.close()
    assert answers == ["Hello"] * 5
    assert [r.connection for r in server.requests] == [1, 1, 1, 1, 1]
    assert server.connections == 1


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_stream_closed_right_after_its_end_marker_gives_its_connection_back(kind):
    with KeepAliveServer(lambda request: Reply(TEXT[kind]("Hello"))) as server:
        provider = make_provider(kind, server.url)
        try:
            stream = provider.chat_stream(ask("Say hello"))
            # CostUpdate comes only once the end marker was read ([DONE], message_stop).
            assert any(isinstance(event, CostUpdate) for event in stream)
            stream.close()  # MessageComplete never read
            assert text_of(list(provider.chat_stream(ask("again")))) == "Hello"
        finally:
            provider.close()
    assert server.connections == 1


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_stream_left_suspended_at_message_complete_has_already_given_its_connection_back(kind):
    with KeepAliveServer(lambda request: Reply(TEXT[kind]("Hello"))) as server:
        provider = make_provider(kind, server.url)
        try:
            first = provider.chat_stream(ask("one"))
            for event in first:
                if isinstance(event, MessageComplete):
                    break  # `first` is neither exhausted nor closed
            second = list(provider.chat_stream(ask("two")))
            first.close()
        finally:
            provider.close()
    assert text_of(second) == "Hello"
    assert [r.connection for r in server.requests] == [1, 1]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_stream_closed_before_its_end_marker_closes_its_connection_and_the_next_call_opens_one(kind):
    gate = threading.Event()
    steps = TEXT[kind]("Hello")
    replies = iter([Reply([*steps[:4], gate, *steps[4:]]), Reply(steps)])
    with KeepAliveServer(lambda request: next(replies)) as server:
        provider = make_provider(kind, server.url)
        try:
            stream = provider.chat_stream(ask("one"))
            assert any(isinstance(event, TextDelta) for event in stream)
            stream.close()  # the rest of the body never read: the connection cannot serve again
            gate.set()
            assert text_of(list(provider.chat_stream(ask("two")))) == "Hello"
        finally:
            provider.close()
    assert [r.connection for r in server.requests] == [1, 2]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_cut_body_discards_its_connection_and_the_next_call_works_on_a_new_one(kind):
    steps = TEXT[kind]("Hello")
    replies = iter([Reply(steps[:3], cut=True), Reply(steps), Reply(steps)])
    with KeepAliveServer(lambda request: next(replies)) as server:
        provider = make_provider(kind, server.url)
        try:
            with pytest.raises(LlmConnectionError):
                list(provider.chat_stream(ask("one")))
            assert text_of(list(provider.chat_stream(ask("two")))) == "Hello"
            assert text_of(list(provider.chat_stream(ask("three")))) == "Hello"
        finally:
            provider.close()
    assert [r.connection for r in server.requests] == [1, 2, 2]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_plain_calls_and_error_statuses_leave_their_connection_for_the_next_call(kind):
    if kind == "openai":
        body = {"id": "chatcmpl-1", "object": "chat.completion", "created": 1741569952, "model": "gpt-4o-mini",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi", "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}], "usage": _OPENAI_USAGE}
        limited = {"error": {"message": "Rate limit reached", "type": "requests", "param": None,
                             "code": "rate_limit_exceeded"}}
    elif kind == "responses":
        body = responses_wire.response_object("resp_1", "completed", [
            {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
             "content": [{"type": "output_text", "text": "Hi", "annotations": []}]}], (5, 1))
        limited = {"error": {"message": "Rate limit reached", "type": "requests", "param": None,
                             "code": "rate_limit_exceeded"}}
    elif kind == "bedrock":
        body = bedrock_wire.converse_response([{"text": "Hi"}])
        limited = {"message": "Too many requests, please wait before trying again."}
    elif kind == "gemini":
        body = gemini_chunk([{"text": "Hi"}], "STOP")
        limited = {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                             "status": "RESOURCE_EXHAUSTED"}}
    else:
        body = {"id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                "content": [{"type": "text", "text": "Hi"}], "stop_reason": "end_turn", "stop_sequence": None,
                "usage": {"input_tokens": 5, "output_tokens": 1}}
        limited = {"type": "error", "error": {"type": "rate_limit_error", "message": "Rate limited"}}
    limited_reply = Reply.json(limited, status=429)
    if kind == "bedrock":
        limited_reply.headers = {"Content-Type": "application/json", "x-amzn-ErrorType": "ThrottlingException"}
    replies = iter([Reply.json(body), limited_reply, Reply.json(body),
                    Reply(TEXT[kind]("Hello"))])
    with KeepAliveServer(lambda request: next(replies)) as server:
        provider = make_provider(kind, server.url)
        try:
            assert provider.chat(ask("one")).message.text == "Hi"
            with pytest.raises(RateLimitError):
                provider.chat(ask("two"))
            assert provider.chat(ask("three")).message.text == "Hi"
            assert text_of(list(provider.chat_stream(ask("four")))) == "Hello"
        finally:
            provider.close()
    assert server.connections == 1


# -- the streaming tool loop ---------------------------------------------------


@tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: the first.
        b: the second.
    """
    return a + b


@pytest.mark.parametrize("kind", PROVIDERS)
def test_a_four_round_streaming_tool_loop_uses_one_connection(kind):
    counter = itertools.count(1)

    def respond(request: Request) -> Reply:
        n = next(counter)
        if n <= 3:
            return Reply(TOOL_CALL[kind](f"call_{n}", "add", json.dumps({"a": n, "b": 1})))
        return Reply(TEXT[kind]("Done!"))

    with KeepAliveServer(respond) as server:
        provider = make_provider(kind, server.url)
        registry = ToolRegistry()
        registry.register(add)
        try:
            cycle = LlmCycle(provider, CycleConfig(model=provider.model, retry=None))
            with cycle.submit_with_tools_stream("Add some numbers", registry) as stream:
                events = list(stream)
        finally:
            registry.close()
            provider.close()
    assert not [e for e in events if isinstance(e, Error)]
    assert stream.final_response.message.text == "Done!"
    assert len(server.requests) == 4
    assert server.connections == 1


# -- many threads, one provider ------------------------------------------------


def _user_text(request: Request) -> str:
    if "contents" in request.json:
        return request.json["contents"][-1]["parts"][0]["text"]
    message = (request.json.get("messages") or request.json.get("input"))[-1]
    content = message["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_fifty_threads_sharing_a_provider_reuse_their_connections_without_pool_warnings(kind, caplog):
    threads_count, rounds = 50, 4
    caplog.set_level(logging.WARNING, logger="urllib3")

    def respond(request: Request) -> Reply:
        return Reply(TEXT[kind](f"re: {_user_text(request)}"))

    results: Dict[int, List[str]] = {}
    failures: List[BaseException] = []
    start = threading.Barrier(threads_count)

    with KeepAliveServer(respond, backlog=threads_count * 2) as server:
        provider = make_provider(kind, server.url)

        def client(n: int) -> None:
            try:
                start.wait(JOIN_TIMEOUT)
                results[n] = [text_of(list(provider.chat_stream(ask(f"thread {n} round {r}"))))
                              for r in range(rounds)]
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                failures.append(exc)

        workers = [threading.Thread(target=client, args=(n,), name=f"test-client-{n}") for n in range(threads_count)]
        try:
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(JOIN_TIMEOUT)
        finally:
            provider.close()
        assert not [w.name for w in workers if w.is_alive()]

    assert not failures, failures[:3]
    assert results == {n: [f"re: thread {n} round {r}" for r in range(rounds)] for n in range(threads_count)}
    assert len(server.requests) == threads_count * rounds
    assert server.connections <= threads_count
    assert not [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]


# -- MCP over HTTP -------------------------------------------------------------


_INIT = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}}, "serverInfo": {"name": "k", "version": "1"}}
_TOOLS = {"tools": [{"name": "echo", "description": "Echo the text.",
                     "inputSchema": {"type": "object", "properties": {"text": {"type": "string"}}}}]}


def _mcp_respond(request: Request) -> Reply:
    body = request.json
    if request.method != "POST":
        return Reply(status=405, length=True, headers={"Content-Type": "text/plain"})
    if "id" not in body:
        return Reply(status=202, length=True, headers={"Content-Type": "text/plain"})
    if body["method"] == "initialize":
        result: Any = _INIT
    elif body["method"] == "tools/list":
        result = _TOOLS
    else:
        result = {"content": [{"type": "text", "text": body["params"]["arguments"]["text"]}], "isError": False}
    answer = {"jsonrpc": "2.0", "id": body["id"], "result": result}
    return Reply([b"id: e-1\ndata: " + json.dumps(answer).encode() + b"\n\n"],
                 headers={"Mcp-Session-Id": "session-1"} if body["method"] == "initialize" else {})


def test_mcp_http_post_stream_answers_leave_their_connection_for_the_next_call():
    with KeepAliveServer(_mcp_respond) as server:
        with McpClient("keepalive", HttpTransport(server.url, listen=False), timeout=CLIENT_TIMEOUT) as client:
            assert [t.name for t in client.list_tools()] == ["echo"]
            texts = [client.call_tool("echo", {"text": f"hi {n}"}).text for n in range(4)]
    assert texts == [f"hi {n}" for n in range(4)]
    posts = [r for r in server.requests if r.method == "POST"]
    # initialize (SSE), initialized (202), tools/list (SSE), 4 x tools/call (SSE); then the DELETE.
    assert len(posts) == 7
    assert server.requests[-1].method == "DELETE"
    assert server.connections == 1


def test_mcp_http_json_answers_leave_their_connection_for_the_next_call():
    def respond(request: Request) -> Reply:
        reply = _mcp_respond(request)
        if reply.steps:  # the same answer as application/json
            data = reply.steps[0].split(b"data: ", 1)[1]
            return Reply.json(json.loads(data))
        return reply

    with KeepAliveServer(respond) as server:
        with McpClient("keepalive", HttpTransport(server.url, listen=False), timeout=CLIENT_TIMEOUT) as client:
            texts = [client.call_tool("echo", {"text": f"hi {n}"}).text for n in range(3)]
    assert texts == [f"hi {n}" for n in range(3)]
    assert server.connections == 1
