"""A recorded-shape corpus of ConverseStream answers, read by botocore and by us.

Each stream is real AWS event-stream frames (``tests/support/bedrock_wire``
encodes them) holding the payloads Bedrock sends. botocore's own
``EventStream`` (with the ``bedrock-runtime`` service model) reads each
one, and so does BedrockProvider over a local server; text, reasoning,
tool calls, stop reason and usage must agree (through the mapping
DESIGN.md pins), and an exception frame must stop both at the same point
with the matching error. A few streams are also split at every byte
boundary. Corrupt and cut frames are :class:`ResponseParseError`.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Optional, Tuple

import pytest

from agcore_sync import BedrockProvider, Message, MessageRequest
from agcore_sync._http.eventstream import EventStreamDecoder
from agcore_sync._http.masking import Masker
from agcore_sync.llm.errors import LlmError, ProviderError, RateLimitError, ResponseParseError, ServerError
from agcore_sync.llm.events import MessageComplete
from agcore_sync.llm.types import ThinkingBlock
from tests.support import bedrock_wire as bw

pytest.importorskip("botocore")
import botocore.session  # noqa: E402
from botocore.eventstream import EventStream  # noqa: E402
from botocore.exceptions import EventStreamError  # noqa: E402
from botocore.parsers import EventStreamJSONParser  # noqa: E402

MODEL = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
SIG = "EqQBCkYIBRgCIkDk3m5c1T2vXgYb6QW0rKc9sA=="
REDACTED = base64.b64encode(b"\x00opaque\xff redacted").decode("ascii")

_STOP = {"end_turn": "stop", "stop_sequence": "stop", "tool_use": "tool_use", "max_tokens": "length",
         "model_context_window_exceeded": "length", "guardrail_intervened": "content_filter",
         "content_filtered": "content_filter"}
_ERRORS = {"throttlingException": RateLimitError, "internalServerException": ServerError,
           "serviceUnavailableException": ServerError, "modelStreamErrorException": ServerError,
           "validationException": ProviderError}


def _tool(index: int, tool_id: str, name: str, pieces: List[str]) -> List[bytes]:
    return [bw.tool_start(index, tool_id, name), *[bw.tool_delta(index, p) for p in pieces], bw.block_stop(index)]


def _end(reason: str, *usage: int) -> List[bytes]:
    return [bw.message_stop(reason), bw.metadata(*(usage or (20, 7)))]


def _text(index: int, pieces: List[str]) -> List[bytes]:
    return [*[bw.text_delta(index, p) for p in pieces], bw.block_stop(index)]


def _corpus() -> Dict[str, List[bytes]]:
    start = [bw.message_start()]
    return {
        "01_text_one_piece": start + _text(0, ["Hello there."]) + _end("end_turn"),
        "02_text_many_pieces": start + _text(0, ["The", " quick", " brown", " fox", " ", "jumps."]) + _end("end_turn"),
        "03_text_unicode": start + _text(0, ["Zürich ", "天気", " 🌦 ", "naïve – ok"]) + _end("end_turn"),
        "04_text_empty_delta": start + _text(0, ["", "a", "", "b"]) + _end("end_turn"),
        "05_one_tool_use": start + _text(0, ["Let me check."])
        + _tool(1, "tooluse_kT3mRg4sQ0a", "weather", ['{"ci', 'ty": "Par', 'is"}']) + _end("tool_use", 40, 18),
        "06_parallel_tool_uses": start
        + _tool(0, "tooluse_aaa", "weather", ['{"city": "Paris"}'])
        + _tool(1, "tooluse_bbb", "weather", ['{"city":', ' "Oslo"}'])
        + _tool(2, "tooluse_ccc", "clock", ['{}']) + _end("tool_use", 50, 30),
        "07_tool_empty_input": start + _tool(0, "tooluse_empty", "now", []) + _end("tool_use"),
        "08_tool_empty_string_input": start + _tool(0, "tooluse_e2", "now", [""]) + _end("tool_use"),
        "09_tool_unicode_arguments": start
        + _tool(0, "tooluse_u", "translate", ['{"text": "h\\u00e9llo ', '天気 🌦"}']) + _end("tool_use"),
        "10_reasoning_with_signature": start
        + [bw.reasoning_delta(0, text="Let me "), bw.reasoning_delta(0, text="think."),
           bw.reasoning_delta(0, signature=SIG), bw.block_stop(0)]
        + _text(1, ["Answer: 42"]) + _end("end_turn", 30, 60),
        "11_reasoning_then_tool": start
        + [bw.reasoning_delta(0, text="Need weather."), bw.reasoning_delta(0, signature=SIG), bw.block_stop(0)]
        + _tool(1, "tooluse_r", "weather", ['{"city": "Rome"}']) + _end("tool_use"),
        "12_redacted_reasoning": start + [bw.reasoning_delta(0, redacted=REDACTED), bw.block_stop(0)]
        + _text(1, ["Done."]) + _end("end_turn"),
        "13_cache_read_and_write": start + _text(0, ["cached"]) + _end("end_turn", 12, 5, 1800, 250),
        "14_max_tokens": start + _text(0, ["This is cut sh"]) + _end("max_tokens", 10, 4),
        "15_context_window_exceeded": start + _text(0, ["..."]) + _end("model_context_window_exceeded"),
        "16_guardrail_intervened": start + _text(0, ["Sorry, the model cannot answer."])
        + _end("guardrail_intervened"),
        "17_content_filtered": start + _end("content_filtered", 9, 0),
        "18_stop_sequence": start + _text(0, ["one, two"]) + _end("stop_sequence"),
        "19_large_text": start + _text(0, ["x" * 70000, "y" * 3]) + _end("end_turn", 5, 20000),
        "20_throttling_mid_stream": start + [bw.text_delta(0, "Hal"),
                                             bw.exception_frame("throttlingException", "Too many tokens")],
        "21_model_stream_error": start + [bw.text_delta(0, "Hi"), bw.exception_frame(
            "modelStreamErrorException", "The model stream failed")],
        "22_internal_server_error": start + [bw.exception_frame("internalServerException", "Internal error")],
        "23_service_unavailable": [bw.exception_frame("serviceUnavailableException", "Try later")],
        "24_validation_error": start + [bw.exception_frame("validationException", "Bad input")],
        "25_text_and_tool_and_text": start + _text(0, ["A"]) + _tool(1, "tooluse_m", "f", ['{"a": 1}'])
        + _text(2, ["B"]) + _end("tool_use"),
    }


CORPUS = _corpus()


def test_the_corpus_has_at_least_twenty_streams():
    assert len(CORPUS) >= 20


class _Raw:
    def __init__(self, chunks: List[bytes]) -> None:
        self._chunks = chunks

    def stream(self) -> Any:
        return iter(self._chunks)

    def close(self) -> None:
        pass


def _botocore_summary(chunks: List[bytes]) -> Dict[str, Any]:
    model = botocore.session.get_session().get_service_model("bedrock-runtime")
    shape = model.operation_model("ConverseStream").output_shape.members["stream"]
    text: List[str] = []
    reasoning: List[str] = []
    signature: Optional[str] = None
    redacted: Optional[bytes] = None
    calls: Dict[int, Dict[str, Any]] = {}
    summary: Dict[str, Any] = {"error": None, "stop": None, "usage": None}
    try:
        for item in EventStream(_Raw(chunks), shape, EventStreamJSONParser(), "ConverseStream"):
            if "contentBlockStart" in item:
                use = item["contentBlockStart"]["start"]["toolUse"]
                calls[item["contentBlockStart"]["contentBlockIndex"]] = {"id": use["toolUseId"], "name": use["name"],
                                                                         "input": ""}
            elif "contentBlockDelta" in item:
                delta = item["contentBlockDelta"]["delta"]
                if "text" in delta:
                    text.append(delta["text"])
                elif "toolUse" in delta:
                    calls[item["contentBlockDelta"]["contentBlockIndex"]]["input"] += delta["toolUse"]["input"]
                elif "reasoningContent" in delta:
                    part = delta["reasoningContent"]
                    reasoning.append(part.get("text", ""))
                    signature = part.get("signature", signature)
                    redacted = part.get("redactedContent", redacted)
            elif "messageStop" in item:
                summary["stop"] = _STOP[item["messageStop"]["stopReason"]]
            elif "metadata" in item:
                usage = item["metadata"]["usage"]
                cache = usage.get("cacheReadInputTokens", 0) + usage.get("cacheWriteInputTokens", 0)
                summary["usage"] = (usage["inputTokens"] + cache, usage["outputTokens"],
                                    usage.get("cacheReadInputTokens", 0), usage.get("cacheWriteInputTokens", 0))
    except EventStreamError as exc:
        summary["error"] = exc.response["Error"]["Code"]
    summary.update(text="".join(text), reasoning="".join(reasoning), signature=signature, redacted=redacted,
                   calls=[(c["id"], c["name"], json.loads(c["input"] or "{}")) for _, c in sorted(calls.items())])
    return summary


def _our_summary(events: List[Any], error: Optional[LlmError]) -> Dict[str, Any]:
    from agcore_sync.llm._thinking_origin import read_envelope
    from agcore_sync.llm.partial import PartialMessageResponse

    partial = PartialMessageResponse()
    for event in events:
        partial.apply(event)
    response = partial.finalize()
    thinking = [b for b in response.message.content if isinstance(b, ThinkingBlock)]
    signature = redacted = None
    for block in thinking:
        item = (read_envelope(block.signature) or {}).get("item") or {}
        signature = item.get("signature", signature)
        if block.redacted_data is not None:
            redacted = base64.b64decode(block.redacted_data)
    complete = any(isinstance(e, MessageComplete) for e in events)
    error_name = None
    if error is not None:
        # "Bedrock stream error <type>: <message>", typed as DESIGN.md says.
        error_name = str(error).split()[3].rstrip(":")
        assert type(error) is _ERRORS[error_name]
    return {
        "error": error_name,
        "stop": response.stop_reason.value if complete else None,
        "usage": None if not complete else (response.usage.prompt_tokens, response.usage.completion_tokens,
                                            response.usage.cache_read_tokens, response.usage.cache_write_tokens),
        "text": response.message.text,
        "reasoning": "".join(b.text for b in thinking),
        "signature": signature,
        "redacted": redacted,
        "calls": [(u.id, u.name, u.input) for u in response.message.tool_uses],
    }


def _direct(chunks: List[bytes]) -> Dict[str, Any]:
    """Our decoder and translator without HTTP, for the byte-boundary splits."""
    from agcore_sync._http.eventstream import EventStreamMessage
    from agcore_sync.llm._bedrock_stream import END_MESSAGE, BedrockStreamTranslator

    decoder = EventStreamDecoder()
    translator = BedrockStreamTranslator(MODEL, pricing=None, masker=Masker(None))
    events: List[Any] = []
    try:
        for chunk in chunks:
            for message in decoder.feed(chunk):
                events += translator.feed(message)
        decoder.close()
        events += translator.feed(EventStreamMessage({":message-type": END_MESSAGE}, b""))
    except LlmError as exc:
        return _our_summary(events, exc)
    return _our_summary(events, None)


def _provider_run(stream_server: Any, steps: List[bytes]) -> Tuple[List[Any], Optional[LlmError]]:
    stream_server.add_response(steps, headers=bw.STREAM_HEADERS)
    provider = BedrockProvider(MODEL, base_url=stream_server.url, api_key="test-bedrock-key")
    events: List[Any] = []
    try:
        for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
            events.append(event)
    except LlmError as exc:
        return events, exc
    finally:
        provider.close()
    return events, None


@pytest.mark.parametrize("name", sorted(CORPUS))
def test_botocore_and_our_provider_read_the_same_stream(name, stream_server):
    data = b"".join(CORPUS[name])
    expected = _botocore_summary([data])
    steps = [data[i:i + 7] for i in range(0, len(data), 7)]
    events, error = _provider_run(stream_server, steps)
    assert _our_summary(events, error) == expected
    if expected["error"] is not None:
        assert error is not None and error.retryable == (expected["error"] != "validationException")
    else:
        assert isinstance(events[-1], MessageComplete)


@pytest.mark.parametrize("name", ["03_text_unicode", "06_parallel_tool_uses", "10_reasoning_with_signature",
                                  "20_throttling_mid_stream"])
def test_a_stream_split_at_every_byte_boundary_reads_the_same(name):
    data = b"".join(CORPUS[name])
    expected = _botocore_summary([data])
    assert _direct([data]) == expected
    for cut in range(1, len(data)):
        assert _direct([data[:cut], data[cut:]]) == expected, cut
    assert _direct([data[i:i + 1] for i in range(len(data))]) == expected


def test_a_throttling_frame_is_a_retryable_rate_limit_error(stream_server):
    _, error = _provider_run(stream_server, CORPUS["20_throttling_mid_stream"])
    assert isinstance(error, RateLimitError) and error.retryable
    assert "Too many tokens" in str(error)


def _corrupt(data: bytes, at: int) -> bytes:
    return data[:at] + bytes([data[at] ^ 0x01]) + data[at + 1:]


@pytest.mark.parametrize("where", ["prelude", "headers", "payload", "message crc"])
def test_a_corrupt_crc_is_a_response_parse_error(where, stream_server):
    frames = list(CORPUS["02_text_many_pieces"])
    frame = frames[2]
    at = {"prelude": 2, "headers": 14, "payload": len(frame) - 10, "message crc": len(frame) - 1}[where]
    frames[2] = _corrupt(frame, at)
    events, error = _provider_run(stream_server, frames)
    assert isinstance(error, ResponseParseError)
    assert "CRC" in str(error) or "lengths" in str(error)


def test_a_body_that_ends_inside_a_frame_is_a_response_parse_error(stream_server):
    data = b"".join(CORPUS["02_text_many_pieces"])
    events, error = _provider_run(stream_server, [data[:-9]])
    assert isinstance(error, ResponseParseError)
    assert "ended inside a message" in str(error)


def test_a_frame_larger_than_max_event_size_is_refused_before_it_is_read(stream_server):
    frames = [bw.message_start(), bw.text_delta(0, "z" * 5000)]
    stream_server.add_response(frames, headers=bw.STREAM_HEADERS)
    provider = BedrockProvider(MODEL, base_url=stream_server.url, api_key="k")
    provider.max_event_size = 1000
    try:
        with pytest.raises(ResponseParseError, match="larger than 1000 bytes"):
            list(provider.chat_stream(MessageRequest(None, [Message.user("hi")])))
    finally:
        provider.close()


def test_a_stream_cut_between_frames_before_the_end_is_a_connection_error(stream_server):
    from agcore_sync.llm.errors import LlmConnectionError

    _, error = _provider_run(stream_server, CORPUS["02_text_many_pieces"][:4])
    assert isinstance(error, LlmConnectionError) and error.retryable
