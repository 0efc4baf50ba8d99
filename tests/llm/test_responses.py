"""OpenAIResponsesProvider on the wire (``responses`` mocks; bodies shaped as the API documents them), and Azure."""

from __future__ import annotations

import json

import pytest
import responses

from agcore_sync import (
    AuthenticationError,
    ImageBlock,
    Message,
    MessageRequest,
    OpenAIProvider,
    OpenAIResponsesProvider,
    ServerError,
    StopReason,
    ToolChoice,
    ToolDef,
)
from tests.support.responses_wire import response_object

URL = "https://api.openai.com/v1/responses"
KEY = "sk-proj-SECRETSECRETSECRET"


@pytest.fixture
def mock():
    with responses.RequestsMock() as rsps:
        yield rsps


def _text_body(text: str = "Hi") -> dict:
    return response_object("resp_1", "completed", [
        {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
         "content": [{"type": "output_text", "text": text, "annotations": []}]}], (12, 3))


def _sent(mock) -> dict:
    return json.loads(mock.calls[-1].request.body)


def test_a_request_carries_instructions_items_tools_and_limits_as_the_api_names_them(mock):
    mock.post(URL, json=_text_body())
    provider = OpenAIResponsesProvider("gpt-4.1-mini", api_key=KEY)
    tools = [ToolDef("add", "Add", {"type": "object", "properties": {"a": {"type": "integer"}}})]
    image = ImageBlock(media_type="image/png", data="iVBORw0KGgo=")
    response = provider.chat(MessageRequest(None, [Message.user("Look", image)], system="Be brief.", tools=tools,
                                            tool_choice=ToolChoice.tool("add"), max_tokens=99, stop=("END",)))
    body = _sent(mock)
    assert body == {
        "model": "gpt-4.1-mini", "instructions": "Be brief.",
        "input": [{"role": "user", "content": [
            {"type": "input_text", "text": "Look"},
            {"type": "input_image", "image_url": "data:image/png;base64,iVBORw0KGgo=", "detail": "auto"}]}],
        "tools": [{"type": "function", "name": "add", "description": "Add",
                   "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}}, "strict": False}],
        "tool_choice": {"type": "function", "name": "add"}, "parallel_tool_calls": True,
        "max_output_tokens": 99, "store": False,
    }
    assert mock.calls[-1].request.headers["Authorization"] == f"Bearer {KEY}"
    assert response.message.text == "Hi" and response.stop_reason is StopReason.STOP
    assert response.usage.prompt_tokens == 12 and response.id == "resp_1"


@pytest.mark.parametrize("model, forced, sent", [
    ("o4-mini", None, True), ("gpt-5", None, True), ("openai/o3", None, True), ("gpt-5-chat-latest", None, False),
    ("gpt-4.1", None, False), ("my-azure-deployment", True, True), ("o3", False, False),
])
def test_encrypted_reasoning_is_asked_for_reasoning_models_only_unless_forced(mock, model, forced, sent):
    mock.post(URL, json=_text_body())
    OpenAIResponsesProvider(model, api_key=KEY, encrypted_reasoning=forced).chat(
        MessageRequest(None, [Message.user("hi")]))
    body = _sent(mock)
    assert ("include" in body) is sent
    if sent:
        assert body["include"] == ["reasoning.encrypted_content"]
    assert body["store"] is False


def test_an_incomplete_response_is_length_and_a_failed_one_a_typed_error_without_the_key(mock):
    incomplete = _text_body("cut")
    incomplete.update(status="incomplete", incomplete_details={"reason": "max_output_tokens"})
    failed = response_object("resp_2", "failed", [], None)
    failed["error"] = {"code": "server_error", "message": f"boom for {KEY}"}
    mock.post(URL, json=incomplete)
    mock.post(URL, json=failed)
    provider = OpenAIResponsesProvider("gpt-4.1", api_key=KEY)
    assert provider.chat(MessageRequest(None, [Message.user("hi")])).stop_reason is StopReason.LENGTH
    with pytest.raises(ServerError) as caught:
        provider.chat(MessageRequest(None, [Message.user("hi")]))
    assert KEY not in str(caught.value) and KEY not in repr(caught.value) and KEY not in json.dumps(caught.value.body)
    assert KEY not in repr(provider)


def test_a_401_is_an_authentication_error_that_never_shows_the_key(mock):
    mock.post(URL, status=401, json={"error": {"message": f"Incorrect API key provided: {KEY}",
                                               "type": "invalid_request_error", "code": "invalid_api_key"}})
    with pytest.raises(AuthenticationError) as caught:
        OpenAIResponsesProvider("gpt-4.1", api_key=KEY).chat(MessageRequest(None, [Message.user("hi")]))
    assert KEY not in str(caught.value)


AZURE = "https://my-resource.openai.azure.com/openai/v1"


def test_both_openai_providers_talk_to_azure_with_an_api_key_header_and_the_deployment_as_model(mock, monkeypatch):
    monkeypatch.setenv("AZURE_OPENAI_API_KEY", KEY)
    monkeypatch.setenv("AZURE_OPENAI_ENDPOINT", "https://my-resource.openai.azure.com/")
    mock.post(f"{AZURE}/responses", json=_text_body())
    mock.post(f"{AZURE}/chat/completions", json={
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o-mini",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": "Hi"}, "finish_reason": "stop"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4}})
    request = MessageRequest(None, [Message.user("hi")])
    assert OpenAIResponsesProvider("my-deployment", azure=True).chat(request).message.text == "Hi"
    assert OpenAIProvider("my-deployment", azure=True).chat(request).message.text == "Hi"
    for call in mock.calls:
        assert call.request.headers["api-key"] == KEY
        assert "Authorization" not in call.request.headers
        assert json.loads(call.request.body)["model"] == "my-deployment"


