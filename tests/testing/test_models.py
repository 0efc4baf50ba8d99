"""TestModel and FunctionModel: answers from the request alone, streamed as real providers stream."""

from __future__ import annotations

import dataclasses
import random
from typing import List, Literal, Optional

import jsonschema
import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.errors import LlmError
from agcore_sync.llm.events import MessageComplete, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, StopReason, ToolChoice, ToolDef
from agcore_sync.loop.config import CycleConfig
from agcore_sync.testing import FunctionModel, TestModel
from agcore_sync.testing._schema_values import SchemaValueError, value_for
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry


@dataclasses.dataclass
class Address:
    street: str
    city: str
    zip_code: Optional[str] = None


@dataclasses.dataclass
class Invoice:
    number: int
    lines: List[str]
    status: Literal["draft", "sent", "paid"]
    billed_to: Address


def tools_called(calls: List[tuple]):
    @tool
    def book_room(guests: int, nights: int, breakfast: bool, kind: Literal["single", "double"]) -> str:
        """Book a hotel room."""
        calls.append(("book_room", guests, nights, breakfast, kind))
        return "booked"

    @tool
    def send_invoice(invoice: Invoice, copies: List[str]) -> str:
        """Send an invoice."""
        calls.append(("send_invoice", invoice, copies))
        return "sent"

    @tool
    def ping() -> str:
        """Ping."""
        calls.append(("ping",))
        return "pong"

    return [book_room, send_invoice, ping]


def test_test_model_calls_every_tool_once_with_schema_valid_arguments_then_answers():
    calls: List[tuple] = []
    with ToolRegistry() as registry:
        registry.register_all(tools_called(calls))
        schemas = {d.name: d.parameters for d in registry.definitions()}
        session = AgentSession(TestModel(), registry=registry)
        events = list(session.submit_turn_stream("go"))

    assert sorted(call[0] for call in calls) == ["book_room", "ping", "send_invoice"]
    started = [e for e in events if isinstance(e, ToolExecutionStarted)]
    for event in started:
        jsonschema.validate(event.parsed_arguments, schemas[event.tool_name])
    assert isinstance(events[-1], MessageComplete) and events[-1].full_response.message.text == "done"
    assert [m.role.value for m in session.messages()] == ["user", "assistant", "tool", "tool", "tool", "assistant"]


def test_test_model_arguments_are_the_same_for_the_same_seed_and_change_with_it():
    def arguments(seed: int):
        calls: List[tuple] = []
        with ToolRegistry() as registry:
            registry.register_all(tools_called(calls))
            AgentSession(TestModel(seed=seed), registry=registry).submit_turn("go")
        return sorted(calls, key=lambda call: call[0])

    assert arguments(0) == arguments(0)
    assert arguments(1) == arguments(1)
    assert arguments(0) != arguments(1)


def test_call_tools_chooses_which_tools_run_and_none_answers_at_once():
    calls: List[tuple] = []
    with ToolRegistry() as registry:
        registry.register_all(tools_called(calls))
        AgentSession(TestModel(call_tools=["ping"], text="pinged"), registry=registry).submit_turn("go")
        assert calls == [("ping",)]
        response = AgentSession(TestModel(call_tools="none"), registry=registry).submit_turn("go")
        assert calls == [("ping",)] and response.message.text == "done"
    with pytest.raises(ValueError, match="call_tools"):
        TestModel(call_tools="some")


def test_a_forced_tool_choice_calls_only_that_tool_and_none_calls_nothing():
    tools = (ToolDef("a", "A."), ToolDef("b", "B."))
    forced = TestModel().chat(MessageRequest(None, [Message.user("x")], tools=tools, tool_choice=ToolChoice.tool("b")))
    assert [call.name for call in forced.message.tool_uses] == ["b"]
    nothing = TestModel().chat(MessageRequest(None, [Message.user("x")], tools=tools, tool_choice="none"))
    assert nothing.message.text == "done" and nothing.stop_reason is StopReason.STOP


@pytest.mark.parametrize("mode", ["native", "tool"])
def test_structured_output_is_a_schema_valid_object(mode):
    calls: List[tuple] = []
    with ToolRegistry() as registry:
        registry.register_all(tools_called(calls))
        session = AgentSession(TestModel(), CycleConfig(output_mode=mode), registry=registry)
        response = session.submit_turn("make an invoice", output=Invoice)
    assert isinstance(response.output, Invoice) and response.output.status in ("draft", "sent", "paid")
    assert isinstance(response.output.billed_to, Address)
    assert sorted(call[0] for call in calls) == ["book_room", "ping", "send_invoice"]  # the tools first


