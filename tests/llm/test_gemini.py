"""GeminiProvider: configuration, endpoints, errors, secrets, retries, limits and the stream edge cases.

Everything goes through a real local HTTP server on 127.0.0.1
(``stream_server``), answering with bodies shaped as the Gemini API
documents them (``tests.support.gemini``).
"""

from __future__ import annotations

import json
import logging
import threading
from contextlib import closing
from typing import Any, List

import pytest

from agcore_sync import (
    AgentSession,
    AuthenticationError,
    CycleConfig,
    GeminiProvider,
    LlmConnectionError,
    LlmError,
    Message,
    MessageRequest,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    RetryConfig,
    RetryProvider,
    ServerError,
    StopReason,
    UsageLimitExceeded,
    UsageLimits,
)
from agcore_sync.llm.events import CostUpdate, MessageComplete, TextDelta
from tests.hardening.test_security import everything_said
from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage

MODEL = "gemini-2.5-flash"
KEY = "AIzaSyD-SECRET-gemini-0123456789abcdefgh"
JSON = {"Content-Type": "application/json"}


def ask(text: str = "hi", **kwargs: Any) -> MessageRequest:
    return MessageRequest(None, [Message.user(text)], **kwargs)


def provider_at(server: Any, **kwargs: Any) -> GeminiProvider:
    return GeminiProvider(kwargs.pop("model", MODEL), api_key=kwargs.pop("api_key", KEY), base_url=server.url,
                          **kwargs)


def google_error(code: int, status: str, message: str, **extra: Any) -> bytes:
    return json.dumps({"error": {"code": code, "message": message, "status": status, **extra}}).encode()


# -- configuration ------------------------------------------------------------


def test_the_key_comes_from_google_api_key_before_gemini_api_key(monkeypatch, stream_server):
    monkeypatch.setenv("GEMINI_API_KEY", "from-gemini")
    monkeypatch.setenv("GOOGLE_API_KEY", "from-google")
    stream_server.add_response([json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode()], headers=JSON)
    stream_server.add_response([json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode()], headers=JSON)
    with closing(GeminiProvider(MODEL, base_url=stream_server.url)) as provider:
        provider.chat(ask())
    monkeypatch.delenv("GOOGLE_API_KEY")
    with closing(GeminiProvider(MODEL, base_url=stream_server.url)) as provider:
        provider.chat(ask())
    assert [r.headers["x-goog-api-key"] for r in stream_server.requests] == ["from-google", "from-gemini"]


def test_without_a_key_the_constructor_names_the_variables_to_set_and_nothing_is_sent():
    with pytest.raises(ValueError, match="GOOGLE_API_KEY.*GEMINI_API_KEY"):
        GeminiProvider(MODEL)


def test_the_public_endpoint_and_a_model_id_with_a_slash_or_colon_stays_one_path_segment(monkeypatch):
    monkeypatch.setenv("GEMINI_API_KEY", "k")
    provider = GeminiProvider()
    assert provider.url(MODEL, stream=False) == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent")
    assert provider.url("tunedModels/my-model:v2", stream=True) == (
        "https://generativelanguage.googleapis.com/v1beta/models/tunedModels%2Fmy-model%3Av2"
        ":streamGenerateContent?alt=sse")
    assert "'k'" not in repr(provider) and "api_key" not in repr(provider)


@pytest.mark.parametrize("location, host", [
    (None, "https://aiplatform.googleapis.com"),
    ("global", "https://aiplatform.googleapis.com"),
    ("us", "https://aiplatform.us.rep.googleapis.com"),
    ("eu", "https://aiplatform.eu.rep.googleapis.com"),
    ("europe-west4", "https://europe-west4-aiplatform.googleapis.com"),
])
def test_vertex_ai_uses_the_host_google_genai_picks_for_the_location(location, host):
    provider = GeminiProvider(MODEL, vertex=True, project="my-proj", location=location, credentials=lambda: "t")
    where = location or "global"
    assert provider.base_url == host
    assert provider.url(MODEL, stream=False) == (
        f"{host}/v1/projects/my-proj/locations/{where}/publishers/google/models/{MODEL}:generateContent")


