"""The official SDKs are the oracle: for a pydantic model our wire fragments are the bytes they send.

Each test lets an SDK (``openai``, ``anthropic``; test-only dependencies) send
a real request to a local server on 127.0.0.1, then finds our fragment,
serialised as the SDK serialises JSON (compact, UTF-8), inside the captured
body, and compares it with the SDK's parsed fragment key by key, in order.
"""

from __future__ import annotations

import datetime
import enum
import json
from typing import Dict, List, Literal, Optional, Union

import pytest

pydantic = pytest.importorskip("pydantic")
openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from agcore_sync.llm.output import (  # noqa: E402
    OutputSchema,
    anthropic_output_format,
    openai_response_format,
    responses_text_format,
)
from tests.support.stream_server import StreamServer  # noqa: E402

JSON_HEADERS = {"Content-Type": "application/json"}


@pytest.fixture
def server():
    """A local server on 127.0.0.1 recording what the SDK sends; stopped and joined after the test."""
    with StreamServer() as running:
        yield running


class Color(str, enum.Enum):
    RED = "red"
    GREEN = "green"


class Priority(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Address(pydantic.BaseModel):
    """Where someone lives."""

    street: str
    city: str = pydantic.Field(description="The city, in English.")
    zip_code: Optional[str] = None


class Person(pydantic.BaseModel):
    """A person, with nested models, enums, optionals and lists."""

    name: str = pydantic.Field(min_length=1, max_length=80)
    age: int = pydantic.Field(ge=0, le=150)
    favourite: Color
    priority: Priority = Priority.LOW
    home: Address
    previous: List[Address] = []
    nickname: Optional[str]
    tags: List[str] = pydantic.Field(default_factory=list, min_length=1, max_length=5)


class Node(pydantic.BaseModel):
    """A tree: the model refers to itself."""

    value: int
    children: List[Node] = []


class Forest(pydantic.BaseModel):
    trees: List[Node]
    biggest: Optional[Node] = None


class Mixed(pydantic.BaseModel):
    kind: Literal["a", "b"]
    when: datetime.datetime
    day: datetime.date
    scores: Dict[str, float]
    either: Union[int, str]
    ratio: float = 0.5
    flag: bool = False
    email: str = pydantic.Field(pattern=r"^[^@]+@[^@]+$")


MODELS = [Address, Person, Node, Forest, Mixed]


def _compact(value):
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def _assert_same(record, key_path, ours):
    sent = record.json
    for key in key_path:
        sent = sent[key]
    assert json.dumps(ours) == json.dumps(sent)  # same keys, same values, same order
    assert _compact(ours) in record.body  # and the very bytes the SDK wrote


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_response_format_is_what_openai_chat_completions_parse_sends(server, model):
    completion = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": None, "refusal": "I cannot."}}],
    }
    server.add_response([json.dumps(completion).encode()], headers=JSON_HEADERS)
    with openai.OpenAI(api_key="sk-test", base_url=server.url + "/v1", max_retries=0) as client:
        client.chat.completions.parse(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                      response_format=model)
    (record,) = server.requests
    assert record.path == "/v1/chat/completions"
    _assert_same(record, ["response_format"], openai_response_format(OutputSchema(model)))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_text_format_is_what_openai_responses_parse_sends(server, model):
    response = {
        "id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-4o", "status": "completed",
        "output": [], "parallel_tool_calls": True, "tool_choice": "auto", "tools": [],
    }
    server.add_response([json.dumps(response).encode()], headers=JSON_HEADERS)
    with openai.OpenAI(api_key="sk-test", base_url=server.url + "/v1", max_retries=0) as client:
        client.responses.parse(model="gpt-4o", input="hi", text_format=model)
    (record,) = server.requests
    assert record.path == "/v1/responses"
    _assert_same(record, ["text", "format"], responses_text_format(OutputSchema(model)))


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_output_format_is_what_anthropic_messages_parse_sends(server, model):
    message = {
        "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5", "content": [],
        "stop_reason": "refusal", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    server.add_response([json.dumps(message).encode()], headers=JSON_HEADERS)
    with anthropic.Anthropic(api_key="sk-test", base_url=server.url, max_retries=0) as client:
        client.messages.parse(model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}],
                              output_format=model)
    (record,) = server.requests
    assert record.path == "/v1/messages"
    _assert_same(record, ["output_config", "format"], anthropic_output_format(OutputSchema(model)))


def test_a_pydantic_dataclass_goes_out_as_openai_sends_it(server):
    @pydantic.dataclasses.dataclass
    class Point:
        x: int
        y: Optional[int] = None

    completion = {
        "id": "chatcmpl-1", "object": "chat.completion", "created": 1, "model": "gpt-4o",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": None, "refusal": "no"}}],
    }
    server.add_response([json.dumps(completion).encode()], headers=JSON_HEADERS)
    with openai.OpenAI(api_key="sk-test", base_url=server.url + "/v1", max_retries=0) as client:
        client.chat.completions.parse(model="gpt-4o", messages=[{"role": "user", "content": "hi"}],
                                      response_format=Point)
    _assert_same(server.requests[0], ["response_format"], openai_response_format(OutputSchema(Point)))
    assert OutputSchema(Point).parse('{"x": 1}') == Point(x=1)


@pytest.mark.parametrize("model", MODELS, ids=lambda m: m.__name__)
def test_the_sdk_transform_helpers_agree_too(model):
    # The SDKs' own helpers, called only here in the tests, as a second oracle without HTTP.
    from anthropic.lib._parse._transform import transform_schema
    from openai.lib._pydantic import to_strict_json_schema

    schema = OutputSchema(model)
    assert json.dumps(openai_response_format(schema)["json_schema"]["schema"]) == json.dumps(
        to_strict_json_schema(model))
    assert json.dumps(anthropic_output_format(schema)["schema"]) == json.dumps(
        transform_schema(model.model_json_schema()))