def test_both_stream_the_event_sequence_mock_provider_streams_for_the_same_response():
    request = MessageRequest(None, [Message.user("hi")], tools=(ToolDef("a", "A."), ToolDef("b", "B.")))
    for provider in (TestModel(), TestModel(call_tools="none"), FunctionModel(lambda messages, request: "hello there")):
        response = provider.chat(request)
        streamed = list(provider.chat_stream(request))
        assert streamed == list(MockProvider([response]).chat_stream(request))
        assert streamed[-1] == MessageComplete(response)


def test_function_model_answers_with_what_its_function_returns():
    seen = []

    def answer(messages, request):
        seen.append((messages, request))
        if len(messages) > 1:
            return MessageResponse("r-2", "custom", Message.assistant("second"), StopReason.STOP)
        return f"you said {messages[-1].text!r}"

    session = AgentSession(FunctionModel(answer))
    assert session.submit_turn("hello").message.text == "you said 'hello'"
    assert session.submit_turn("again").model == "custom"
    assert seen[0][0] == seen[0][1].messages and seen[0][0][-1].text == "hello"


def test_function_model_refuses_a_function_that_returns_something_else_and_passes_its_errors_on():
    with pytest.raises(TypeError, match="must return a MessageResponse or a str"):
        FunctionModel(lambda messages, request: 42).chat(MessageRequest(None, [Message.user("x")]))
    with pytest.raises(TypeError, match="callable"):
        FunctionModel("not a function")
    stream = FunctionModel(lambda m, r: (_ for _ in ()).throw(LlmError("down"))).chat_stream(
        MessageRequest(None, [Message.user("x")]))
    with pytest.raises(LlmError, match="down"):  # raised by the iterator, as a real stream raises
        next(stream)


SCHEMAS = [
    {"type": "object", "properties": {"a": {"type": "integer", "minimum": 5, "maximum": 7}}, "required": ["a"]},
    {"type": "number", "exclusiveMinimum": 0, "exclusiveMaximum": 1},
    {"type": "integer", "multipleOf": 7, "minimum": 10},
    {"type": "string", "minLength": 12, "maxLength": 12},
    {"type": "string", "format": "date-time"},
    {"type": "string", "format": "email"},
    {"type": "string", "pattern": "^[a-z]+$"},
    {"enum": ["x", 3, None]},
    {"const": {"k": 1}},
    {"type": ["string", "null"]},
    {"anyOf": [{"type": "integer"}, {"type": "string", "maxLength": 2}]},
    {"oneOf": [{"type": "integer", "maximum": -1}, {"type": "integer", "minimum": 1}]},
    {"allOf": [{"type": "object", "properties": {"a": {"type": "string"}}, "required": ["a"]},
               {"properties": {"b": {"type": "boolean"}}, "required": ["b"]}]},
    {"type": "array", "items": {"type": "integer"}, "minItems": 3, "maxItems": 3, "uniqueItems": True},
    {"type": "array", "prefixItems": [{"type": "string"}, {"type": "boolean"}]},
    {"$defs": {"node": {"type": "object", "properties": {"next": {"$ref": "#/$defs/node"}, "v": {"type": "integer"}},
                        "required": ["v"]}}, "$ref": "#/$defs/node"},
    {"type": "object", "properties": {"x": {"type": "string"}}, "minProperties": 1, "additionalProperties": False},
    {"type": "object", "additionalProperties": {"type": "integer"}, "required": ["free"]},
    {},
]


@pytest.mark.parametrize("schema", SCHEMAS, ids=[str(i) for i in range(len(SCHEMAS))])
def test_generated_values_are_valid_against_their_schema_for_many_seeds(schema):
    for seed in range(30):
        jsonschema.validate(value_for(schema, random.Random(seed)), schema)


def test_a_schema_no_value_can_satisfy_is_a_typed_error_of_the_model():
    impossible = {"type": "string", "pattern": "^[0-9]{4}$"}
    with pytest.raises(SchemaValueError, match="no value made in"):
        value_for(impossible, random.Random(0))
    with pytest.raises(SchemaValueError, match="not a valid JSON Schema"):
        value_for({"type": "strin"}, random.Random(0))
    request = MessageRequest(None, [Message.user("x")], tools=(ToolDef("pin", "A PIN.", {
        "type": "object", "properties": {"pin": impossible}, "required": ["pin"]}),))
    with pytest.raises(LlmError, match="TestModel cannot make a value for 'pin'.*FunctionModel"):
        TestModel().chat(request)
