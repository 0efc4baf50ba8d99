"""MessageRequest's request controls and MessageResponse.output as values: checks, to_dict / from_dict."""

from __future__ import annotations

import dataclasses
import json

import pytest

from agcore_sync.agent.compact import CompactConfig
from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.output import OutputSchema
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, StopReason
from agcore_sync.loop.cycle import CycleConfig


@dataclasses.dataclass
class Point:
    """A point."""

    x: int
    y: int


def test_a_request_with_every_control_round_trips_through_json():
    request = MessageRequest("m", [Message.user("q")], max_tokens=4096, output=OutputSchema.of(Point),
                             prompt_cache=True, thinking=2048, reasoning_effort="high",
                             extra_body={"metadata": {"user_id": "u"}})
    back = MessageRequest.from_dict(json.loads(json.dumps(request.to_dict())))
    assert back.output.json_schema == request.output.json_schema and back.output.name == "Point"
    assert (back.prompt_cache, back.thinking, back.reasoning_effort, back.extra_body) == \
        (True, 2048, "high", {"metadata": {"user_id": "u"}})


def test_a_request_without_controls_has_the_keys_it_always_had():
    assert set(MessageRequest(None, [Message.user("q")]).to_dict()) == {
        "model", "messages", "system", "tools", "tool_choice", "max_tokens", "temperature", "stop"}


@pytest.mark.parametrize("kwargs, error", [
    ({"thinking": "lots"}, ValueError), ({"thinking": True}, TypeError), ({"thinking": 1.5e3}, TypeError),
    ({"extra_body": [("a", 1)]}, TypeError), ({"output": {"type": "object"}}, TypeError),
])
def test_bad_controls_are_refused_when_the_request_is_built(kwargs, error):
    with pytest.raises(error):
        MessageRequest(None, [Message.user("q")], **kwargs)


@pytest.mark.parametrize("kwargs", [{"output_mode": "json"}, {"output_retries": -1}, {"output_retries": True},
                                    {"extra_body": "x"}])
def test_bad_output_settings_are_refused_by_cycle_config(kwargs):
    with pytest.raises((ValueError, TypeError)):
        CycleConfig(**kwargs)


def test_a_response_without_output_has_no_output_key_and_loads_as_none():
    response = MockProvider.text("hi")
    assert "output" not in response.to_dict()
    assert MessageResponse.from_dict(response.to_dict()).output is None


def test_output_dumps_instances_enums_and_sets_as_plain_json():
    response = MessageResponse("r", "m", Message.assistant("{}"), StopReason.STOP, output={"p": Point(1, 2),
                                                                                          "s": {3, 1}})
    assert response.to_dict()["output"] == {"p": {"x": 1, "y": 2}, "s": [1, 3]}


def test_compaction_runs_on_the_request_with_the_output_schema_and_slots_keep_working():
    provider = MockProvider([MockProvider.text("x" * 400), MockProvider.text('{"x": 1, "y": 2}')])
    compact = CompactConfig(max_context_tokens=2000, keep_last_messages=1)
    with AgentSession(provider, compact=compact) as session:
        session.submit_turn("first")
        response = session.submit_turn("where?", output=Point)
        assert response.output == Point(1, 2)
        assert provider.requests[1].output is not None
        session.create_slot("other")
        session.switch_slot("other")
        assert session.messages() == []
        session.switch_slot("default")
        assert session.messages()[-1].text == '{"x": 1, "y": 2}'
