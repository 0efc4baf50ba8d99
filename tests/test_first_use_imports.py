"""What a first use imports: the stream machinery, images and documents load only when used.

Each check runs in a fresh interpreter (this one has imported everything).
"""

from __future__ import annotations

import json
import subprocess
import sys

FIRST_USE = "from agcore_sync import AgentSession, OpenAIProvider, ToolRegistry, tool"

#: Modules that only a stream needs (or an image, a document): none loads with a first use.
STREAM_ONLY = [
    "agcore_sync._http.sse",
    "agcore_sync.llm._stream_translator",
    "agcore_sync.llm._openai_stream",
    "agcore_sync.llm._anthropic_stream",
    "agcore_sync.llm._responses_stream",
    "agcore_sync.loop.tool_stream",
    "agcore_sync.agent.turn_stream",
    "agcore_sync.llm.media",
]


def loaded_after(code: str) -> list:
    """Return the agcore_sync modules loaded after running ``code`` in a fresh interpreter."""
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(m for m in sys.modules if m.startswith('agcore_'))))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_a_first_use_loads_no_stream_module():
    loaded = loaded_after(FIRST_USE + "\nfrom agcore_sync import AnthropicProvider, OpenAIResponsesProvider")
    assert "agcore_sync.agent.session" in loaded and "agcore_sync.llm.openai" in loaded
    assert [name for name in STREAM_ONLY if name in loaded] == []


def test_the_first_stream_loads_them_and_streams():
    code = FIRST_USE + """
from agcore_sync import LlmCycle, MockProvider
events = list(LlmCycle(MockProvider([MockProvider.text("hi")])).submit_stream("hello"))
assert type(events[-1]).__name__ == "MessageComplete", events
"""
    assert "agcore_sync.llm.events" in loaded_after(code)


def test_turn_stream_is_still_importable_from_the_session_module():
    loaded = loaded_after("from agcore_sync.agent.session import AgentSession, TurnStream\n"
                          "assert TurnStream.__module__ == 'agcore_sync.agent.turn_stream'")
    assert "agcore_sync.agent.turn_stream" in loaded


def test_a_first_session_turn_with_a_tool_call_works_without_the_stream_modules():
    code = FIRST_USE + """
from agcore_sync import MockProvider
@tool
def add(a: int, b: int) -> int:
    '''Add two integers.'''
    return a + b
provider = MockProvider([MockProvider.tool_calls(("add", {"a": 1, "b": 2})), MockProvider.text("3")])
with AgentSession(provider) as session:
    session.registry.register(add)
    assert session.submit_turn("1 + 2?").message.text == "3"
"""
    loaded = loaded_after(code)
    assert [name for name in STREAM_ONLY if name in loaded] == []
