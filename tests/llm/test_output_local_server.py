"""Structured output against a local OpenAI-compatible server that checks the schema (real sockets).

See ``tests/support/schema_server.py`` for why no real llama.cpp server runs
here and what the stand-in enforces.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
from typing import List, Optional

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.errors import ProviderError
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from tests.support.schema_server import SchemaServer


class Size(enum.Enum):
    SMALL = "small"
    LARGE = "large"


@dataclasses.dataclass
class Part:
    """A part."""

    label: str
    count: int


@dataclasses.dataclass
class Order:
    """An order."""

    size: Size
    parts: List[Part]
    note: Optional[str] = None


@pytest.fixture
def server():
    with SchemaServer() as s:
        yield s


def provider_for(server) -> contextlib.closing[OpenAIProvider]:
    return contextlib.closing(OpenAIProvider("local-model", api_key="", base_url=server.url))


@pytest.mark.parametrize("stream", [False, True])
def test_native_mode_the_server_accepts_the_strict_schema_and_its_answer_converts(server, stream):
    with provider_for(server) as provider:
        cycle = LlmCycle(provider, CycleConfig(retry=None))
        if stream:
            list(cycle.submit_stream("order?", output=Order))
            order = cycle.messages()[-1].text
            assert '"size": "small"' in order
        else:
            response = cycle.submit("order?", output=Order)
            # Strict mode makes every property required: the "grammar" fills the optional note too.
            assert response.output == Order(Size.SMALL, [Part("x", 1)], "x")
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is True


def test_a_server_without_response_format_refuses_native_and_the_tool_mode_works(server):
    with SchemaServer(support_response_format=False) as plain, provider_for(plain) as provider:
        with pytest.raises(ProviderError, match="response_format is not supported"):
            LlmCycle(provider, CycleConfig(retry=None)).submit("order?", output=Order)
        response = LlmCycle(provider, CycleConfig(retry=None, output_mode="tool")).submit("order?", output=Order)
        assert response.output == Order(Size.SMALL, [Part("x", 1)], None)
        assert plain.requests[-1]["tool_choice"] == {"type": "function", "function": {"name": "final_result"}}


def test_prompted_mode_reads_the_fenced_answer(server):
    with provider_for(server) as provider:
        response = LlmCycle(provider, CycleConfig(retry=None, output_mode="prompted")).submit("order?", output=Order)
    assert response.output.parts == [Part("x", 1)]
    assert "response_format" not in server.requests[0]


def test_a_session_stream_turn_gets_its_output_from_the_server(server):
    with provider_for(server) as provider, AgentSession(provider, CycleConfig(retry=None)) as session:
        with session.submit_turn_stream("order?", output=Order) as stream:
            list(stream)
        assert stream.error is None
        assert stream.final_response.output == Order(Size.SMALL, [Part("x", 1)], "x")


def test_a_non_strict_dict_schema_goes_with_strict_false_and_the_server_accepts_it(server):
    schema = {"type": "object", "properties": {"tags": {"type": "array", "items": {"type": "string"},
                                                         "minItems": 2}},
              "patternProperties": {"^x-": {"type": "string"}}}
    with provider_for(server) as provider:
        response = LlmCycle(provider, CycleConfig(retry=None)).submit("tags?", output=schema)
    assert response.output == {"tags": ["x", "x"]}
    assert server.requests[0]["response_format"]["json_schema"]["strict"] is False
