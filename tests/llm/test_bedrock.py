"""BedrockProvider against a local server: configuration, auth, plain answers, errors, retries, masking.

Every test talks to a real HTTP server on 127.0.0.1 (``stream_server``)
with botocore pointed at empty config files and no metadata service, so
nothing reaches AWS.
"""

from __future__ import annotations

import json
import logging
import sys

import pytest

from agcore_sync import BedrockProvider, Message, MessageRequest, ToolDef
from agcore_sync.llm.errors import (
    AuthenticationError,
    LlmError,
    ProviderError,
    RateLimitError,
    ResponseParseError,
    ServerError,
)
from agcore_sync.llm.events import CostUpdate, MessageComplete
from agcore_sync.llm.retry import RetryConfig, RetryProvider
from agcore_sync.llm.types import StopReason, ThinkingBlock, ToolUseBlock
from tests.support import bedrock_wire as bw

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
KEY = "ABSKQmVkcm9ja0FQSUtleS1leGFtcGxlLXNlY3JldC1rZXktZm9yLXRlc3Rz"


@pytest.fixture
def aws(monkeypatch, tmp_path):
    bw.isolate_aws(monkeypatch, tmp_path)


@pytest.fixture
def provider(aws, stream_server):
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url)
    yield provider
    provider.close()


def _answer(stream_server, content, stop="end_turn", tokens=(12, 5), **extra):
    stream_server.add_response([bw.json_body(bw.converse_response(content, stop, tokens, **extra))],
                               headers=bw.JSON_HEADERS)


def _ask(text="hi", **kwargs):
    return MessageRequest(None, [Message.user(text)], **kwargs)


# -- configuration ------------------------------------------------------------


def test_the_region_comes_from_aws_region_then_aws_default_region_and_picks_the_endpoint(aws, monkeypatch):
    monkeypatch.setenv("AWS_REGION", "eu-west-3")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "ap-south-1")
    assert BedrockProvider(CLAUDE).base_url == "https://bedrock-runtime.eu-west-3.amazonaws.com"
    monkeypatch.delenv("AWS_REGION")
    provider = BedrockProvider(CLAUDE)
    assert provider.region == "ap-south-1"
    assert provider.url_for(CLAUDE, stream=True) == (
        "https://bedrock-runtime.ap-south-1.amazonaws.com/model/"
        "us.anthropic.claude-sonnet-4-5-20250929-v1%3A0/converse-stream")
    assert BedrockProvider(CLAUDE, region="us-west-2").region == "us-west-2"


def test_a_missing_region_names_the_environment_variable_before_any_request(monkeypatch, tmp_path, stream_server):
    bw.isolate_aws(monkeypatch, tmp_path, region=False)
    with pytest.raises(ValueError, match="AWS_REGION"):
        BedrockProvider(CLAUDE)
    with pytest.raises(ValueError, match="AWS_REGION"):
        BedrockProvider(CLAUDE, api_key=KEY)
    assert stream_server.requests == []


def test_missing_credentials_name_the_variables_to_set_and_send_nothing(monkeypatch, tmp_path, stream_server):
    bw.isolate_aws(monkeypatch, tmp_path, credentials=False)
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url)
    try:
        with pytest.raises(AuthenticationError) as caught:
            provider.chat(_ask())
        with pytest.raises(AuthenticationError):
            list(provider.chat_stream(_ask()))
    finally:
        provider.close()
    for name in ("AWS_BEARER_TOKEN_BEDROCK", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_PROFILE"):
        assert name in str(caught.value)
    assert not caught.value.retryable
    assert stream_server.requests == []


def test_without_botocore_sigv4_is_one_import_error_naming_the_extra(aws, monkeypatch):
    monkeypatch.setitem(sys.modules, "botocore", None)
    monkeypatch.setitem(sys.modules, "botocore.session", None)
    with pytest.raises(ImportError, match=r'pip install -e "\.\[bedrock\]"'):
        BedrockProvider(CLAUDE)
    BedrockProvider(CLAUDE, api_key=KEY)  # a Bedrock API key needs no botocore


def test_importing_the_package_and_the_provider_loads_no_botocore():
    import subprocess

    code = ("import sys, agcore_sync; from agcore_sync import BedrockProvider; "
            "print('botocore' in sys.modules, 'boto3' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]


def test_the_bearer_key_from_the_environment_is_sent_and_nothing_is_signed(aws, monkeypatch, stream_server):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url, extra_headers={"X-Trace": "t1"})
    try:
        _answer(stream_server, [{"text": "ok"}])
        provider.chat(_ask())
    finally:
        provider.close()
    (record,) = stream_server.requests
    assert record.headers["authorization"] == f"Bearer {KEY}"
    assert "x-amz-date" not in record.headers
    assert record.headers["x-trace"] == "t1"
    assert KEY not in repr(provider)


def test_a_profile_gives_the_region_and_the_credentials(monkeypatch, tmp_path, stream_server):
    bw.isolate_aws(monkeypatch, tmp_path, credentials=False, region=False)
    (tmp_path / "aws-config").write_text("[profile dev]\nregion = eu-central-1\n")
    (tmp_path / "aws-credentials").write_text(
        "[dev]\naws_access_key_id = AKIDPROFILE\naws_secret_access_key = profile-secret\n")
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url, profile="dev")
    try:
        assert provider.region == "eu-central-1"
        _answer(stream_server, [{"text": "ok"}])
        provider.chat(_ask())
    finally:
        provider.close()
    assert "Credential=AKIDPROFILE/" in stream_server.requests[0].headers["authorization"]
    assert "/eu-central-1/bedrock/aws4_request" in stream_server.requests[0].headers["authorization"]
    with pytest.raises(ValueError, match="'nope'"):
        BedrockProvider(CLAUDE, profile="nope", region="us-east-1")


