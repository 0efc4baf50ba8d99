"""output= through every submit method: validation, retries, refusals, the three modes, streams and sessions."""

from __future__ import annotations

import dataclasses
import json
from typing import List

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.errors import OutputRefusedError, OutputValidationError
from agcore_sync.llm.events import Error, MessageComplete
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.output import OUTPUT_TOOL_NAME, OutputSchema
from agcore_sync.llm.types import Message, MessageResponse, Role, StopReason, ToolResultBlock
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.loop.tool_stream import ToolLoopStream
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry


@dataclasses.dataclass
class City:
    """A city.

    Attributes:
        name: its name.
        population: how many people live there.
    """

    name: str
    population: int


GOOD = '{"name": "Lyon", "population": 522250}'
BAD = '{"name": "Lyon", "population": "many"}'


@tool
def lookup(city: str) -> str:
    """Look a city up.

    Args:
        city: the city.
    """
    return f"{city}: 522250 people"


@pytest.fixture
def registry():
    with ToolRegistry() as reg:
        reg.register(lookup)
        yield reg


def cycle_with(*responses, **config) -> LlmCycle:
    return LlmCycle(MockProvider(list(responses)), CycleConfig(**config))


# -- submit ------------------------------------------------------------------------


def test_submit_returns_the_validated_instance_and_sends_the_schema_natively():
    cycle = cycle_with(MockProvider.text(GOOD))
    response = cycle.submit("Biggest city near the Alps?", output=City)
    assert response.output == City("Lyon", 522250)
    request = cycle.provider.requests[0]
    assert request.output == OutputSchema.of(City)
    assert request.tools == () and request.system is None
    assert [m.role for m in cycle.messages()] == [Role.USER, Role.ASSISTANT]


def test_submit_without_output_leaves_output_none_and_the_request_without_schema():
    cycle = cycle_with(MockProvider.text(GOOD))
    assert cycle.submit("hi").output is None
    assert cycle.provider.requests[0].output is None


def test_an_invalid_answer_goes_back_with_its_json_paths_then_the_valid_one_wins():
    cycle = cycle_with(MockProvider.text(BAD), MockProvider.text(GOOD))
    response = cycle.submit("city?", output=City)
    assert response.output == City("Lyon", 522250)
    retry = cycle.provider.requests[1].messages
    assert [m.role for m in retry] == [Role.USER, Role.ASSISTANT, Role.USER]
    assert retry[1].text == BAD
    assert "$.population: 'many' is not of type 'integer'" in retry[2].text
    # The history keeps the attempts: the model saw them.
    assert [m.text for m in cycle.messages()][1:] == [BAD, retry[2].text, GOOD]


def test_retries_exhausted_raise_output_validation_error_with_errors_and_raw_and_keep_history():
    cycle = cycle_with(MockProvider.text(BAD), MockProvider.text("not json"), output_retries=1)
    with pytest.raises(OutputValidationError) as info:
        cycle.submit("city?", output=City)
    assert info.value.raw == "not json"
    assert info.value.errors[0].startswith("$: the answer is not valid JSON")
    assert cycle.messages() == [], "a failed submit leaves the history as it was"
    assert cycle.provider.remaining == 0


def test_output_retries_zero_raises_at_the_first_invalid_answer():
    cycle = cycle_with(MockProvider.text(BAD), output_retries=0)
    with pytest.raises(OutputValidationError):
        cycle.submit("city?", output=City)
    assert len(cycle.provider.requests) == 1


def test_a_refusal_raises_output_refused_error_at_once_without_retry():
    refusal = MockProvider.text("I can't help with that.", stop_reason=StopReason.CONTENT_FILTER)
    cycle = cycle_with(refusal, MockProvider.text(GOOD), output_retries=3)
    with pytest.raises(OutputRefusedError) as info:
        cycle.submit("city?", output=City)
    assert info.value.refusal == "I can't help with that."
    assert cycle.provider.remaining == 1, "a refusal is never retried"


def test_a_schema_jsonschema_cannot_compile_raises_at_the_call_before_any_request():
    cycle = cycle_with()
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        cycle.submit("x", output={"type": "objekt"})
    with pytest.raises(ValueError, match="invalid JSON Schema"):
        cycle.submit_stream("x", output={"type": "objekt"})
    with pytest.raises(TypeError):
        cycle.submit_with_tools_stream("x", ToolRegistry(), output=42)
    assert cycle.provider.requests == []


def test_a_dict_schema_gives_the_decoded_json():
    schema = {"type": "array", "items": {"type": "integer"}}
    cycle = cycle_with(MockProvider.text("[1, 2, 3]"))
    assert cycle.submit("numbers", output=schema).output == [1, 2, 3]


