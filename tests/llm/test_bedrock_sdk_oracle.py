"""boto3's ``bedrock-runtime`` client as the oracle for BedrockProvider's requests.

For each conversation, boto3's ``converse`` / ``converse_stream`` (called as
a boto3 user writes it: bytes for images, documents and redacted
reasoning) and our provider send to the same local capture server on
127.0.0.1 (dummy credentials); the two bodies must be equal as JSON, and
the paths equal. Our SigV4 signature is checked on the server side by
recomputing it with botocore's ``SigV4Auth`` over the request received.
"""

from __future__ import annotations

import base64
import json
from typing import Any, Dict, List, Tuple

import pytest

from agcore_sync import BedrockProvider, Message, MessageRequest, ToolDef
from agcore_sync.llm.media import DocumentBlock, ImageBlock
from agcore_sync.llm.output import OutputSchema
from agcore_sync.llm.types import Role, TextBlock, ThinkingBlock, ToolChoice, ToolResultBlock, ToolUseBlock
from tests.support import bedrock_wire as bw

boto3 = pytest.importorskip("boto3")
from botocore.auth import SigV4Auth  # noqa: E402
from botocore.awsrequest import AWSRequest  # noqa: E402
from botocore.config import Config  # noqa: E402
from botocore.credentials import Credentials  # noqa: E402

CLAUDE = "us.anthropic.claude-sonnet-4-5-20250929-v1:0"
LLAMA = "meta.llama3-3-70b-instruct-v1:0"
ARN = "arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.amazon.nova-pro-v1:0"

PNG = b"\x89PNG\r\n\x1a\n" + bytes(range(40))
PDF = b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"
SIGNATURE = "ErUBCkgIARABGAIiQM2sBf0Ixo4Yl6ZLZ1vWJ6zQh3hT0kq+Z8zV5G2W3cQ=="
REDACTED = b"\x00\x01opaque-redacted-reasoning\xff"

WEATHER = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}


@pytest.fixture
def aws(monkeypatch, tmp_path):
    bw.isolate_aws(monkeypatch, tmp_path)


@pytest.fixture
def client(aws, stream_server):
    client = boto3.client("bedrock-runtime", endpoint_url=stream_server.url, region_name=bw.REGION,
                          config=Config(retries={"max_attempts": 1}))
    yield client
    client.close()


@pytest.fixture
def provider(aws, stream_server):
    provider = BedrockProvider(base_url=stream_server.url)
    yield provider
    provider.close()


def _bedrock_thinking(text: str, signature: str) -> ThinkingBlock:
    from agcore_sync.llm._bedrock_wire import thinking_block

    return thinking_block(text, signature, None)


def _bedrock_redacted(data: bytes) -> ThinkingBlock:
    from agcore_sync.llm._bedrock_wire import thinking_block

    return thinking_block("", None, base64.b64encode(data).decode("ascii"))


def _tool_round(model: str) -> Tuple[MessageRequest, Dict[str, Any]]:
    ours = MessageRequest(model, [
        Message.user("Weather in Paris and Oslo?"),
        Message(Role.ASSISTANT, [TextBlock("Checking."),
                                 ToolUseBlock("tooluse_a1", "weather", {"city": "Paris"}),
                                 ToolUseBlock("tooluse_b2", "weather", {"city": "Oslo"})]),
        Message(Role.TOOL, [ToolResultBlock("tooluse_a1", "18 C")]),
        Message(Role.TOOL, [ToolResultBlock("tooluse_b2", "no such station", is_error=True)]),
    ], tools=[ToolDef("weather", "Current weather", WEATHER)], max_tokens=512)
    with_status = "llama" not in model

    def result(tool_id: str, text: str, status: str) -> Dict[str, Any]:
        block: Dict[str, Any] = {"toolUseId": tool_id, "content": [{"text": text}]}
        if with_status:
            block["status"] = status
        return {"toolResult": block}

    sdk = dict(modelId=model, messages=[
        {"role": "user", "content": [{"text": "Weather in Paris and Oslo?"}]},
        {"role": "assistant", "content": [
            {"text": "Checking."},
            {"toolUse": {"toolUseId": "tooluse_a1", "name": "weather", "input": {"city": "Paris"}}},
            {"toolUse": {"toolUseId": "tooluse_b2", "name": "weather", "input": {"city": "Oslo"}}}]},
        {"role": "user", "content": [result("tooluse_a1", "18 C", "success"),
                                     result("tooluse_b2", "no such station", "error")]},
    ], inferenceConfig={"maxTokens": 512}, toolConfig={
        "tools": [{"toolSpec": {"name": "weather", "description": "Current weather",
                                "inputSchema": {"json": WEATHER}}}],
        "toolChoice": {"auto": {}}})
    return ours, sdk


