"""Provider cassettes: recorded from real providers over a local server, replayed with no socket."""

from __future__ import annotations

import json
import os
import pickle
from pathlib import Path

import pytest

from agcore_sync.errors import AgcoreError
from agcore_sync.llm.anthropic import AnthropicProvider
from agcore_sync.llm.errors import LlmError, RateLimitError, ServerError
from agcore_sync.llm.events import MessageComplete, TextDelta
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.llm.responses import OpenAIResponsesProvider
from agcore_sync.llm.retry import RetryConfig, RetryProvider
from agcore_sync.llm.types import Message, MessageRequest, ToolDef
from agcore_sync.testing import CassetteError, CassetteMismatchError, RecordingProvider, ReplayProvider
from tests.support import responses_wire
from tests.support.wire import (
    MESSAGE_STOP,
    anthropic_message,
    anthropic_sse,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_completion,
    openai_text_stream,
    openai_tool_call_stream,
)

WEATHER = ToolDef("get_weather", "Current weather of a city.",
                  {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


def ask(text: str = "Weather in Paris?") -> MessageRequest:
    return MessageRequest(None, (Message.user(text),), system="Be brief.", tools=(WEATHER,), max_tokens=200)


def openai(server, **kwargs) -> OpenAIProvider:
    return OpenAIProvider(model="gpt-4o-mini", api_key="sk-test-cassette", base_url=f"{server.url}/v1", **kwargs)


def anthropic_text_stream(text: str):
    return [anthropic_sse(message_start(), block_start(0, {"type": "text", "text": ""}),
                          block_delta(0, {"type": "text_delta", "text": text[:5]}),
                          block_delta(0, {"type": "text_delta", "text": text[5:]}),
                          block_stop(0), message_delta("end_turn", 7), MESSAGE_STOP)]


def lines(path: Path):
    return [json.loads(line) for line in path.read_text("utf-8").splitlines()]


# -- record and replay ---------------------------------------------------------------------------------


def test_a_streamed_exchange_replays_the_same_events_with_no_socket(stream_server, tmp_path, monkeypatch, request):
    stream_server.add_response(openai_tool_call_stream("chatcmpl-1", [("call_a", "get_weather", {"city": "Paris"}),
                                                                      ("call_b", "get_weather", {"city": "Rome"})],
                                                       (40, 12)))
    cassette = tmp_path / "weather.jsonl"
    live_provider = RecordingProvider(openai(stream_server), cassette)
    try:
        live = list(live_provider.chat_stream(sent := ask()))
    finally:
        live_provider.close()

    guard = request.getfixturevalue("no_network")
    replayed = list(ReplayProvider(cassette).chat_stream(sent))

    assert replayed == live and guard.attempts == []
    assert [e.to_dict() for e in replayed] == [e.to_dict() for e in live]
    assert isinstance(live[-1], MessageComplete) and len(live[-1].full_response.message.tool_uses) == 2
    header, row = lines(cassette)
    assert header["agcore_cassette"] == 1 and header["kind"] == "llm"
    assert header["provider"] == "OpenAIProvider" and header["model"] == "gpt-4o-mini"
    assert list(row) == ["request", "events"]
    assert row["request"] == json.loads(json.dumps(sent.to_dict()))


def test_a_chat_exchange_replays_its_response_streamed_or_not(stream_server, tmp_path, monkeypatch):
    body = json.dumps(openai_completion({"content": "Sunny, 21 C."}, usage=None)).encode()
    stream_server.add_response([body], headers={"Content-Type": "application/json"})
    cassette = tmp_path / "chat.jsonl"
    with_server = RecordingProvider(openai(stream_server), cassette)
    try:
        live = with_server.chat(ask())
    finally:
        with_server.close()
    stream_server.stop()

    replay = ReplayProvider(cassette)
    assert replay.chat(ask()) == live
    assert lines(cassette)[1]["response"] == live.to_dict()
    replay = ReplayProvider(cassette)
    events = list(replay.chat_stream(ask()))
    assert events[-1] == MessageComplete(live)
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Sunny, 21 C."


@pytest.mark.parametrize("provider_name", ["openai", "anthropic", "openai-responses"])
def test_every_provider_class_records_and_replays_streamed_and_not(stream_server, tmp_path, provider_name, request):
    if provider_name == "openai":
        stream_server.add_response(openai_text_stream("chatcmpl-2", ["Sunny ", "in Paris."], (30, 5)))
        stream_server.add_response([json.dumps(openai_completion({"content": "Rainy."})).encode()],
                                   headers={"Content-Type": "application/json"})
        inner = openai(stream_server)
    elif provider_name == "openai-responses":
        stream_server.add_response(responses_wire.text_stream("resp_1", ["Sunny ", "in Paris."], (30, 5)))
        message = {"type": "message", "id": "msg_2", "status": "completed", "role": "assistant",
                   "content": [{"type": "output_text", "text": "Rainy.", "annotations": []}]}
        body = responses_wire.response_object("resp_2", "completed", [message], (30, 2))
        stream_server.add_response([json.dumps(body).encode()], headers={"Content-Type": "application/json"})
        inner = OpenAIResponsesProvider("gpt-5-mini", api_key="sk-test", base_url=f"{stream_server.url}/v1")
    else:
        stream_server.add_response(anthropic_text_stream("Sunny in Paris."))
        stream_server.add_response([json.dumps(anthropic_message([{"type": "text", "text": "Rainy."}])).encode()],
                                   headers={"Content-Type": "application/json"})
        inner = AnthropicProvider(model="claude-sonnet-4-5", api_key="sk-ant-test", base_url=stream_server.url)
    cassette = tmp_path / f"{provider_name}.jsonl"
    recorder = RecordingProvider(inner, cassette)
    try:
        streamed = list(recorder.chat_stream(ask("one")))
        answered = recorder.chat(ask("two"))
    finally:
        recorder.close()

    guard = request.getfixturevalue("no_network")
    replay = ReplayProvider(cassette)
    assert replay.recorded_provider == type(inner).__name__ and replay.model == inner.model
    assert list(replay.chat_stream(ask("one"))) == streamed
    assert replay.chat(ask("two")) == answered
    assert replay.remaining == 0 and guard.attempts == []


def test_a_recorded_failure_is_raised_again_after_the_events_before_it(tmp_path):
    cut = MockProvider.failing_stream(MockProvider.text("Hello there, world"), after_events=3,
                                      error=ServerError("overloaded", status_code=529))
    recorder = RecordingProvider(MockProvider([RateLimitError("slow down", status_code=429, retry_after=2.0), cut]),
                                 tmp_path / "errors.jsonl")
    with pytest.raises(RateLimitError):
        recorder.chat(ask())
    live = []
    with pytest.raises(ServerError):
        for event in recorder.chat_stream(ask()):
            live.append(event)

    replay = ReplayProvider(tmp_path / "errors.jsonl")
    with pytest.raises(RateLimitError) as first:
        replay.chat(ask())
    assert (first.value.status_code, first.value.retry_after, first.value.retryable) == (429, 2.0, True)
    replayed = []
    with pytest.raises(ServerError, match="overloaded"):
        for event in replay.chat_stream(ask()):
            replayed.append(event)
    assert replayed == live and len(live) == 3


def test_retries_are_recorded_and_replayed_as_they_happened(tmp_path):
    inner = MockProvider([RateLimitError("slow down", status_code=429), MockProvider.text("finally")])
    recorded = RetryProvider(RecordingProvider(inner, tmp_path / "retry.jsonl"), RetryConfig(jitter=False),
                             sleep=lambda seconds: None).chat(ask())
    waits = []
    replayed = RetryProvider(ReplayProvider(tmp_path / "retry.jsonl"), RetryConfig(jitter=False),
                             sleep=waits.append).chat(ask())
    assert replayed == recorded and waits == [0.5]


def test_a_stream_the_caller_closed_early_is_recorded_as_closed(tmp_path):
    recorder = RecordingProvider(MockProvider([MockProvider.text("a long answer of many pieces")]),
                                 tmp_path / "closed.jsonl")
    stream = recorder.chat_stream(ask())
    head = [next(stream), next(stream), next(stream)]
    stream.close()
    assert lines(tmp_path / "closed.jsonl")[1]["closed"] is True

    replayed = ReplayProvider(tmp_path / "closed.jsonl").chat_stream(ask())
    assert [next(replayed) for _ in range(3)] == head
    with pytest.raises(CassetteError, match="closed after 3 events"):
        next(replayed)


def test_requests_from_several_threads_match_their_own_exchange_whatever_the_order(tmp_path):
    recorder = RecordingProvider(MockProvider([MockProvider.text("first"), MockProvider.text("second")]),
                                 tmp_path / "order.jsonl")
    recorder.chat(ask("a"))
    recorder.chat(ask("b"))
    replay = ReplayProvider(tmp_path / "order.jsonl")
    assert replay.chat(ask("b")).message.text == "second"
    assert replay.chat(ask("a")).message.text == "first"


def test_an_existing_cassette_gets_new_exchanges_appended(tmp_path):
    RecordingProvider(MockProvider([MockProvider.text("one")]), tmp_path / "c.jsonl").chat(ask("a"))
    RecordingProvider(MockProvider([MockProvider.text("two")]), tmp_path / "c.jsonl").chat(ask("b"))
    rows = lines(tmp_path / "c.jsonl")
    assert [("agcore_cassette" in row) for row in rows] == [True, False, False]
    with pytest.raises(CassetteError, match="recorded with provider 'MockProvider'"):
        RecordingProvider(MockProvider.__new__(type("OtherProvider", (MockProvider,), {})), tmp_path / "c.jsonl")


# -- drift ---------------------------------------------------------------------------------------------


def test_a_drifting_request_names_the_first_differing_json_path_and_both_values(tmp_path):
    RecordingProvider(MockProvider([MockProvider.text("ok")]), tmp_path / "drift.jsonl").chat(ask("Weather in Paris?"))
    replay = ReplayProvider(tmp_path / "drift.jsonl")

    with pytest.raises(CassetteMismatchError) as caught:
        replay.chat(ask("Weather in Rome?"))

    error = caught.value
    assert error.json_path == "$.messages[0].content[0].text"
    assert (error.recorded, error.sent) == ("Weather in Paris?", "Weather in Rome?")
    assert error.line == 2 and error.path == str(tmp_path / "drift.jsonl")
    assert "$.messages[0].content[0].text" in str(error) and "'Weather in Paris?'" in str(error)
    assert "'Weather in Rome?'" in str(error) and "line 2" in str(error)
    assert replay.mismatches == [error]
    assert isinstance(error, AgcoreError) and not isinstance(error, LlmError) and error.retryable is False
    assert pickle.loads(pickle.dumps(error)).json_path == error.json_path


def test_a_changed_setting_and_a_missing_key_are_reported_at_their_path(tmp_path):
    RecordingProvider(MockProvider([MockProvider.text("ok"), MockProvider.text("ok")]),
                      tmp_path / "d.jsonl").chat(ask())
    replay = ReplayProvider(tmp_path / "d.jsonl")
    changed = MessageRequest(None, ask().messages, system="Be brief.", tools=(WEATHER,), max_tokens=300)
    with pytest.raises(CassetteMismatchError, match=r"at \$\.max_tokens: recorded 200, sent 300"):
        replay.chat(changed)
    with_effort = MessageRequest(None, ask().messages, system="Be brief.", tools=(WEATHER,), max_tokens=200,
                                 reasoning_effort="low")
    with pytest.raises(CassetteMismatchError, match=r"at \$\.reasoning_effort: recorded \(missing\), sent 'low'"):
        replay.chat(with_effort)


def test_no_retry_repeats_a_drift_and_a_request_past_the_end_is_a_drift_too(tmp_path):
    RecordingProvider(MockProvider([MockProvider.text("ok")]), tmp_path / "r.jsonl").chat(ask())
    replay = ReplayProvider(tmp_path / "r.jsonl")
    waits = []
    with pytest.raises(CassetteMismatchError):
        RetryProvider(replay, sleep=waits.append).chat(ask("other"))
    assert waits == [] and len(replay.mismatches) == 1
    replay.chat(ask())
    with pytest.raises(CassetteMismatchError, match="all 1 recorded exchanges were replayed already"):
        list(replay.chat_stream(ask()))


# -- broken files --------------------------------------------------------------------------------------


def recorded_cassette(tmp_path: Path) -> Path:
    path = tmp_path / "good.jsonl"
    recorder = RecordingProvider(MockProvider([MockProvider.text("one"), MockProvider.text("two")]), path)
    recorder.chat(ask("a"))
    list(recorder.chat_stream(ask("b")))
    return path


def test_a_truncated_last_line_is_refused_naming_the_file_and_the_line(tmp_path):
    path = recorded_cassette(tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[:len(data) - 40])
    with pytest.raises(CassetteError) as caught:
        ReplayProvider(path)
    assert caught.value.line == 3 and f"cassette {path}, line 3: not valid JSON" in str(caught.value)


@pytest.mark.parametrize("garbage, what", [(b"{not json\n", "not valid JSON"),
                                            (b"[1, 2]\n", "must be a JSON object"), (b"\xff\xfe\n", "not UTF-8"),
                                            (b"[" * 100000 + b"\n", "too deep|not valid"),
                                            (b'{"hello": 1}\n', "not a provider exchange"),
                                            (b'{"request": {}, "events": [{"type": "warp"}]}\n',
                                             "not a provider exchange")],
                         ids=["not-json", "array", "not-utf8", "deep", "no-request", "unknown-event"])
def test_a_corrupt_line_is_refused_naming_the_file_and_the_line(tmp_path, garbage, what):
    path = recorded_cassette(tmp_path)
    rows = path.read_bytes().splitlines(keepends=True)
    path.write_bytes(rows[0] + garbage + b"".join(rows[1:]))
    with pytest.raises(CassetteError, match=what) as caught:
        ReplayProvider(path)
    assert caught.value.line == 2 and f"{path}, line 2" in str(caught.value)


def test_a_newer_format_version_is_refused(tmp_path):
    path = recorded_cassette(tmp_path)
    rows = path.read_text("utf-8").splitlines(keepends=True)
    header = json.loads(rows[0])
    header["agcore_cassette"] = 2
    path.write_text(json.dumps(header) + "\n" + "".join(rows[1:]), "utf-8")
    with pytest.raises(CassetteError, match="format version 2, newer than this agcore_sync"):
        ReplayProvider(path)
    with pytest.raises(CassetteError, match="format version 2"):
        RecordingProvider(MockProvider(), path)


def test_a_missing_an_empty_and_a_headerless_cassette_are_refused(tmp_path):
    with pytest.raises(CassetteError, match="no cassette at"):
        ReplayProvider(tmp_path / "nothing.jsonl")
    (tmp_path / "empty.jsonl").write_text("")
    with pytest.raises(CassetteError, match="is empty"):
        ReplayProvider(tmp_path / "empty.jsonl")
    (tmp_path / "headless.jsonl").write_text('{"request": {}}\n')
    with pytest.raises(CassetteError, match="line 1: the first line is not a cassette header"):
        ReplayProvider(tmp_path / "headless.jsonl")


def test_recording_into_a_path_that_cannot_be_written_fails_before_the_request_is_sent(tmp_path):
    inner = MockProvider([MockProvider.text("never sent")])
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    with pytest.raises(CassetteError, match="cannot write cassette"):
        RecordingProvider(inner, blocker / "cassette.jsonl")
    with pytest.raises(CassetteError, match="cannot write cassette"):
        RecordingProvider(inner, tmp_path)
    assert inner.requests == []


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root writes into read-only folders")
def test_recording_into_a_read_only_folder_fails_before_the_request_is_sent(tmp_path):
    inner = MockProvider([MockProvider.text("never sent")])
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o500)
    try:
        with pytest.raises(CassetteError, match="cannot write cassette"):
            RecordingProvider(inner, folder / "c.jsonl")
    finally:
        folder.chmod(0o700)
    assert inner.requests == []


@pytest.mark.skipif(not os.path.isdir("/sys/kernel"), reason="needs Linux sysfs, where even root cannot create files")
def test_recording_where_even_root_may_not_write_fails_before_the_request_is_sent():
    inner = MockProvider([MockProvider.text("never sent")])
    with pytest.raises(CassetteError, match="cannot write cassette /sys/kernel/agcore-cassette.jsonl"):
        RecordingProvider(inner, "/sys/kernel/agcore-cassette.jsonl")
    assert inner.requests == [] and not os.path.exists("/sys/kernel/agcore-cassette.jsonl")


def test_a_recording_provider_refuses_what_is_not_a_provider(tmp_path):
    with pytest.raises(TypeError, match="inner"):
        RecordingProvider("gpt-4o", tmp_path / "c.jsonl")


def test_a_foreign_error_of_the_inner_stream_is_raised_and_leaves_no_row(tmp_path):
    def broken(_request):
        yield from ()
        raise KeyError("a bug in the provider")

    recorder = RecordingProvider(MockProvider([MockProvider.stream(broken)]), tmp_path / "f.jsonl")
    with pytest.raises(KeyError):
        list(recorder.chat_stream(ask()))
    assert len(lines(tmp_path / "f.jsonl")) == 1  # the header only


def test_a_drift_inside_a_streamed_session_turn_ends_the_turn_and_is_kept_for_the_fixture(tmp_path):
    from agcore_sync.agent.session import AgentSession
    from agcore_sync.llm.events import Error

    list(AgentSession(RecordingProvider(MockProvider([MockProvider.text("Sunny.")]), tmp_path / "s.jsonl"))
         .submit_turn_stream("Weather in Paris?"))
    replay = ReplayProvider(tmp_path / "s.jsonl")
    events = list(AgentSession(replay).submit_turn_stream("Weather in Rome?"))
    assert isinstance(events[-1], Error) and isinstance(events[-1].error, CassetteMismatchError)
    assert replay.mismatches == [events[-1].error]
    assert events[-1].error.json_path == "$.messages[0].content[0].text"
