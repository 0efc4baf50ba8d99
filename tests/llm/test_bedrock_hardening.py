"""BedrockProvider under bad peers: secrets never shown, every failure typed, no socket left.

- The bearer key, echoed by the server in an HTTP error, an exception
  frame and a malformed payload, appears in no error, event, saved
  session, log record or span (the span names the provider ``aws.bedrock``).
- A hundred turns against a keep-alive server that misbehaves by seed
  (cut frames, corrupt CRCs, exception frames, error statuses, garbage,
  throttling) each end in a complete response or a typed
  :class:`~agcore_sync.llm.errors.LlmError`; the usage of the complete ones
  is counted exactly and the provider's pool holds at most one connection.
"""

from __future__ import annotations

import json
import logging
import random
import traceback
from typing import Any, List

import pytest

from agcore_sync import AgentSession, BedrockProvider, CycleConfig
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.errors import LlmError
from agcore_sync.llm.events import Error, MessageComplete
from agcore_sync.llm.types import Message, MessageRequest
from tests.support import bedrock_wire as bw
from tests.support.keepalive_server import KeepAliveServer, Reply, Request

KEY = "ABSKQmVkcm9ja0FQSUtleS1TRUNSRVQtYmVkcm9jay0wMTIzNDU2Nzg5"
CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"


def _said(error: BaseException) -> List[str]:
    texts: List[str] = []
    current: Any = error
    seen = set()
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        texts += [str(current), repr(current), repr(getattr(current, "body", None))]
        current = current.__cause__ or current.__context__
    texts.append("".join(traceback.format_exception(type(error), error, error.__traceback__)))
    return texts


def test_the_bearer_key_appears_in_no_error_event_session_log_or_span_when_the_server_echoes_it(stream_server,
                                                                                                caplog):
    sdk = pytest.importorskip("opentelemetry.sdk.trace")
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from agcore_sync import telemetry

    caplog.set_level(logging.DEBUG)
    stream_server.add_response([bw.json_body({"message": f"The API key {KEY} is not valid"})], status=403,
                               headers={"x-amzn-ErrorType": "UnrecognizedClientException"})
    stream_server.add_response([bw.message_start(), bw.exception_frame("validationException", f"key {KEY}")],
                               headers=bw.STREAM_HEADERS)
    stream_server.add_response([bw.message_start(), bw.encode_frame(
        {":event-type": "contentBlockDelta", ":message-type": "event"}, f"not json {KEY}".encode())],
        headers=bw.STREAM_HEADERS)
    exporter = InMemorySpanExporter()
    tracer_provider = sdk.TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    telemetry.instrument(tracer_provider=tracer_provider, capture_content=True)
    texts: List[str] = []
    try:
        provider = BedrockProvider(CLAUDE, base_url=stream_server.url, api_key=KEY, region="us-east-1")
        texts.append(repr(provider))
        with AgentSession(provider, CycleConfig(retry=None)) as session:
            with pytest.raises(AgcoreError) as info:
                session.submit_turn("hello")
            texts += _said(info.value)
            for _ in range(2):
                events = list(session.submit_turn_stream("hello again"))
                assert isinstance(events[-1], Error)
                texts += _said(events[-1].error)
                texts += [json.dumps(e.to_dict()) for e in events]
            texts += [repr(session), json.dumps(session.to_dict())]
        provider.close()
    finally:
        telemetry.uninstrument()
        tracer_provider.shutdown()
    spans = exporter.get_finished_spans()
    chat_spans = [s for s in spans if s.name.startswith("chat ")]
    assert chat_spans and all(s.attributes["gen_ai.provider.name"] == "aws.bedrock" for s in chat_spans)
    texts += [span.to_json() for span in spans]
    texts += [repr(vars(record)) for record in caplog.records]
    assert caplog.records
    for text in texts:
        assert KEY not in text, text


# -- chaos --------------------------------------------------------------------------

TURNS = 100


def _good(n: int) -> List[bytes]:
    return bw.text_stream([f"answer {n} ", "ünïcode"], (10 + n, 3))


def _plan(seed: int) -> List[str]:
    rng = random.Random(seed)
    kinds = ["good", "good", "good", "cut_frame", "cut_between", "crc", "throttle_frame", "server_frame",
             "validation_frame", "http_429", "http_500", "http_400", "garbage", "empty", "plain"]
    return [rng.choice(kinds) for _ in range(TURNS)]


def _reply(kind: str, n: int) -> Reply:
    good = _good(n)
    data = b"".join(good)
    if kind == "good":
        return Reply(good)
    if kind == "cut_frame":
        return Reply([data[:len(data) // 2]], cut=True)
    if kind == "cut_between":
        return Reply(good[:3], cut=True)
    if kind == "crc":
        broken = bytearray(data)
        broken[len(good[0]) + 20] ^= 0xFF
        return Reply([bytes(broken)])
    if kind == "throttle_frame":
        return Reply([good[0], good[1], bw.exception_frame("throttlingException", "Too many tokens")])
    if kind == "server_frame":
        return Reply([good[0], bw.exception_frame("modelStreamErrorException", "stream failed")])
    if kind == "validation_frame":
        return Reply([bw.exception_frame("validationException", "bad")])
    if kind == "garbage":
        return Reply([b"<html>502 Bad Gateway</html>" * 3])
    if kind == "empty":
        return Reply([])
    if kind == "plain":
        return Reply([b"{}"], length=True, headers={"Content-Type": "application/json"})
    status = int(kind[5:])
    error_type = {429: "ThrottlingException", 500: "InternalServerException", 400: "ValidationException"}[status]
    return Reply([bw.json_body({"message": "no"})], status=status, length=True,
                 headers={"Content-Type": "application/json", "x-amzn-ErrorType": error_type})


@pytest.mark.parametrize("seed", [1, 2])
def test_a_hundred_turns_against_a_misbehaving_server_each_end_typed_and_count_their_usage(seed):
    plan = _plan(seed)
    turns = iter(enumerate(plan))

    def respond(request: Request) -> Reply:
        n, kind = next(turns)
        return _reply(kind, n)

    completed, failed, usage = 0, 0, 0
    with KeepAliveServer(respond) as server:
        provider = BedrockProvider(CLAUDE, base_url=server.url, api_key="k", timeout=10.0)
        try:
            for n, kind in enumerate(plan):
                try:
                    events = list(provider.chat_stream(MessageRequest(None, [Message.user(f"turn {n}")])))
                except LlmError:
                    failed += 1
                    assert kind != "good", (n, kind)
                    continue
                assert kind == "good", (n, kind)
                assert isinstance(events[-1], MessageComplete)
                assert events[-1].full_response.message.text == f"answer {n} ünïcode"
                completed += 1
                usage += events[-1].full_response.usage.prompt_tokens
        finally:
            provider.close()
        assert len(server.requests) == TURNS
    assert completed == plan.count("good") and failed == TURNS - completed
    assert usage == sum(10 + n for n, kind in enumerate(plan) if kind == "good")