def _conversations() -> List[Tuple[str, MessageRequest, Dict[str, Any]]]:
    cases: List[Tuple[str, MessageRequest, Dict[str, Any]]] = []
    cases.append(("text, system, inference settings", MessageRequest(
        CLAUDE, [Message.user("Hello"), Message.assistant("Hi!"), Message.user("Tell me a joke")],
        system="Be brief.", max_tokens=300, temperature=0.2, stop=["\n\nHuman:"]),
        dict(modelId=CLAUDE, system=[{"text": "Be brief."}], messages=[
            {"role": "user", "content": [{"text": "Hello"}]},
            {"role": "assistant", "content": [{"text": "Hi!"}]},
            {"role": "user", "content": [{"text": "Tell me a joke"}]}],
            inferenceConfig={"maxTokens": 300, "temperature": 0.2, "stopSequences": ["\n\nHuman:"]})))
    ours, sdk = _tool_round(CLAUDE)
    cases.append(("tool uses and results with status (Claude)", ours, sdk))
    ours, sdk = _tool_round(LLAMA)
    cases.append(("tool results without status (Llama)", ours, sdk))
    ours, sdk = _tool_round(ARN)
    cases.append(("an inference-profile ARN (Nova): status sent", ours, sdk))
    cases.append(("reasoning with signature and redacted content, thinking budget", MessageRequest(
        CLAUDE, [Message.user("Think, then call"),
                 Message(Role.ASSISTANT, [_bedrock_thinking("Let me think.", SIGNATURE), _bedrock_redacted(REDACTED),
                                          ToolUseBlock("tooluse_x", "weather", {"city": "Rome"})]),
                 Message.tool_result("tooluse_x", "21 C")],
        tools=[ToolDef("weather", "Current weather", WEATHER)], thinking=2048),
        dict(modelId=CLAUDE, messages=[
            {"role": "user", "content": [{"text": "Think, then call"}]},
            {"role": "assistant", "content": [
                {"reasoningContent": {"reasoningText": {"text": "Let me think.", "signature": SIGNATURE}}},
                {"reasoningContent": {"redactedContent": REDACTED}},
                {"toolUse": {"toolUseId": "tooluse_x", "name": "weather", "input": {"city": "Rome"}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_x", "content": [{"text": "21 C"}],
                                                         "status": "success"}}]}],
            inferenceConfig={"maxTokens": 4096 + 2048},
            toolConfig={"tools": [{"toolSpec": {"name": "weather", "description": "Current weather",
                                                "inputSchema": {"json": WEATHER}}}], "toolChoice": {"auto": {}}},
            additionalModelRequestFields={"thinking": {"type": "enabled", "budget_tokens": 2048}})))
    cases.append(("images and documents", MessageRequest(
        CLAUDE, [Message.user("Compare", ImageBlock.from_bytes(PNG, "image/png"),
                              DocumentBlock.from_bytes(PDF, "application/pdf", title="Q3 report (draft)"),
                              DocumentBlock(media_type="text/plain", text="plain notes", title="notes"))]),
        dict(modelId=CLAUDE, messages=[{"role": "user", "content": [
            {"text": "Compare"},
            {"image": {"format": "png", "source": {"bytes": PNG}}},
            {"document": {"format": "pdf", "name": "Q3 report (draft)", "source": {"bytes": PDF}}},
            {"document": {"format": "txt", "name": "notes", "source": {"bytes": b"plain notes"}}}]}])))
    ours, sdk = _tool_round(CLAUDE)
    cached = MessageRequest(ours.model, ours.messages, system="You are a weather bot.", tools=ours.tools,
                            max_tokens=512, prompt_cache=True)
    sdk = json.loads(json.dumps(sdk))
    sdk["system"] = [{"text": "You are a weather bot."}, {"cachePoint": {"type": "default"}}]
    sdk["toolConfig"]["tools"].append({"cachePoint": {"type": "default"}})
    sdk["messages"][2]["content"].append({"cachePoint": {"type": "default"}})
    sdk["messages"][0]["content"].append({"cachePoint": {"type": "default"}})
    cases.append(("cache points with prompt_cache", cached, sdk))
    schema = {"type": "object", "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
              "required": ["city", "population"], "additionalProperties": False}
    cases.append(("native structured output", MessageRequest(
        CLAUDE, [Message.user("Largest city of France?")], output=OutputSchema(schema, name="City")),
        dict(modelId=CLAUDE, messages=[{"role": "user", "content": [{"text": "Largest city of France?"}]}],
             outputConfig={"textFormat": {"type": "json_schema", "structure": {"jsonSchema": {
                 "schema": json.dumps(schema), "name": "City"}}}})))
    cases.append(("a forced tool and unicode", MessageRequest(
        CLAUDE, [Message.user("Météo à Zürich? 天気 🌦")], tools=[ToolDef("weather", "", WEATHER)],
        tool_choice=ToolChoice.tool("weather")),
        dict(modelId=CLAUDE, messages=[{"role": "user", "content": [{"text": "Météo à Zürich? 天気 🌦"}]}],
             toolConfig={"tools": [{"toolSpec": {"name": "weather", "inputSchema": {"json": WEATHER}}}],
                         "toolChoice": {"tool": {"name": "weather"}}})))
    cases.append(("tool_choice required", MessageRequest(
        LLAMA, [Message.user("Go")], tools=[ToolDef("weather", "w", WEATHER)], tool_choice="required"),
        dict(modelId=LLAMA, messages=[{"role": "user", "content": [{"text": "Go"}]}],
             toolConfig={"tools": [{"toolSpec": {"name": "weather", "description": "w",
                                                 "inputSchema": {"json": WEATHER}}}],
                         "toolChoice": {"any": {}}})))
    cases.append(("a tool result holding text and an image", MessageRequest(
        CLAUDE, [Message.user("Screenshot?"),
                 Message(Role.ASSISTANT, [ToolUseBlock("tooluse_s", "screenshot", {})]),
                 Message.tool_result("tooluse_s", (TextBlock("here"), ImageBlock.from_bytes(PNG, "image/png")))],
        tools=[ToolDef("screenshot", "Take one")]),
        dict(modelId=CLAUDE, messages=[
            {"role": "user", "content": [{"text": "Screenshot?"}]},
            {"role": "assistant", "content": [{"toolUse": {"toolUseId": "tooluse_s", "name": "screenshot",
                                                           "input": {}}}]},
            {"role": "user", "content": [{"toolResult": {"toolUseId": "tooluse_s", "status": "success", "content": [
                {"text": "here"}, {"image": {"format": "png", "source": {"bytes": PNG}}}]}}]}],
            toolConfig={"tools": [{"toolSpec": {"name": "screenshot", "description": "Take one",
                                                "inputSchema": {"json": {"type": "object", "properties": {}}}}}],
                        "toolChoice": {"auto": {}}})))
    return cases