# -- modes ---------------------------------------------------------------------------


def test_prompted_mode_puts_the_schema_in_the_system_prompt_and_parses_a_fenced_answer():
    cycle = LlmCycle(MockProvider([MockProvider.text(f"```json\n{GOOD}\n```")]),
                     CycleConfig(output_mode="prompted"), system_prompt="Be brief.")
    assert cycle.submit("city?", output=City).output == City("Lyon", 522250)
    request = cycle.provider.requests[0]
    assert request.output is None
    assert request.system.startswith("Be brief.\n\nAnswer with a single JSON value for City")
    assert '"population"' in request.system


def test_tool_mode_forces_the_output_tool_and_reads_its_arguments():
    answer = MockProvider.tool_calls(("call_1", OUTPUT_TOOL_NAME, json.loads(GOOD)))
    cycle = cycle_with(answer, output_mode="tool")
    response = cycle.submit("city?", output=City)
    assert response.output == City("Lyon", 522250)
    request = cycle.provider.requests[0]
    assert [t.name for t in request.tools] == [OUTPUT_TOOL_NAME]
    assert request.tool_choice.name == OUTPUT_TOOL_NAME and request.output is None
    # The call is answered, so the next turn's history is valid for the APIs.
    closing = cycle.messages()[-1].content[0]
    assert isinstance(closing, ToolResultBlock) and closing.tool_use_id == "call_1" and not closing.is_error


def test_tool_mode_sends_a_bad_call_back_as_an_error_result_of_that_call():
    bad = MockProvider.tool_calls(("call_1", OUTPUT_TOOL_NAME, {"name": "Lyon"}))
    good = MockProvider.tool_calls(("call_2", OUTPUT_TOOL_NAME, json.loads(GOOD)))
    cycle = cycle_with(bad, good, output_mode="tool")
    assert cycle.submit("city?", output=City).output == City("Lyon", 522250)
    feedback = cycle.provider.requests[1].messages[-1].content[0]
    assert feedback.tool_use_id == "call_1" and feedback.is_error
    assert "$: 'population' is a required property" in feedback.text


# -- tool loops ----------------------------------------------------------------------


def test_with_tools_the_model_calls_tools_first_then_answers_in_the_schema(registry):
    cycle = cycle_with(MockProvider.tool_calls(("lookup", {"city": "Lyon"})), MockProvider.text(GOOD))
    response = cycle.submit_with_tools("city?", registry, output=City)
    assert response.output == City("Lyon", 522250)
    assert all(r.output is not None for r in cycle.provider.requests)
    assert [t.name for t in cycle.provider.requests[0].tools] == ["lookup"]
    assert cycle.messages()[2].content[0].text == "Lyon: 522250 people"


def test_tool_mode_in_the_loop_offers_the_output_tool_beside_the_others_and_its_call_ends_the_loop(registry):
    cycle = cycle_with(
        MockProvider.tool_calls(("lookup", {"city": "Lyon"})),
        MockProvider.tool_calls(("c9", OUTPUT_TOOL_NAME, json.loads(GOOD)), ("c10", "lookup", {"city": "x"})),
        output_mode="tool",
    )
    response = cycle.submit_with_tools("city?", registry, output=City)
    assert response.output == City("Lyon", 522250)
    first = cycle.provider.requests[0]
    assert [t.name for t in first.tools] == ["lookup", OUTPUT_TOOL_NAME] and first.tool_choice == "required"
    results = {b.tool_use_id: b for b in cycle.messages()[-1].content}
    assert not results["c9"].is_error and results["c10"].is_error, "the other call was not run"


def test_output_retries_do_not_count_as_tool_rounds(registry):
    cycle = cycle_with(MockProvider.tool_calls(("lookup", {"city": "Lyon"})), MockProvider.text(BAD),
                       MockProvider.text(GOOD), max_tool_turns=2, output_retries=1)
    assert cycle.submit_with_tools("city?", registry, output=City).output == City("Lyon", 522250)


def test_the_tool_loop_raises_after_the_retries_and_keeps_the_complete_rounds(registry):
    cycle = cycle_with(MockProvider.tool_calls(("lookup", {"city": "Lyon"})), MockProvider.text(BAD),
                       MockProvider.text(BAD))
    with pytest.raises(OutputValidationError) as info:
        cycle.submit_with_tools("city?", registry, output=City)
    assert info.value.raw == BAD
    assert [m.role for m in cycle.messages()] == [Role.USER, Role.ASSISTANT, Role.TOOL, Role.ASSISTANT, Role.USER]


# -- streams -------------------------------------------------------------------------