def test_azure_without_an_endpoint_is_a_value_error_naming_what_to_set():
    with pytest.raises(ValueError, match="AZURE_OPENAI_ENDPOINT"):
        OpenAIResponsesProvider("d", azure=True)


def test_a_bad_reasoning_summary_is_a_value_error():
    with pytest.raises(ValueError, match="reasoning_summary"):
        OpenAIResponsesProvider("o3", reasoning_summary="verbose")


def test_a_native_output_schema_on_the_request_is_sent_as_text_format(mock):
    import attrs

    from agcore_sync import OutputSchema, responses_text_format

    @attrs.frozen
    class WithOutput(MessageRequest):  # the output= field the loops put on requests (issue 9)
        output: object = None
        output_mode: str = "native"

    schema = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
    mock.post(URL, json=_text_body('{"city": "Oslo"}'))
    mock.post(URL, json=_text_body("x"))
    provider = OpenAIResponsesProvider("gpt-4.1", api_key=KEY)
    provider.chat(WithOutput(None, [Message.user("hi")], output=OutputSchema(schema, name="City")))
    assert _sent(mock)["text"] == {"format": responses_text_format(OutputSchema(schema, name="City"))}
    provider.chat(WithOutput(None, [Message.user("hi")], output=schema, output_mode="tool"))
    assert "text" not in _sent(mock)


CORPUS = __import__("pathlib").Path(__file__).parent / "responses_corpus"


def _stream_events(stream_server, steps):
    from contextlib import closing

    from agcore_sync import CostUpdate

    stream_server.add_response(steps)
    seen = []
    with closing(OpenAIResponsesProvider("gpt-5-mini", api_key=KEY, base_url=stream_server.url + "/v1")) as provider:
        with pytest.raises(Exception) as caught:
            for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
                seen.append(event)
    return caught.value, [e for e in seen if isinstance(e, CostUpdate)]


@pytest.mark.parametrize("name, error_type, retryable, billed", [
    ("12_failed.sse", ServerError, True, 12),
    ("13_error_midstream.sse", "RateLimitError", True, None),
])
def test_a_failed_response_or_an_error_event_raises_its_typed_error_after_the_usage_it_billed(
        stream_server, name, error_type, retryable, billed):
    import agcore_sync

    error, costs = _stream_events(stream_server, [(CORPUS / name).read_bytes()])
    expected = getattr(agcore_sync, error_type) if isinstance(error_type, str) else error_type
    assert isinstance(error, expected) and error.retryable is retryable
    assert [c.usage.total_tokens for c in costs] == ([billed] if billed else [])


def test_a_stream_cut_before_response_completed_is_a_connection_error(stream_server):
    from agcore_sync import LlmConnectionError

    data = (CORPUS / "01_text.sse").read_bytes()
    cut = data[:data.rindex(b"event: response.completed")]
    error, costs = _stream_events(stream_server, [cut])
    assert isinstance(error, LlmConnectionError) and error.retryable and costs == []


def test_assigning_a_session_a_provider_that_is_not_one_is_a_type_error():
    from agcore_sync import AgentSession, CycleConfig, MockProvider

    session = AgentSession(MockProvider([]), CycleConfig())
    with pytest.raises(TypeError, match="provider"):
        session.provider = "gpt-4o"