CASES = _conversations()


@pytest.mark.parametrize("stream", [False, True], ids=["converse", "converse_stream"])
@pytest.mark.parametrize("name, ours, sdk", CASES, ids=[c[0] for c in CASES])
def test_our_request_body_equals_what_boto3_sends(name, ours, sdk, stream, client, provider, stream_server):
    for _ in range(2):
        if stream:
            stream_server.add_response(bw.text_stream(["ok"]), headers=bw.STREAM_HEADERS)
        else:
            stream_server.add_response([bw.json_body(bw.converse_response([{"text": "ok"}]))],
                                       headers=bw.JSON_HEADERS)
    if stream:
        list(client.converse_stream(**sdk)["stream"])
        events = list(provider.chat_stream(ours))
        assert events[-1].full_response.message.text == "ok"
    else:
        client.converse(**sdk)
        assert provider.chat(ours).message.text == "ok"
    theirs, mine = stream_server.requests
    assert mine.path == theirs.path
    assert json.loads(mine.body) == json.loads(theirs.body)


def test_a_model_id_with_slashes_and_colons_is_one_quoted_path_segment(client, provider, stream_server):
    ours, sdk = _tool_round(ARN)
    for _ in range(2):
        stream_server.add_response([bw.json_body(bw.converse_response([{"text": "ok"}]))], headers=bw.JSON_HEADERS)
    client.converse(**sdk)
    provider.chat(ours)
    theirs, mine = stream_server.requests
    expected = "/model/arn%3Aaws%3Abedrock%3Aus-east-1%3A123456789012%3Ainference-profile%2Fus.amazon.nova-pro-v1%3A0"
    assert theirs.path == mine.path == expected + "/converse"


