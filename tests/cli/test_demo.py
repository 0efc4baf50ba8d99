"""``python -m agcore_sync demo``, run as a user runs it: a real child process."""

from __future__ import annotations

import shlex
import shutil
import sys
import threading
from pathlib import Path

import pytest

from agcore_sync.cli.demo import DEMO_QUESTION
from tests.cli.helpers import Child, run_cli
from tests.support.leaks import closed_port
from tests.support.responses_wire import calls_stream, text_stream
from tests.support.wire import openai_text_stream as text_response
from tests.support.wire import openai_tool_call_stream as tool_call_response

RAW_SERVER = Path(__file__).resolve().parents[1] / "mcp_servers" / "raw_server.py"


def assert_one_error_line(result, *needles):
    assert result.returncode != 0
    assert "Traceback" not in result.stderr + result.stdout
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith("agcore-sync: error: ")
    for needle in needles:
        assert needle in lines[0]


def test_the_demo_runs_a_streaming_tool_using_turn_with_no_key_and_no_network():
    result = run_cli(["demo"])

    assert result.returncode == 0, result.stderr
    assert result.stderr == ""
    out = result.stdout
    assert "the built-in scripted demo model" in out
    assert f"you> {DEMO_QUESTION}" in out
    # Both calls are announced before either runs; they run in parallel, so they finish in either order.
    steps = [
        ["assistant> Let me use my tools for that."],
        ['  [tool] multiply {"a": 17, "b": 23}'],
        ['  [tool] word_count {"text": "the quick brown fox jumps over the lazy dog"}'],
        ["  [done] multiply -> 391 (", "  [done] word_count -> 9 ("],
        ['assistant> 17 x 23 = 391. "the quick brown fox jumps over the lazy dog" has 9 words.'],
        ["[usage] "],
    ]
    positions = [[out.find(line) for line in step] for step in steps]
    assert all(p >= 0 for step in positions for p in step), out
    for earlier, later in zip(positions, positions[1:]):
        assert max(earlier) < min(later), out
    assert " ms)" in out.split("[done] multiply -> 391 (")[1].splitlines()[0]
    assert "cost $0.000000" in out


def test_the_console_script_is_the_same_command():
    script = shutil.which("agcore-sync", path=str(Path(sys.executable).parent))
    if script is None:
        pytest.skip("the agcore-sync console script is not installed next to this Python")
    import subprocess

    result = subprocess.run([script, "demo"], capture_output=True, text=True, timeout=60, stdin=subprocess.DEVNULL)
    assert result.returncode == 0, result.stderr
    assert "[done] multiply -> 391" in result.stdout


def test_the_demo_sends_the_same_question_and_tools_to_an_openai_compatible_server_and_streams_the_answer(
        stream_server, tmp_path):
    release = threading.Event()
    stream_server.add_response(tool_call_response("chatcmpl-1", [
        ("call_m", "multiply", {"a": 17, "b": 23}),
        ("call_w", "word_count", {"text": "the quick brown fox jumps over the lazy dog"}),
    ], usage=(120, 40)))
    answer = text_response("chatcmpl-2", ["17 times 23 ", "is 391; the sentence has 9 words."], usage=(200, 15))
    # Hold the answer after its first piece until the test has seen that piece on the terminal.
    stream_server.add_response([*answer[:2], release, *answer[2:]])

    child = Child(["demo", "--provider", "openai", "--model", "gpt-4o-mini",
                   "--base-url", f"{stream_server.url}/v1"], use_pty=False, cwd=str(tmp_path))
    try:
        child.expect('[tool] multiply {"a": 17, "b": 23}')
        child.expect('[tool] word_count {"text": "the quick brown fox jumps over the lazy dog"}')
        results = child.expect("assistant> 17 times 23 ")  # printed while the rest is still held back
        assert "[done] multiply -> 391 (" in results
        assert "[done] word_count -> 9 (" in results
        release.set()
        child.expect("is 391; the sentence has 9 words.")
        status, stderr = child.finish()
    finally:
        release.set()
        child.close()

    assert status == 0, stderr
    assert stderr == ""
    assert f"gpt-4o-mini via openai at {stream_server.url}/v1" in child.output
    first, second = (request.json for request in stream_server.requests)
    assert [request.path for request in stream_server.requests] == ["/v1/chat/completions"] * 2
    assert first["stream"] is True
    assert first["messages"] == [{"role": "user", "content": DEMO_QUESTION}]
    assert sorted(tool["function"]["name"] for tool in first["tools"]) == [
        "add", "multiply", "sleep_ms", "utc_now", "word_count"]
    assert "authorization" not in stream_server.requests[0].headers  # no key, no header
    tool_messages = [m for m in second["messages"] if m["role"] == "tool"]
    assert tool_messages == [
        {"role": "tool", "tool_call_id": "call_m", "content": "391"},
        {"role": "tool", "tool_call_id": "call_w", "content": "9"},
    ]
    assert "[usage] 320 tokens in, 55 out" in child.output


@pytest.mark.parametrize("provider, variable", [("openai", "OPENAI_API_KEY"), ("anthropic", "ANTHROPIC_API_KEY")])
def test_a_real_provider_without_a_key_is_one_line_on_stderr(provider, variable):
    result = run_cli(["demo", "--provider", provider, "--model", "some-model"])

    assert_one_error_line(result, variable, "--base-url")
    assert result.returncode == 2
    assert result.stdout == ""


