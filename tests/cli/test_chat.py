"""``agcore-sync chat`` end to end: a child process on a pseudo-terminal or pipes.

The model is either the built-in demo model or a real local OpenAI-compatible
HTTP server (``tests.support.stream_server``) streaming Chat Completions SSE
shaped as OpenAI documents it.
"""

from __future__ import annotations

import contextlib
import json

import pytest

from agcore_sync.llm.cost import find_pricing
from agcore_sync.llm.types import Usage
from tests.cli.helpers import Child
from tests.support.wire import OPENAI_WIRE_MODEL as WIRE_MODEL
from tests.support.wire import openai_text_stream as text_response
from tests.support.wire import openai_tool_call_stream as tool_call_response

PROMPT = "you> "


@pytest.fixture
def children():
    """Start CLI children; kill and reap any still running after the test."""
    started = []

    def start(args, *, use_pty, cwd=None):
        child = Child(args, use_pty=use_pty, cwd=cwd)
        started.append(child)
        return child

    yield start
    for child in started:
        child.close()


def test_a_chat_on_a_local_server_survives_ctrl_c_during_a_tool_and_keeps_cost_and_history_across_save_and_load(
        stream_server, children, tmp_path):
    # Turn 1: the model asks for a slow tool; the user presses Ctrl-C while it runs.
    stream_server.add_response(tool_call_response("chatcmpl-1", [("call_s", "sleep_ms", {"ms": 20000})],
                                                  usage=(50, 10)))
    # Turn 2: a tool call, then the answer built on its result.
    stream_server.add_response(tool_call_response("chatcmpl-2", [("call_m", "multiply", {"a": 6, "b": 7})],
                                                  usage=(60, 12)))
    stream_server.add_response(text_response("chatcmpl-3", ["6 times 7 ", "is 42."], usage=(80, 9)))
    # Turn 3, after /save and /load: the restored history is sent.
    stream_server.add_response(text_response("chatcmpl-4", ["Still here."], usage=(100, 3)))
    saved = tmp_path / "session.json"

    chat = children(["chat", "--provider", "openai", "--model", "gpt-4o-mini",
                     "--base-url", f"{stream_server.url}/v1"], use_pty=True, cwd=str(tmp_path))
    chat.expect("tools: add, multiply, sleep_ms, utc_now, word_count")
    chat.expect(PROMPT)

    chat.send_line("please wait a while")
    chat.expect('[tool] sleep_ms {"ms": 20000}')
    chat.interrupt()
    cancelled = chat.expect("[cancelled] the turn was stopped")
    assert "[done] sleep_ms" not in cancelled
    chat.expect(PROMPT)
    assert len(stream_server.requests) == 1  # nothing was sent after the cancel

    chat.send_line("what is 6 times 7?")
    chat.expect('[tool] multiply {"a": 6, "b": 7}')
    chat.expect("[done] multiply -> 42 (")
    chat.expect("assistant> 6 times 7 is 42.")
    chat.expect(PROMPT)

    chat.send_line("/cost")
    chat.expect("tokens: 190 in, 31 out, 221 total over 2 turn(s)")
    price = find_pricing(WIRE_MODEL, None).cost(Usage(190, 31))
    chat.expect(f"cost: ${price:.6f}")
    chat.expect(PROMPT)

    chat.send_line(f"/save {saved}")
    chat.expect(f"saved the session to {saved} (2 turn(s), 1 slot(s))")
    chat.send_line("/slots new side")
    chat.expect("created slot 'side'")
    chat.send_line("/slots use side")
    chat.expect("now on slot 'side' (0 messages)")
    chat.send_line("/load " + str(saved))
    chat.expect(f"loaded the session from {saved}: 2 turn(s), slot 'default' with 5 messages")
    chat.expect(PROMPT)
    chat.send_line("/slots")
    listing = chat.expect(PROMPT)
    assert "* default" in listing and "side" not in listing.replace("/slots", "")
    chat.send_line("/cost")
    chat.expect("tokens: 190 in, 31 out, 221 total over 2 turn(s)")

    chat.send_line("are you still there?")
    chat.expect("assistant> Still here.")
    chat.expect(PROMPT)
    chat.send_line("/exit")
    status, _ = chat.finish()

    assert status == 0
    assert "Traceback" not in chat.output
    assert stream_server.errors == []
    messages = [request.json["messages"] for request in stream_server.requests]
    # The cancelled turn kept its user message only; its incomplete tool round is gone.
    assert messages[1][0] == {"role": "user", "content": "please wait a while"}
    assert not any(m.get("tool_calls") and m["tool_calls"][0]["id"] == "call_s" for m in messages[1])
    # The turn after /load continues the saved history, not the 'side' slot.
    restored = messages[3]
    assert restored[:2] == [{"role": "user", "content": "please wait a while"},
                            {"role": "user", "content": "what is 6 times 7?"}]
    assert {"role": "tool", "tool_call_id": "call_m", "content": "42"} in restored
    assert restored[-1] == {"role": "user", "content": "are you still there?"}
    assert json.loads(saved.read_text())["format_version"] == 2