def test_explicit_credentials_are_used_instead_of_the_chain(monkeypatch, tmp_path, stream_server):
    from botocore.credentials import Credentials

    bw.isolate_aws(monkeypatch, tmp_path, credentials=False)
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url, credentials=Credentials("AKIDGIVEN", "s"))
    try:
        _answer(stream_server, [{"text": "ok"}])
        provider.chat(_ask())
    finally:
        provider.close()
    assert "Credential=AKIDGIVEN/" in stream_server.requests[0].headers["authorization"]


# -- plain answers --------------------------------------------------------------


def test_a_converse_answer_becomes_a_message_response_with_cache_usage(provider, stream_server):
    _answer(stream_server, [
        {"reasoningContent": {"reasoningText": {"text": "Think.", "signature": "sig-1"}}},
        {"text": "Calling."},
        {"toolUse": {"toolUseId": "tooluse_1", "name": "add", "input": {"a": 1, "b": 2}}},
    ], "tool_use", (10, 20), cache_read=300, cache_write=40)
    response = provider.chat(_ask())
    assert response.id == bw.REQUEST_ID and response.model == CLAUDE
    assert response.stop_reason is StopReason.TOOL_USE
    thinking, text, use = response.message.content
    assert isinstance(thinking, ThinkingBlock) and thinking.text == "Think."
    assert text.text == "Calling."
    assert use == ToolUseBlock("tooluse_1", "add", {"a": 1, "b": 2})
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (350, 20)
    assert (response.usage.cache_read_tokens, response.usage.cache_write_tokens) == (300, 40)


@pytest.mark.parametrize("wire, ours", [
    ("end_turn", StopReason.STOP), ("stop_sequence", StopReason.STOP), ("tool_use", StopReason.TOOL_USE),
    ("max_tokens", StopReason.LENGTH), ("model_context_window_exceeded", StopReason.LENGTH),
    ("guardrail_intervened", StopReason.CONTENT_FILTER), ("content_filtered", StopReason.CONTENT_FILTER),
    ("malformed_model_output", StopReason.ERROR),
])
def test_stop_reasons_map_as_pinned(provider, stream_server, wire, ours):
    _answer(stream_server, [{"text": "x"}], wire)
    assert provider.chat(_ask()).stop_reason is ours


def test_a_body_of_another_shape_is_a_response_parse_error(provider, stream_server):
    stream_server.add_response([b'{"output": {}}'], headers=bw.JSON_HEADERS)
    with pytest.raises(ResponseParseError):
        provider.chat(_ask())


def test_whitespace_only_text_from_another_provider_is_left_out_and_its_message_still_alternates(
        provider, stream_server):
    from agcore_sync.llm.types import Role, TextBlock

    _answer(stream_server, [{"text": "ok"}])
    history = [Message.user("1+2?"),
               Message(Role.ASSISTANT, [TextBlock("\n\n"), ToolUseBlock("call_1", "add", {"a": 1, "b": 2})]),
               Message.tool_result("call_1", "3"),
               Message(Role.ASSISTANT, [TextBlock(" \n")]),  # nothing left: the message is left out
               Message.user("thanks")]
    provider.chat(MessageRequest(None, history))
    assert stream_server.requests[0].json["messages"] == [
        {"role": "user", "content": [{"text": "1+2?"}]},
        {"role": "assistant", "content": [{"toolUse": {"toolUseId": "call_1", "name": "add",
                                                       "input": {"a": 1, "b": 2}}}]},
        {"role": "user", "content": [{"toolResult": {"toolUseId": "call_1", "content": [{"text": "3"}],
                                                     "status": "success"}},
                                     {"text": "thanks"}]},
    ]