def test_vertex_ai_reads_project_and_location_from_the_environment_and_names_the_missing_one(monkeypatch):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    monkeypatch.delenv("GOOGLE_CLOUD_LOCATION", raising=False)
    with pytest.raises(ValueError, match="GOOGLE_CLOUD_PROJECT"):
        GeminiProvider(MODEL, vertex=True, credentials=lambda: "t")
    monkeypatch.setenv("GOOGLE_CLOUD_PROJECT", "env-proj")
    monkeypatch.setenv("GOOGLE_CLOUD_LOCATION", "us-east5")
    provider = GeminiProvider(MODEL, vertex=True, credentials=lambda: "t")
    assert (provider.project, provider.location) == ("env-proj", "us-east5")
    assert provider.base_url == "https://us-east5-aiplatform.googleapis.com"


def test_mixed_up_arguments_are_refused_at_construction():
    with pytest.raises(ValueError, match="credentials"):
        GeminiProvider(MODEL, vertex=True, project="p", api_key="k")
    with pytest.raises(ValueError, match="vertex=True"):
        GeminiProvider(MODEL, api_key="k", credentials=lambda: "t")
    with pytest.raises(TypeError, match="credentials"):
        GeminiProvider(MODEL, vertex=True, project="p", credentials="a token string")
    with pytest.raises(TypeError, match="vertex"):
        GeminiProvider(MODEL, api_key="k", vertex="yes")


def test_a_request_without_any_model_fails_before_sending(stream_server):
    with closing(GeminiProvider(api_key=KEY, base_url=stream_server.url)) as provider:
        with pytest.raises(LlmError, match="no model"):
            provider.chat(ask())
    assert stream_server.requests == []


def test_telemetry_names_the_gemini_api_and_vertex_ai_as_the_semantic_conventions_do():
    from agcore_sync.telemetry import _provider_name

    gemini = GeminiProvider(MODEL, api_key="k")
    vertex = GeminiProvider(MODEL, vertex=True, project="p", credentials=lambda: "t")
    assert _provider_name(gemini) == "gcp.gemini"
    assert _provider_name(RetryProvider(vertex, RetryConfig(max_retries=1))) == "gcp.vertex_ai"


# -- errors -------------------------------------------------------------------


@pytest.mark.parametrize("status, body_status, cls, retryable", [
    (400, "INVALID_ARGUMENT", ProviderError, False),
    (403, "PERMISSION_DENIED", AuthenticationError, False),
    (404, "NOT_FOUND", ProviderError, False),
    (500, "INTERNAL", ServerError, True),
    (503, "UNAVAILABLE", ServerError, True),
])
def test_error_statuses_map_to_the_typed_errors_with_the_apis_message(stream_server, status, body_status, cls,
                                                                       retryable):
    stream_server.add_response([google_error(status, body_status, "Something specific.")], status=status,
                               headers=JSON)
    with closing(provider_at(stream_server)) as provider:
        with pytest.raises(cls) as info:
            provider.chat(ask())
    assert type(info.value) is cls
    assert info.value.status_code == status and info.value.retryable is retryable
    assert "Gemini returned HTTP" in str(info.value) and "Something specific." in str(info.value)


def test_a_429_takes_its_wait_from_retry_after_or_else_from_the_bodys_retry_delay(stream_server):
    retry_info = {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "31s"}]}
    stream_server.add_response([google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", **retry_info)],
                               status=429, headers=JSON)
    stream_server.add_response([google_error(429, "RESOURCE_EXHAUSTED", "Quota exceeded.", **retry_info)],
                               status=429, headers={**JSON, "Retry-After": "7"})
    with closing(provider_at(stream_server)) as provider:
        with pytest.raises(RateLimitError) as first:
            provider.chat(ask())
        with pytest.raises(RateLimitError) as second:
            list(provider.chat_stream(ask()))
    assert first.value.retry_after == 31.0 and first.value.retryable
    assert second.value.retry_after == 7.0


def test_retry_provider_retries_a_rate_limited_call_and_then_succeeds(stream_server):
    waits: List[float] = []
    retry_info = {"details": [{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "2s"}]}
    stream_server.add_response([google_error(429, "RESOURCE_EXHAUSTED", "Slow down.", **retry_info)],
                               status=429, headers=JSON)
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "fine"}], "STOP"))])
    provider = RetryProvider(provider_at(stream_server), RetryConfig(max_retries=2, jitter=False),
                             sleep=waits.append)
    with closing(provider):
        events = list(provider.chat_stream(ask()))
    assert events[-1].full_response.message.text == "fine"
    assert waits == [2.0]
    assert len(stream_server.requests) == 2