def _verify_sigv4(record: Any, url: str) -> bool:
    """Recompute the SigV4 signature of a received request with botocore; True if it matches."""
    authorization = record.headers["authorization"]
    assert authorization.startswith("AWS4-HMAC-SHA256 ")
    fields = dict(part.strip().split("=", 1) for part in authorization[len("AWS4-HMAC-SHA256 "):].split(","))
    signed = fields["SignedHeaders"].split(";")
    request = AWSRequest(method=record.method, url=url + record.path, data=record.body,
                         headers={name: record.headers[name] for name in signed})
    request.context["timestamp"] = record.headers["x-amz-date"]
    auth = SigV4Auth(Credentials(bw.ACCESS_KEY, bw.SECRET_KEY), "bedrock", bw.REGION)
    assert set(auth.headers_to_sign(request).keys()) == set(signed)
    expected = auth.signature(auth.string_to_sign(request, auth.canonical_request(request)), request)
    return expected == fields["Signature"]


@pytest.mark.parametrize("stream", [False, True])
def test_our_sigv4_signature_verifies_on_the_server_with_botocore(stream, provider, stream_server):
    ours, _ = _tool_round(ARN)
    if stream:
        stream_server.add_response(bw.text_stream(["ok"]), headers=bw.STREAM_HEADERS)
        list(provider.chat_stream(ours))
    else:
        stream_server.add_response([bw.json_body(bw.converse_response([{"text": "ok"}]))], headers=bw.JSON_HEADERS)
        provider.chat(ours)
    (record,) = stream_server.requests
    assert "Credential=AKIDEXAMPLE/" in record.headers["authorization"]
    assert "/us-east-1/bedrock/aws4_request" in record.headers["authorization"]
    assert _verify_sigv4(record, stream_server.url)
    # The check can fail: one byte of body changed breaks the signature.
    record.body = record.body.replace(b"Paris", b"Parks")
    assert not _verify_sigv4(record, stream_server.url)


def test_a_session_token_is_sent_and_signed(monkeypatch, provider, stream_server):
    monkeypatch.setenv("AWS_SESSION_TOKEN", "FQoGZXIvYXdzEXAMPLETOKEN")
    signed = BedrockProvider(base_url=stream_server.url)
    try:
        stream_server.add_response([bw.json_body(bw.converse_response([{"text": "ok"}]))], headers=bw.JSON_HEADERS)
        signed.chat(MessageRequest(CLAUDE, [Message.user("hi")]))
    finally:
        signed.close()
    (record,) = stream_server.requests
    assert record.headers["x-amz-security-token"] == "FQoGZXIvYXdzEXAMPLETOKEN"
    assert "x-amz-security-token" in record.headers["authorization"]


def test_many_threads_sharing_one_provider_each_send_a_valid_signature(provider, stream_server):
    import threading

    threads_count, rounds = 8, 3
    for _ in range(threads_count * rounds):
        stream_server.add_response([bw.json_body(bw.converse_response([{"text": "ok"}]))], headers=bw.JSON_HEADERS)
    failures: List[BaseException] = []
    start = threading.Barrier(threads_count)

    def client(n: int) -> None:
        try:
            start.wait(30)
            for r in range(rounds):
                assert provider.chat(MessageRequest(CLAUDE, [Message.user(f"thread {n} round {r}")])).message.text \
                    == "ok"
        except BaseException as exc:  # noqa: BLE001 - reported by the test thread
            failures.append(exc)

    workers = [threading.Thread(target=client, args=(n,), name=f"test-signer-{n}") for n in range(threads_count)]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(60)
    assert not [w.name for w in workers if w.is_alive()]
    assert not failures, failures[:2]
    assert len(stream_server.requests) == threads_count * rounds
    assert all(_verify_sigv4(record, stream_server.url) for record in stream_server.requests)