def test_an_http_image_url_is_refused_before_anything_is_sent(provider, stream_server):
    from agcore_sync.llm.media import ImageBlock

    with pytest.raises(ValueError, match="s3://"):
        provider.chat(MessageRequest(None, [Message.user("see", ImageBlock.from_url("https://x.test/a.png"))]))
    assert stream_server.requests == []


def test_the_stream_cost_is_priced_from_the_bedrock_rows(provider, stream_server):
    stream_server.add_response(bw.text_stream(["hi"], (1_000_000, 1_000_000)), headers=bw.STREAM_HEADERS)
    costs = [e for e in provider.chat_stream(_ask()) if isinstance(e, CostUpdate)]
    assert costs[0].cost_usd == pytest.approx(3.00 + 15.00)


# -- errors -----------------------------------------------------------------------


@pytest.mark.parametrize("status, error_type, cls, retryable", [
    (400, "ValidationException:http://internal.amazon.com/coral/com.amazon.bedrock/", ProviderError, False),
    (403, "AccessDeniedException", AuthenticationError, False),
    (403, "UnrecognizedClientException", AuthenticationError, False),
    (404, "ResourceNotFoundException", ProviderError, False),
    (424, "ModelErrorException", ServerError, True),
    (429, "ThrottlingException", RateLimitError, True),
    (429, "ServiceQuotaExceededException", RateLimitError, True),
    (500, "InternalServerException", ServerError, True),
    (503, "ServiceUnavailableException", ServerError, True),
    (418, None, ProviderError, False),
])
def test_http_errors_map_by_their_aws_error_type(provider, stream_server, status, error_type, cls, retryable):
    headers = {"Content-Type": "application/json", **({"x-amzn-ErrorType": error_type} if error_type else {})}
    stream_server.add_response([bw.json_body({"message": "it went wrong"})], status=status, headers=headers)
    with pytest.raises(LlmError) as caught:
        provider.chat(_ask())
    assert type(caught.value) is cls
    assert caught.value.retryable is retryable
    assert caught.value.status_code == status
    assert "it went wrong" in str(caught.value)


def test_the_error_type_is_read_from_the_body_when_the_header_is_missing(provider, stream_server):
    stream_server.add_response([bw.json_body({"__type": "com.amazon.coral.service#ThrottlingException",
                                              "Message": "slow down"})], status=400,
                               headers={"Content-Type": "application/json"})
    with pytest.raises(RateLimitError, match="slow down"):
        provider.chat(_ask())


def test_a_403_names_the_region_used(provider, stream_server):
    stream_server.add_response([bw.json_body({"message": "The security token included in the request is invalid."})],
                               status=403, headers={"x-amzn-ErrorType": "UnrecognizedClientException"})
    with pytest.raises(AuthenticationError, match="region 'us-east-1'"):
        provider.chat(_ask())


def test_retry_after_is_honoured_by_the_retry_provider(provider, stream_server):
    stream_server.add_response([bw.json_body({"message": "Too many requests"})], status=429,
                               headers={"x-amzn-ErrorType": "ThrottlingException", "Retry-After": "7"})
    _answer(stream_server, [{"text": "after the wait"}])
    waits = []
    retrying = RetryProvider(provider, RetryConfig(max_retries=2, initial_backoff=0.01), sleep=waits.append)
    assert retrying.chat(_ask()).message.text == "after the wait"
    assert waits == [7.0]


def test_a_throttling_frame_before_any_event_is_retried(provider, stream_server):
    stream_server.add_response([bw.exception_frame("throttlingException", "Too many tokens")],
                               headers=bw.STREAM_HEADERS)
    stream_server.add_response(bw.text_stream(["fine"]), headers=bw.STREAM_HEADERS)
    waits = []
    retrying = RetryProvider(provider, RetryConfig(max_retries=2, initial_backoff=0.01), sleep=waits.append)
    events = list(retrying.chat_stream(_ask()))
    assert isinstance(events[-1], MessageComplete) and events[-1].full_response.message.text == "fine"
    assert len(waits) == 1 and len(stream_server.requests) == 2


# -- secrets ------------------------------------------------------------------------


def test_the_bearer_key_echoed_in_an_error_is_masked_in_the_error_and_logs(aws, stream_server, caplog):
    provider = BedrockProvider(CLAUDE, base_url=stream_server.url, api_key=KEY)
    stream_server.add_response([bw.json_body({"message": f"bad key {KEY}"})], status=403,
                               headers={"x-amzn-ErrorType": "UnrecognizedClientException"})
    stream_server.add_response([bw.message_start(), bw.exception_frame("validationException", f"echo {KEY}")],
                               headers=bw.STREAM_HEADERS)
    caplog.set_level(logging.DEBUG)
    try:
        with pytest.raises(AuthenticationError) as first:
            provider.chat(_ask())
        with pytest.raises(ProviderError) as second:
            list(provider.chat_stream(_ask()))
    finally:
        provider.close()
    for error in (first.value, second.value):
        assert KEY not in str(error) and KEY not in repr(error) and KEY not in json.dumps(error.body)
        assert "***" in str(error)
    assert KEY not in caplog.text