def test_submit_stream_carries_the_output_on_the_last_message_complete_across_a_retry():
    cycle = cycle_with(MockProvider.text(BAD), MockProvider.text(GOOD))
    events = list(cycle.submit_stream("city?", output=City))
    completes = [e.full_response for e in events if isinstance(e, MessageComplete)]
    assert [c.output for c in completes] == [None, City("Lyon", 522250)]
    assert cycle.messages()[-1].text == GOOD


def test_submit_stream_raises_the_validation_error_from_the_iterator():
    cycle = cycle_with(MockProvider.text(BAD), output_retries=0)
    stream = cycle.submit_stream("city?", output=City)
    with pytest.raises(OutputValidationError):
        list(stream)
    assert cycle.messages() == []


def test_tool_loop_stream_final_response_has_the_output(registry):
    cycle = cycle_with(MockProvider.tool_calls(("lookup", {"city": "Lyon"})), MockProvider.text(BAD),
                       MockProvider.text(GOOD))
    with cycle.submit_with_tools_stream("city?", registry, output=City) as stream:
        events = list(stream)
    assert isinstance(stream, ToolLoopStream) and stream.error is None
    assert stream.final_response.output == City("Lyon", 522250)
    assert [e.full_response.output for e in events if isinstance(e, MessageComplete)][-1] == City("Lyon", 522250)
    assert not stream.worker.is_alive()


def test_a_refusal_in_a_worker_stream_is_the_final_error_event(registry):
    refusal = MockProvider.text("No.", stop_reason=StopReason.CONTENT_FILTER)
    cycle = cycle_with(refusal, MockProvider.text(GOOD))
    with cycle.submit_with_tools_stream("city?", registry, output=City) as stream:
        events = list(stream)
    assert isinstance(events[-1], Error) and isinstance(events[-1].error, OutputRefusedError)
    assert cycle.provider.remaining == 1
    assert not stream.worker.is_alive()


# -- sessions ------------------------------------------------------------------------


def test_session_turn_output_survives_to_dict_as_plain_json(registry):
    provider = MockProvider([MockProvider.tool_calls(("lookup", {"city": "Lyon"})), MockProvider.text(GOOD)])
    with AgentSession(provider, registry=registry) as session:
        response = session.submit_turn("city?", output=City)
        assert response.output == City("Lyon", 522250)
        data = json.loads(json.dumps(response.to_dict()))
        assert data["output"] == {"name": "Lyon", "population": 522250}
        assert MessageResponse.from_dict(data).output == {"name": "Lyon", "population": 522250}
        restored = AgentSession.from_dict(json.loads(json.dumps(session.to_dict())), provider=MockProvider())
        assert restored.messages() == session.messages()
        assert session.turn_index == 1


def test_session_stream_turn_with_output_and_the_next_turn_without(registry):
    provider = MockProvider([MockProvider.text(GOOD), MockProvider.text("plain")])
    with AgentSession(provider, registry=registry) as session:
        with session.submit_turn_stream("city?", output=City) as stream:
            list(stream)
        assert stream.final_response.output == City("Lyon", 522250)
        assert session.submit_turn("and now?").output is None
        assert provider.requests[1].output is None
        assert session.turn_index == 2


def test_session_rejects_a_bad_schema_before_the_turn_starts():
    with AgentSession(MockProvider()) as session:
        with pytest.raises(ValueError):
            session.submit_turn("x", output={"type": 3})
        assert session.turn_index == 0
        with pytest.raises(ValueError):
            session.submit_turn_stream("x", output={"type": 3})


def test_a_message_with_an_image_can_be_the_prompt():
    from agcore_sync.llm.media import ImageBlock

    image = ImageBlock.from_bytes(b"\x89PNG\r\n\x1a\n" + bytes(8), "image/png")
    cycle = cycle_with(MockProvider.text(GOOD))
    cycle.submit(Message.user("What city is this?", image), output=City)
    sent: List = list(cycle.provider.requests[0].messages[0].content)
    assert sent[1] == image


def test_the_loops_and_the_demo_name_the_output_tool_as_the_output_module_does():
    from agcore_sync.cli import demo
    from agcore_sync.loop import _output

    assert _output.OUTPUT_TOOL_NAME == demo._OUTPUT_TOOL_NAME == OUTPUT_TOOL_NAME


def test_importing_the_loops_and_providers_does_not_load_the_output_module():
    import subprocess
    import sys

    code = ("import sys, agcore_sync.agent.session, agcore_sync.llm.openai, agcore_sync.llm.anthropic; "
            "print('agcore_sync.llm.output' in sys.modules, 'jsonschema' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "False"]