def test_an_error_chunk_in_the_middle_of_a_stream_raises_its_typed_error_after_the_text_so_far(stream_server):
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "Par"}], usage=gemini_usage(12, 1))),
                                b'data: {"error": {"code": 500, "message": "Internal error.", "status": "INTERNAL"}}'
                                b"\r\n\r\n"])
    events: List[Any] = []
    with closing(provider_at(stream_server)) as provider:
        with pytest.raises(ServerError, match="Internal error") as info:
            for event in provider.chat_stream(ask()):
                events.append(event)
    assert info.value.status_code == 500 and info.value.retryable
    assert [e.text for e in events if isinstance(e, TextDelta)] == ["Par"]
    # The tokens billed so far come as a CostUpdate just before the error.
    assert isinstance(events[-1], CostUpdate) and events[-1].usage.prompt_tokens == 12


def test_a_stream_that_ends_before_its_finish_reason_is_a_connection_error(stream_server):
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "Hello"}]))])
    with closing(provider_at(stream_server)) as provider:
        with pytest.raises(LlmConnectionError, match="before its end"):
            list(provider.chat_stream(ask()))


def test_a_chunk_that_is_not_json_is_a_parse_error(stream_server):
    stream_server.add_response([b"data: {not json\r\n\r\n"])
    with closing(provider_at(stream_server)) as provider:
        with pytest.raises(ResponseParseError):
            list(provider.chat_stream(ask()))


# -- secrets ------------------------------------------------------------------


def test_the_key_appears_in_no_error_log_repr_or_saved_session_even_when_the_server_echoes_it(stream_server,
                                                                                                caplog):
    caplog.set_level(logging.DEBUG)
    stream_server.add_response([google_error(400, "INVALID_ARGUMENT", f"API key not valid: {KEY}")], status=400,
                               headers=JSON)
    stream_server.add_response([f"data: not json {KEY}\r\n\r\n".encode()])
    stream_server.add_response([f'data: {{"error": {{"code": 500, "message": "saw {KEY}"}}}}\r\n\r\n'.encode()])
    texts = []
    with closing(provider_at(stream_server)) as provider:
        texts.append(repr(provider))
        with AgentSession(provider, CycleConfig(retry=None)) as session:
            for _ in range(3):
                with pytest.raises(LlmError) as info:
                    list(provider.chat_stream(ask()))
                texts += everything_said(info.value)
            texts += [repr(session), json.dumps(session.to_dict())]
    assert stream_server.requests[0].headers["x-goog-api-key"] == KEY
    texts += [logging.Formatter().format(record) for record in caplog.records]
    assert caplog.records
    for text in texts:
        assert KEY not in text, text


def test_a_vertex_token_is_masked_in_errors_and_google_auth_credentials_refresh_once_for_many_threads(
        stream_server):
    class Credentials:  # the two attributes and the method google-auth credentials have
        def __init__(self) -> None:
            self.token = None
            self.valid = False
            self.refreshes = 0

        def refresh(self, request: Any) -> None:
            self.refreshes += 1
            self.token, self.valid = "ya29.SECRET-vertex-token", True

    credentials = Credentials()
    for _ in range(4):
        stream_server.add_response([json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode()], headers=JSON)
    stream_server.add_response([google_error(401, "UNAUTHENTICATED", "bad token ya29.SECRET-vertex-token")],
                               status=401, headers=JSON)
    provider = GeminiProvider(MODEL, base_url=stream_server.url, vertex=True, project="p", location="us",
                              credentials=credentials)
    start = threading.Barrier(4)
    failures: List[BaseException] = []

    def call() -> None:
        try:
            start.wait(10)
            provider.chat(ask())
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    threads = [threading.Thread(target=call, name=f"gemini-test-{n}") for n in range(4)]
    with closing(provider):
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(10)
        with pytest.raises(AuthenticationError) as info:
            provider.chat(ask())
    assert not failures and not any(t.is_alive() for t in threads)
    assert credentials.refreshes == 1
    assert {r.headers["authorization"] for r in stream_server.requests} == {"Bearer ya29.SECRET-vertex-token"}
    assert all("ya29.SECRET-vertex-token" not in text for text in everything_said(info.value))