def test_no_signature_header_appears_in_errors_or_logs(provider, stream_server, caplog):
    caplog.set_level(logging.DEBUG)
    stream_server.add_response([bw.json_body({"message": "nope"})], status=400,
                               headers={"x-amzn-ErrorType": "ValidationException"})
    with pytest.raises(ProviderError) as caught:
        provider.chat(_ask())
    authorization = stream_server.requests[0].headers["authorization"]
    signature = authorization.rsplit("Signature=", 1)[1]
    # botocore's own DEBUG log prints each signature (as it does for boto3); ours never does.
    ours = "\n".join(r.getMessage() for r in caplog.records if r.name.startswith("agcore_sync"))
    assert "POST" in ours
    for text in (str(caught.value), repr(caught.value), ours, repr(provider)):
        assert signature not in text and bw.SECRET_KEY not in text and "AWS4-HMAC-SHA256" not in text


# -- telemetry ------------------------------------------------------------------------


def test_the_telemetry_provider_name_is_aws_bedrock_also_behind_a_retry_provider(provider):
    from agcore_sync.telemetry import _provider_name

    assert _provider_name(provider) == "aws.bedrock"
    assert _provider_name(RetryProvider(provider)) == "aws.bedrock"


def test_a_tool_definition_without_a_description_sends_none(provider, stream_server):
    _answer(stream_server, [{"text": "ok"}])
    provider.chat(MessageRequest(None, [Message.user("hi")], tools=[ToolDef("f", "")], tool_choice="none"))
    assert "toolConfig" not in stream_server.requests[0].json


@pytest.mark.parametrize("kwargs, exc_type, named", [
    ({"base_url": 123}, TypeError, "base_url"),
    ({"base_url": "localhost:8000"}, ValueError, "base_url"),
    ({"timeout": "30"}, TypeError, "timeout"),
    ({"timeout": 0}, ValueError, "timeout"),
    ({"model": 4}, TypeError, "model"),
    ({"region": 1}, TypeError, "region"),
    ({"api_key": 12345}, TypeError, "api_key"),
    ({"profile": ["dev"]}, TypeError, "profile"),
    ({"session": "not a session"}, TypeError, "session"),
    ({"extra_headers": {"X-Id": 7}}, TypeError, "extra_headers"),
], ids=lambda v: v if isinstance(v, str) else None)
def test_each_argument_is_checked_before_the_region_or_credentials_are_looked_for(kwargs, exc_type, named):
    with pytest.raises(exc_type) as caught:
        BedrockProvider(**kwargs)
    assert named in str(caught.value) and "BedrockProvider" in str(caught.value)


def test_a_requests_timeout_tuple_and_session_are_accepted(aws):
    import requests

    with requests.Session() as session:
        made = BedrockProvider(CLAUDE, timeout=(3.05, 27), session=session, api_key=KEY)
        assert made.timeout == (3.05, 27) and made.session is session


def test_a_streamed_call_answered_with_an_error_status_is_typed_and_its_body_read_bounded(provider, stream_server):
    huge = bw.json_body({"message": "Too many requests " + "x" * 500_000})
    stream_server.add_response([huge], status=429, headers={"x-amzn-ErrorType": "ThrottlingException",
                                                              "Retry-After": "3"})
    with pytest.raises(RateLimitError) as caught:
        list(provider.chat_stream(_ask()))
    assert caught.value.retry_after == 3.0
    assert "ThrottlingException" in str(caught.value)
    assert len(str(caught.value)) < 2500


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_structured_output_in_native_and_tool_mode(aws, stream_server, mode):
    from agcore_sync import AgentSession, CycleConfig

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    if mode == "native":
        _answer(stream_server, [{"text": '{"city": "Paris"}'}])
    else:
        _answer(stream_server, [{"toolUse": {"toolUseId": "tooluse_o", "name": "final_result",
                                             "input": {"city": "Paris"}}}], "tool_use")
    from contextlib import closing

    with closing(BedrockProvider(CLAUDE, base_url=stream_server.url)) as provider:
        session = AgentSession(provider, CycleConfig(model=None, retry=None, output_mode=mode))
        response = session.submit_turn("Capital of France?", output=schema)
    assert response.output == {"city": "Paris"}
    body = stream_server.requests[0].json
    if mode == "native":
        assert json.loads(body["outputConfig"]["textFormat"]["structure"]["jsonSchema"]["schema"]) == schema
    else:
        assert "outputConfig" not in body
        assert body["toolConfig"]["toolChoice"] == {"tool": {"name": "final_result"}}
