"""The console printer (cli/console.py) on its own: what a reader sees for each event, the spinner, run_turn.

Ctrl-C during a turn is tested end to end on a pseudo-terminal in test_chat.py and test_demo.py; the
autouse leak check proves run_turn's ``agcore-cli-turn-<n>`` thread has ended after each test here.
"""

from __future__ import annotations

import io
import json
import re

import pytest

from agcore_sync.agent.session import AgentSession
from agcore_sync.cli.console import EventPrinter, TurnOutcome, format_duration, one_line, run_turn
from agcore_sync.cli.interrupt import TurnInterrupt
from agcore_sync.llm.errors import ServerError
from agcore_sync.llm.events import Error, MessageStart, TextDelta, ToolExecutionCompleted, ToolExecutionStarted
from agcore_sync.llm.mock import MockProvider
from agcore_sync.loop.cycle import CycleConfig


def printer(spinner=False):
    out = io.StringIO()
    return EventPrinter(out, spinner=spinner), out


def started(name="add", call_id="c1", arguments='{"a": 1}'):
    return ToolExecutionStarted(name, call_id, arguments)


def completed(name="add", call_id="c1", summary="2", is_error=False, duration=0.0123):
    return ToolExecutionCompleted(name, call_id, summary, is_error, duration)


def test_text_is_written_as_it_streams_after_one_assistant_prefix():
    p, out = printer()
    for event in [MessageStart("r1", "m"), TextDelta("Hel"), TextDelta(""), TextDelta("lo")]:
        p.show(event)
    p.finish()
    assert out.getvalue() == "assistant> Hello\n"


def test_a_tool_round_between_two_answers_gets_its_own_lines_and_a_new_prefix_after():
    p, out = printer()
    for event in [MessageStart("r1", "m"), TextDelta("Let me add."), started(), completed(),
                  MessageStart("r2", "m"), TextDelta("It is 2.")]:
        p.show(event)
    p.finish()
    assert out.getvalue() == ("assistant> Let me add.\n"
                              "  [tool] add {\"a\": 1}\n"
                              "  [done] add -> 2 (12 ms)\n"
                              "assistant> It is 2.\n")


def test_tool_lines_are_one_line_each_and_long_arguments_are_cut():
    p, out = printer()
    long_arguments = json.dumps({"text": "x" * 300})
    p.show(started(arguments=long_arguments))
    p.show(completed(summary="line one\nline two", is_error=True, duration=1.5))
    tool_line, result_line = out.getvalue().splitlines()
    assert tool_line == "  [tool] add " + long_arguments[:200] + "..."
    assert result_line == "  [error] add -> line one line two (1.50 s)"


def test_an_error_event_is_remembered_not_written_and_reset_forgets_it():
    p, out = printer()
    cause = ServerError("down", status_code=503)
    p.show(Error("upstream\ndown", cause))
    assert (p.error, p.exception) == ("upstream down", cause)
    assert out.getvalue() == ""
    p.reset()
    assert (p.error, p.exception) == (None, None)


def test_the_spinner_shows_the_oldest_running_tool_and_is_wiped_before_the_next_line():
    p, out = printer(spinner=True)
    p.show(started("slow", "c1"))
    p.show(started("fast", "c2"))
    before = len(out.getvalue())
    p.tick()
    drawn = out.getvalue()[before:]
    assert drawn.startswith("\r  [|] slow (+1 more) running ") and drawn.endswith(" s")
    p.show(completed("slow", "c1"))
    after_completion = out.getvalue()[before + len(drawn):]
    width = len(drawn) - 1  # without the leading "\r"
    assert after_completion.startswith("\r" + " " * width + "\r  [done] slow -> 2")


def test_no_spinner_without_the_option_or_without_a_running_tool():
    p, out = printer(spinner=False)
    p.show(started())
    before = out.getvalue()
    p.tick()
    assert out.getvalue() == before
    q, out_q = printer(spinner=True)
    q.tick()
    assert out_q.getvalue() == ""


def test_a_note_starts_its_own_line():
    p, out = printer()
    p.show(TextDelta("partial answer"))
    p.note("(cancelled)")
    assert out.getvalue() == "assistant> partial answer\n(cancelled)\n"


@pytest.mark.parametrize("seconds, text", [(0.0, "0 ms"), (0.0124, "12 ms"), (0.9994, "999 ms"), (1.0, "1.00 s"),
                                           (61.256, "61.26 s")])
def test_format_duration(seconds, text):
    assert format_duration(seconds) == text


def test_one_line_collapses_every_whitespace_run():
    assert one_line("a\n\n b\tc  ") == "a b c"
    assert one_line(42) == "42"


# -- run_turn ---------------------------------------------------------------------------------------


def test_run_turn_prints_a_whole_turn_on_its_own_thread_and_reports_it_completed(registry):
    provider = MockProvider([MockProvider.tool_calls(("c1", "add", {"a": 17, "b": 23})), MockProvider.text("40")])
    p, out = printer()
    interrupt = TurnInterrupt()
    first_event = interrupt.current()
    session = AgentSession(provider, CycleConfig(), registry)
    outcome = run_turn(session, "add 17 and 23", p, interrupt)
    assert outcome is TurnOutcome.COMPLETED
    assert re.fullmatch(r'  \[tool\] add \{"a": 17, "b": 23\}\n'
                        r"  \[done\] add -> 40 \(\d+ ms\)\n"
                        r"assistant> 40\n", out.getvalue()), out.getvalue()
    assert session.turn_index == 1
    assert interrupt.current() is not first_event  # armed anew for the turn
    assert not interrupt.current().is_set()  # and not fired: nothing was cancelled


def test_run_turn_reports_a_failed_turn_with_the_error_in_one_line():
    provider = MockProvider([ServerError("the upstream\nserver is down", status_code=503)])
    p, out = printer()
    session = AgentSession(provider, CycleConfig(retry=None))
    assert run_turn(session, "hi", p) is TurnOutcome.FAILED
    assert "the upstream server is down" in p.error
    assert isinstance(p.exception, ServerError)
    assert session.turn_index == 1  # a failed turn still ends