# -- answers ------------------------------------------------------------------


def test_a_prompt_blocked_by_prompt_feedback_is_an_empty_content_filter_response_not_an_error(stream_server):
    blocked = {"promptFeedback": {"blockReason": "SAFETY"}, "usageMetadata": gemini_usage(7),
               "modelVersion": MODEL, "responseId": "r"}
    stream_server.add_response([json.dumps(blocked).encode()], headers=JSON)
    stream_server.add_response([gemini_sse(blocked)])
    with closing(provider_at(stream_server)) as provider:
        plain = provider.chat(ask())
        streamed = list(provider.chat_stream(ask()))[-1].full_response
    for response in (plain, streamed):
        assert response.stop_reason is StopReason.CONTENT_FILTER
        assert response.message.content == () and response.usage.prompt_tokens == 7


def test_a_safety_stop_keeps_the_text_so_far_with_the_content_filter_reason(stream_server):
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "Well,"}]),
                                           gemini_chunk([], "SAFETY", usage=gemini_usage(5, 2)))])
    with closing(provider_at(stream_server)) as provider:
        response = list(provider.chat_stream(ask()))[-1].full_response
    assert (response.message.text, response.stop_reason) == ("Well,", StopReason.CONTENT_FILTER)


def test_usage_cost_and_the_server_named_model_come_from_usage_metadata(stream_server):
    usage = gemini_usage(1000, 200, thoughtsTokenCount=300, cachedContentTokenCount=400,
                         toolUsePromptTokenCount=50)
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "ok"}], "STOP", usage=usage,
                                                        model="gemini-2.5-flash-001"))])
    with closing(provider_at(stream_server)) as provider:
        events = list(provider.chat_stream(ask()))
    cost = next(e for e in events if isinstance(e, CostUpdate))
    assert (cost.usage.prompt_tokens, cost.usage.completion_tokens, cost.usage.cache_read_tokens) == (1050, 500, 400)
    assert cost.cost_usd == pytest.approx((650 * 0.30 + 400 * 0.03 + 500 * 2.50) / 1e6)
    assert isinstance(events[-1], MessageComplete) and events[-1].full_response.model == "gemini-2.5-flash-001"


def test_calls_without_ids_get_unique_ids_that_are_not_sent_back(stream_server):
    call = {"functionCall": {"name": "add", "args": {"a": 1, "b": 2}}}
    stream_server.add_response([json.dumps(gemini_chunk([call, call], "STOP")).encode()], headers=JSON)
    with closing(provider_at(stream_server)) as provider:
        response = provider.chat(ask())
    ids = [b.id for b in response.message.tool_uses]
    assert len(set(ids)) == 2 and all(i.startswith("gcall_") for i in ids)
    assert response.stop_reason is StopReason.TOOL_USE


def test_thinking_config_is_sent_only_when_asked_and_extra_body_is_merged_last(stream_server):
    for _ in range(2):
        stream_server.add_response([json.dumps(gemini_chunk([{"text": "ok"}], "STOP")).encode()], headers=JSON)
    with closing(provider_at(stream_server)) as provider:
        provider.chat(ask(max_tokens=100))
        provider.chat(ask(thinking=1024, extra_body={"safetySettings": [
            {"category": "HARM_CATEGORY_HARASSMENT", "threshold": "BLOCK_NONE"}], "generationConfig": {"seed": 4}}))
    plain, extra = [r.json for r in stream_server.requests]
    assert plain["generationConfig"] == {"maxOutputTokens": 100}
    assert extra["generationConfig"] == {"seed": 4}  # replaced whole, as the other providers merge extra_body
    assert extra["safetySettings"][0]["threshold"] == "BLOCK_NONE"


