"""Structured output with tools, retries and sessions: the answer arrives validated, as your class."""

from __future__ import annotations

import dataclasses
import json
from typing import List

from agcore_sync import AgentSession, CycleConfig, LlmCycle, MessageComplete, MockProvider, ToolRegistry, tool


@dataclasses.dataclass
class Trip:
    """A trip plan.

    Attributes:
        city: where to go.
        days: how many days.
        packing: what to bring.
    """

    city: str
    days: int
    packing: List[str]


@tool
def forecast(city: str) -> str:
    """Return the weather forecast for a city.

    Args:
        city: the city.
    """
    return f"{city}: rain all week"


# A scripted model (swap in OpenAIProvider("gpt-4o-mini") or AnthropicProvider("claude-sonnet-4-5")):
# it calls the tool, then answers with an invalid object, then, told what was wrong, a valid one.
provider = MockProvider([
    MockProvider.tool_calls(("forecast", {"city": "Bergen"})),
    MockProvider.text('{"city": "Bergen", "days": "three", "packing": ["umbrella"]}'),
    MockProvider.text('{"city": "Bergen", "days": 3, "packing": ["umbrella", "boots"]}'),
])

with ToolRegistry() as registry:
    registry.register(forecast)
    cycle = LlmCycle(provider, CycleConfig(output_retries=1))
    response = cycle.submit_with_tools("Plan a short trip to Bergen.", registry, output=Trip)

trip = response.output
print(trip)  # Trip(city='Bergen', days=3, packing=['umbrella', 'boots'])
# The invalid answer went back to the model with its JSON path:
print(provider.requests[2].messages[-1].text.splitlines()[1])  # - $.days: 'three' is not of type 'integer'

# The same in a session, streamed, with the "tool" output mode (a forced output tool, for servers
# without native structured output); the value survives to_dict() as plain JSON.
provider = MockProvider([MockProvider.tool_calls(("final_result", {"city": "Oslo", "days": 2, "packing": []}))])
with AgentSession(provider, CycleConfig(output_mode="tool")) as session:
    with session.submit_turn_stream("Plan a weekend in Oslo.", output=Trip) as stream:
        for event in stream:
            if isinstance(event, MessageComplete):  # the answer's event carries the value too
                print(event.full_response.output)  # Trip(city='Oslo', days=2, packing=[])
    print(json.dumps(stream.final_response.to_dict()["output"]))  # {"city": "Oslo", "days": 2, "packing": []}