def test_ctrl_c_during_a_demo_tool_cancels_the_turn_and_the_next_turn_works(children):
    chat = children(["chat"], use_pty=True)
    chat.expect(PROMPT)

    chat.send_line("sleep 20000 ms please")
    chat.expect('[tool] sleep_ms {"ms": 20000}')
    chat.expect("running")  # the spinner with the elapsed time: a terminal shows one
    chat.interrupt()
    chat.expect("[cancelled]")
    chat.expect(PROMPT)
    chat.send_line("what is 2 + 3?")
    chat.expect("[done] add -> 5 (")
    chat.expect("assistant> 2 + 3 = 5.")
    chat.expect(PROMPT)
    chat.send_line("/cost")
    chat.expect("over 2 turn(s)")
    chat.expect("cost: $0.000000")
    chat.send_line("/exit")
    status, _ = chat.finish()

    assert status == 0
    assert "Traceback" not in chat.output


def test_ctrl_c_at_the_prompt_exits_cleanly_with_status_130(children):
    chat = children(["chat"], use_pty=True)
    chat.expect(PROMPT)

    chat.interrupt()
    # CPython's readline keeps a SIGINT that lands in the instant before it
    # starts waiting until a line is entered (a race in its select loop), so
    # press Enter too: the REPL must leave cleanly either way.
    with contextlib.suppress(OSError):
        chat.send_line("")
    status, _ = chat.finish()

    assert status == 130  # docs/cli.rst: 130 after Ctrl-C
    assert "Traceback" not in chat.output
    assert "error" not in chat.output


def test_piped_commands_list_tools_and_slots_and_report_mistakes_on_stderr(children, tmp_path):
    chat = children(["chat"], use_pty=False)
    for line in ["/tools", "/slots new notes", "/slots use notes", "/slots", "/slots use missing",
                 "/bogus", f"/load {tmp_path / 'absent.json'}", "count the words in \"one two three\"", "/help"]:
        chat.send_line(line)
    status, stderr = chat.finish()  # end of input leaves the REPL

    assert status == 0
    out = chat.output
    assert "  multiply: Multiply two numbers." in out
    assert "  sleep_ms: Wait, then say how long" in out
    assert "  default\n* notes\n" in out
    assert '[done] word_count -> 3 (' in out
    assert "/save FILE" in out  # the help text
    errors = stderr.splitlines()
    assert len(errors) == 3, stderr
    assert errors[0].startswith("error: /slots: SlotNotFoundError:") and "missing" in errors[0]
    assert errors[1] == "error: unknown command '/bogus'; /help lists the commands"
    assert errors[2].startswith("error: /load: FileNotFoundError:")
    assert "Traceback" not in out + stderr
