"""``agcore-sync chat --agent``: an agent used as a tool, its stream drawn indented, on a pseudo-terminal."""

from __future__ import annotations

import re

import pytest

from tests.cli.helpers import Child
from tests.support.wire import openai_text_stream as text_response
from tests.support.wire import openai_tool_call_stream as tool_call_response

PROMPT = "you> "


@pytest.fixture
def children():
    """Start CLI children; kill and reap any still running after the test."""
    started = []

    def start(args, *, use_pty):
        child = Child(args, use_pty=use_pty)
        started.append(child)
        return child

    yield start
    for child in started:
        child.close()


def test_a_sub_agents_stream_and_tool_calls_are_drawn_indented_inside_its_call(stream_server, children):
    # The parent asks the research agent; the research agent calls a demo tool, then answers; the parent answers.
    stream_server.add_response(tool_call_response("chatcmpl-1", [("call_r", "research", {"input": "6 times 7?"})],
                                                  usage=(50, 10)))
    stream_server.add_response(tool_call_response("chatcmpl-2", [("call_m", "multiply", {"a": 6, "b": 7})],
                                                  usage=(30, 8)))
    stream_server.add_response(text_response("chatcmpl-3", ["It is ", "42."], usage=(40, 4)))
    stream_server.add_response(text_response("chatcmpl-4", ["The research agent says 42."], usage=(70, 8)))

    chat = children(["chat", "--provider", "openai", "--model", "gpt-4o-mini", "--base-url",
                     f"{stream_server.url}/v1", "--agent", "research=You research questions with the tools."],
                    use_pty=True)
    chat.expect("research")
    chat.expect(PROMPT)
    chat.send_line("ask research what 6 times 7 is")
    chat.expect('  [tool] research {"input": "6 times 7?"}')
    chat.expect('    [tool] multiply {"a": 6, "b": 7}')
    chat.expect("    [done] multiply -> 42 (")
    chat.expect("    research> It is 42.")
    chat.expect("\n  [done] research -> It is 42. (")
    chat.expect("\nassistant> The research agent says 42.")
    chat.expect(PROMPT)
    chat.send_line("/cost")
    chat.expect("tokens: 190 in, 30 out, 220 total over 1 turn(s)")
    chat.send_line("/exit")
    status, _ = chat.finish()

    assert status == 0
    assert "Traceback" not in chat.output
    # Each line starts where it should (after a newline, or after the spinner's line was cleared with \r).
    for line in ('    [tool] multiply {"a": 6, "b": 7}', "    research> It is 42.", "  [done] research -> It is 42."):
        assert re.search(r"[\r\n]" + re.escape(line), chat.output), line
    assert stream_server.errors == []
    sub_request = stream_server.requests[1].json
    assert sub_request["messages"][0] == {"role": "system", "content": "You research questions with the tools."}
    assert sub_request["messages"][1] == {"role": "user", "content": "6 times 7?"}
