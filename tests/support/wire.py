"""Provider wire payloads for tests, shaped as the providers document them: one place for every test.

OpenAI Chat Completions (API reference: "The chat completion object", "The
chat completion chunk object", with ``stream_options.include_usage`` so
every chunk carries ``usage`` and a last chunk with no choices holds it) and
the Anthropic Messages API (reference and "Streaming messages": named SSE
events, ``message_start`` ... ``message_stop``, ``error`` events and
bodies). Builders return plain dicts, or SSE bytes ready for ``responses``
or :class:`tests.support.stream_server.StreamServer`. Import them from the
repository root::

    from tests.support.wire import openai_chunk, openai_sse, anthropic_sse, message_start
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

# -- OpenAI Chat Completions -----------------------------------------------------

#: The dated snapshot OpenAI reports for ``gpt-4o-mini``.
OPENAI_WIRE_MODEL = "gpt-4o-mini-2024-07-18"
#: The id of a chunk when a test does not care.
OPENAI_CHUNK_ID = "chatcmpl-123"
#: The id of a completion when a test does not care (the reference's example).
OPENAI_COMPLETION_ID = "chatcmpl-B9MBs8CjcvOU2jLn4n570S5qMJKcT"
#: The stream's end marker.
OPENAI_DONE = b"data: [DONE]\n\n"


def openai_usage(prompt: int, completion: int, cached: int = 0, **extra_details: Any) -> Dict[str, Any]:
    """Return a ``usage`` object; ``extra_details`` go into ``prompt_tokens_details``."""
    return {
        "prompt_tokens": prompt,
        "completion_tokens": completion,
        "total_tokens": prompt + completion,
        "prompt_tokens_details": {"cached_tokens": cached, "audio_tokens": 0, **extra_details},
        "completion_tokens_details": {
            "reasoning_tokens": 0,
            "audio_tokens": 0,
            "accepted_prediction_tokens": 0,
            "rejected_prediction_tokens": 0,
        },
    }


def openai_completion(message: Dict[str, Any], finish_reason: str = "stop", usage: Optional[Dict[str, Any]] = None,
                      *, id: str = OPENAI_COMPLETION_ID) -> Dict[str, Any]:  # noqa: A002 - the wire's name
    """Return a ``chat.completion`` whose one choice holds ``message`` (over the assistant defaults)."""
    message = {"role": "assistant", "content": None, "refusal": None, "annotations": [], **message}
    return {
        "id": id,
        "object": "chat.completion",
        "created": 1741569952,
        "model": OPENAI_WIRE_MODEL,
        "choices": [{"index": 0, "message": message, "logprobs": None, "finish_reason": finish_reason}],
        "usage": usage or openai_usage(19, 10),
        "service_tier": "default",
        "system_fingerprint": "fp_44709d6fcb",
    }


def openai_chunk(delta: Optional[Dict[str, Any]] = None, finish_reason: Optional[str] = None, *,
                 choices: Optional[List[Any]] = None, usage: Optional[Dict[str, Any]] = None,
                 id: str = OPENAI_CHUNK_ID) -> Dict[str, Any]:  # noqa: A002 - the wire's name
    """Return a ``chat.completion.chunk``: one choice with ``delta``, or the ``choices`` given."""
    if choices is None:
        choices = [{"index": 0, "delta": delta or {}, "logprobs": None, "finish_reason": finish_reason}]
    return {
        "id": id,
        "object": "chat.completion.chunk",
        "created": 1694268190,
        "model": OPENAI_WIRE_MODEL,
        "system_fingerprint": "fp_44709d6fcb",
        "choices": choices,
        "usage": usage,
    }


def openai_usage_chunk(prompt: int, completion: int, cached: int = 0, *,
                       id: str = OPENAI_CHUNK_ID) -> Dict[str, Any]:  # noqa: A002 - the wire's name
    """Return the last chunk of an ``include_usage`` stream: no choices, the usage."""
    return openai_chunk(choices=[], usage=openai_usage(prompt, completion, cached), id=id)


def openai_tool_piece(wire_index: int, arguments: str, call_id: Optional[str] = None,
                      name: Optional[str] = None) -> Dict[str, Any]:
    """Return a delta carrying a piece of a tool call; the first piece of a call has its id and name."""
    piece: Dict[str, Any] = {"index": wire_index, "function": {"arguments": arguments}}
    if call_id is not None:
        piece = {"index": wire_index, "id": call_id, "type": "function",
                 "function": {"name": name, "arguments": arguments}}
    return {"tool_calls": [piece]}


def openai_error_body(message: str, type_: str, code: Optional[str] = None) -> Dict[str, Any]:
    """Return an error body as the API sends it with an error status."""
    return {"error": {"message": message, "type": type_, "param": None, "code": code}}


def sse_data(data: Any) -> bytes:
    """Return one ``data:`` SSE event: ``data`` as JSON, or as given if it is a str."""
    text = data if isinstance(data, str) else json.dumps(data, ensure_ascii=False)
    return b"data: " + text.encode("utf-8") + b"\n\n"


def openai_sse(*chunks: Any, done: bool = True) -> bytes:
    """Return a stream body: each chunk as a ``data:`` event, then ``[DONE]`` unless ``done=False``."""
    return b"".join(sse_data(c) for c in chunks) + (OPENAI_DONE if done else b"")


def openai_text_stream(completion_id: str, pieces: Sequence[str], usage: Tuple[int, int]) -> List[bytes]:
    """Return the SSE events of a text answer: role chunk, content pieces, stop, usage, ``[DONE]``."""
    events = [sse_data(openai_chunk({"role": "assistant", "content": "", "refusal": None}, id=completion_id))]
    events += [sse_data(openai_chunk({"content": piece}, id=completion_id)) for piece in pieces]
    events.append(sse_data(openai_chunk({}, "stop", id=completion_id)))
    events.append(sse_data(openai_usage_chunk(*usage, id=completion_id)))
    events.append(OPENAI_DONE)
    return events


def openai_tool_call_stream(completion_id: str, calls: Sequence[Tuple[str, str, Dict[str, Any]]],
                            usage: Tuple[int, int]) -> List[bytes]:
    """Return the SSE events of a response calling tools ``(id, name, arguments)``, arguments in two pieces."""
    events = []
    for index, (call_id, name, arguments) in enumerate(calls):
        delta = openai_tool_piece(index, "", call_id, name)
        if index == 0:
            delta = {"role": "assistant", "content": None, **delta}
        events.append(sse_data(openai_chunk(delta, id=completion_id)))
        text = json.dumps(arguments)
        middle = len(text) // 2
        for piece in (text[:middle], text[middle:]):
            events.append(sse_data(openai_chunk(openai_tool_piece(index, piece), id=completion_id)))
    events.append(sse_data(openai_chunk({}, "tool_calls", id=completion_id)))
    events.append(sse_data(openai_usage_chunk(*usage, id=completion_id)))
    events.append(OPENAI_DONE)
    return events


# -- Anthropic Messages ----------------------------------------------------------

#: The dated snapshot Anthropic reports for ``claude-sonnet-4-5``.
ANTHROPIC_WIRE_MODEL = "claude-sonnet-4-5-20250929"

#: An SSE event as (event name, data).
AnthropicEvent = Tuple[str, Dict[str, Any]]

PING: AnthropicEvent = ("ping", {"type": "ping"})
MESSAGE_STOP: AnthropicEvent = ("message_stop", {"type": "message_stop"})
#: A thinking block's signature, as the docs show one.
SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"


def anthropic_sse(*events: AnthropicEvent) -> bytes:
    """Encode (event name, data) pairs the way the API sends them."""
    return "".join(f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events).encode()


def message_start(usage: Optional[Dict[str, Any]] = None, msg_id: str = "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
                  model: str = ANTHROPIC_WIRE_MODEL) -> AnthropicEvent:
    """Return ``message_start``; usage defaults to 25 input tokens, 1 output token."""
    return ("message_start", {"type": "message_start", "message": {
        "id": msg_id, "type": "message", "role": "assistant", "content": [], "model": model,
        "stop_reason": None, "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 25, "output_tokens": 1}}})


def block_start(index: int, block: Dict[str, Any]) -> AnthropicEvent:
    """Return ``content_block_start`` of ``block`` at ``index``."""
    return ("content_block_start", {"type": "content_block_start", "index": index, "content_block": block})


def block_delta(index: int, delta: Dict[str, Any]) -> AnthropicEvent:
    """Return ``content_block_delta`` (``text_delta``, ``input_json_delta``, ``thinking_delta``...)."""
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": delta})


def block_stop(index: int) -> AnthropicEvent:
    """Return ``content_block_stop``."""
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def message_delta(stop_reason: str, output_tokens: int) -> AnthropicEvent:
    """Return ``message_delta`` with the stop reason and the cumulative output tokens."""
    return ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                              "usage": {"output_tokens": output_tokens}})


def anthropic_error_event(error_type: str, message: str) -> AnthropicEvent:
    """Return an ``error`` event, as sent in the middle of a stream."""
    return ("error", {"type": "error", "error": {"type": error_type, "message": message}})


def anthropic_error_body(error_type: str, message: str) -> Dict[str, Any]:
    """Return an error body, as sent with an error status."""
    return {"type": "error", "error": {"type": error_type, "message": message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy"}


def anthropic_message(content: List[Dict[str, Any]], stop_reason: str = "end_turn",
                      usage: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Return a Messages API response body holding ``content`` blocks."""
    return {
        "id": "msg_013Zva2CMHLNnXjNJJKqJ2EF",
        "type": "message",
        "role": "assistant",
        "model": ANTHROPIC_WIRE_MODEL,
        "content": content,
        "stop_reason": stop_reason,
        "stop_sequence": None,
        "usage": usage if usage is not None else {"input_tokens": 2095, "output_tokens": 503},
    }