def test_the_demo_runs_against_a_responses_api_server_with_provider_openai_responses(stream_server, tmp_path):
    stream_server.add_response(calls_stream("resp_1", [
        ("call_m", "multiply", {"a": 17, "b": 23}),
        ("call_w", "word_count", {"text": "the quick brown fox jumps over the lazy dog"}),
    ], usage=(120, 40)))
    stream_server.add_response(text_stream("resp_2", ["17 times 23 ", "is 391; the sentence has 9 words."],
                                           usage=(200, 15)))

    child = Child(["demo", "--provider", "openai-responses", "--model", "gpt-4.1-mini",
                   "--base-url", f"{stream_server.url}/v1"], use_pty=False, cwd=str(tmp_path))
    try:
        child.expect('[tool] multiply {"a": 17, "b": 23}')
        child.expect("is 391; the sentence has 9 words.")
        status, stderr = child.finish()
    finally:
        child.close()

    assert status == 0, stderr
    assert f"gpt-4.1-mini via openai-responses at {stream_server.url}/v1" in child.output
    assert [request.path for request in stream_server.requests] == ["/v1/responses"] * 2
    first, second = (request.json for request in stream_server.requests)
    assert first["input"] == [{"role": "user", "content": DEMO_QUESTION}]
    assert first["store"] is False and "include" not in first  # not a reasoning model
    assert {"type": "function_call_output", "call_id": "call_m", "output": "391"} in second["input"]
    assert {"type": "function_call_output", "call_id": "call_w", "output": "9"} in second["input"]
    assert "[usage] 320 tokens in, 55 out" in child.output


def test_a_real_provider_without_a_model_is_one_line_on_stderr():
    result = run_cli(["demo", "--provider", "openai", "--base-url", "http://127.0.0.1:9/v1"])

    assert_one_error_line(result, "--model")


def test_an_unreachable_base_url_is_one_line_on_stderr_and_exit_1():
    url = f"http://127.0.0.1:{closed_port()}/v1"
    result = run_cli(["demo", "--provider", "openai", "--model", "gpt-4o-mini", "--base-url", url])

    assert_one_error_line(result, "LlmConnectionError", url)
    assert result.returncode == 1


def test_an_mcp_command_that_does_not_exist_is_one_line_on_stderr():
    result = run_cli(["demo", "--mcp", "agcore-no-such-mcp-server --stdio"])

    assert_one_error_line(result, "McpConnectionError", "agcore-no-such-mcp-server")
    assert result.returncode == 1
    assert "[tool]" not in result.stdout


def test_an_mcp_server_that_exits_at_start_is_one_line_on_stderr():
    command = f"{shlex.quote(sys.executable)} -c 'import sys; sys.stderr.write(\"no config\\n\"); sys.exit(3)'"
    result = run_cli(["demo", "--mcp", command])

    assert_one_error_line(result, "Mcp")
    assert result.returncode == 1


def test_an_mcp_value_that_is_not_a_command_line_is_one_line_on_stderr():
    result = run_cli(["demo", "--mcp", 'npx "unbalanced'])

    assert_one_error_line(result, "--mcp", "not a valid command line")


def test_an_mcp_servers_tools_are_added_and_called_over_stdio():
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(RAW_SERVER))}"
    result = run_cli(["demo", "--mcp", command, "--question", 'call echo {"text": "hello over stdio"}'])

    assert result.returncode == 0, result.stderr
    tools_line = next(line for line in result.stdout.splitlines() if line.startswith("tools: "))
    assert "echo" in tools_line.split(": ", 1)[1].split(", ")
    assert "multiply" in tools_line
    assert '  [tool] echo {"text": "hello over stdio"}' in result.stdout
    assert "  [done] echo -> hello over stdio (" in result.stdout
    assert "assistant> The tool echo answered: hello over stdio" in result.stdout


def test_a_second_mcp_server_with_the_same_tool_names_gets_a_prefix_and_both_stay_callable():
    command = f"{shlex.quote(sys.executable)} {shlex.quote(str(RAW_SERVER))}"
    result = run_cli(["demo", "--mcp", command, "--mcp", command,
                      "--question", 'call mcp2_echo {"text": "from the second server"}'])

    assert result.returncode == 0, result.stderr
    tools = next(line for line in result.stdout.splitlines() if line.startswith("tools: ")).split(": ", 1)[1]
    assert {"echo", "mcp2_echo"} <= set(tools.split(", "))
    assert "note: the tools of MCP server" in result.stdout and "mcp2_<name>" in result.stdout
    assert "  [done] mcp2_echo -> from the second server (" in result.stdout


def test_bad_option_values_are_refused_before_anything_runs():
    result = run_cli(["demo", "--retries", "-1"])

    assert result.returncode == 2
    assert "expected 0 or more" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize("command", [["-m", "agcore_sync"], ["-m", "agcore_sync.cli"]], ids=["python -m", "cli"])
def test_version_prints_the_package_version(command):
    import subprocess
    import sys

    import agcore_sync

    if command[-1] == "agcore_sync.cli":
        command = ["-c", "import sys; from agcore_sync.cli import main; sys.exit(main(sys.argv[1:]))"]
    done = subprocess.run([sys.executable, *command, "--version"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"agcore-sync {agcore_sync.__version__}"