def test_usage_limits_stop_a_gemini_session_at_its_token_budget(stream_server):
    stream_server.add_response([json.dumps(gemini_chunk([{"text": "long"}], "STOP",
                                                         usage=gemini_usage(100, 900))).encode()], headers=JSON)
    with closing(provider_at(stream_server)) as provider:
        with AgentSession(provider, CycleConfig(retry=None), usage_limits=UsageLimits(max_output_tokens=500)) as s:
            with pytest.raises(UsageLimitExceeded) as info:
                s.submit_turn("first")
    assert info.value.usage.output_tokens == 900 and info.value.usage.cost_usd == pytest.approx(0.00228)
    assert len(stream_server.requests) == 1


def test_a_vertex_stream_masks_the_token_a_mid_stream_error_echoes_and_asks_for_one_token_per_request(
        stream_server):
    tokens = iter(["ya29.first-SECRET", "ya29.second-SECRET"])
    calls: List[str] = []

    def token() -> str:
        calls.append("called")
        return next(tokens)

    for secret in ("ya29.first-SECRET", "ya29.second-SECRET"):
        stream_server.add_response([f'data: {{"error": {{"code": 500, "message": "saw {secret}"}}}}\r\n\r\n'.encode()])
    with closing(GeminiProvider(MODEL, base_url=stream_server.url, vertex=True, project="p",
                                credentials=token)) as provider:
        for secret in ("ya29.first-SECRET", "ya29.second-SECRET"):
            with pytest.raises(ServerError) as info:
                list(provider.chat_stream(ask()))
            assert all(secret not in text for text in everything_said(info.value))
            assert "***" in str(info.value)
    assert len(calls) == 2
    assert [r.headers["authorization"] for r in stream_server.requests] == [
        "Bearer ya29.first-SECRET", "Bearer ya29.second-SECRET"]


@pytest.mark.parametrize("kwargs, exc_type, named", [
    ({"base_url": 123}, TypeError, "base_url"),
    ({"base_url": "localhost:8000"}, ValueError, "base_url"),
    ({"timeout": "30"}, TypeError, "timeout"),
    ({"timeout": 0}, ValueError, "timeout"),
    ({"model": 4}, TypeError, "model"),
    ({"api_key": 12345}, TypeError, "api_key"),
    ({"session": "not a session"}, TypeError, "session"),
    ({"extra_headers": {"X-Id": 7}}, TypeError, "extra_headers"),
    ({"project": 5, "vertex": True}, TypeError, "project"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_each_argument_is_checked_before_the_missing_key_is_reported(kwargs, exc_type, named):
    with pytest.raises(exc_type) as info:
        GeminiProvider(**kwargs)
    assert named in str(info.value) and "GeminiProvider" in str(info.value) and "\n" not in str(info.value)


@pytest.mark.parametrize("framing", ["chunked", "close"])
def test_the_first_text_delta_arrives_before_the_server_sends_more(stream_server, framing):
    from agcore_sync.llm.events import ContentBlockStart, MessageStart

    released = threading.Event()
    first = gemini_sse(gemini_chunk([{"text": "Hel"}], usage=gemini_usage(12)))
    rest = gemini_sse(gemini_chunk([{"text": "lo"}], "STOP", usage=gemini_usage(12, 2)))
    stream_server.add_response([first, released, rest], framing=framing)
    before: List[Any] = []
    with closing(provider_at(stream_server)) as provider:
        stream = provider.chat_stream(ask())
        try:
            for event in stream:
                before.append(event)
                if isinstance(event, TextDelta):
                    break
            released.set()  # the server held the rest back until the first delta was seen
            after = list(stream)
        finally:
            released.set()
            stream.close()
    assert before == [MessageStart("resp-1", MODEL), ContentBlockStart(0, "text"), TextDelta("Hel")]
    assert after[0] == TextDelta("lo") and after[-1].full_response.message.text == "Hello"
    assert stream_server.errors == []
