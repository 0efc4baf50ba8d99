"""``agcore-sync demo --provider gemini|vertex``: keys from their variables, a real tool round on a local server."""

from __future__ import annotations

import os

import pytest

from agcore_sync.cli.demo import DEMO_QUESTION
from tests.cli.helpers import Child, run_cli
from tests.cli.test_demo import assert_one_error_line
from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage


def test_provider_gemini_without_a_key_names_both_variables_on_one_line():
    result = run_cli(["demo", "--provider", "gemini", "--model", "gemini-2.5-flash"])

    assert_one_error_line(result, "GOOGLE_API_KEY", "GEMINI_API_KEY")
    assert result.returncode == 2


def test_provider_vertex_without_a_project_names_google_cloud_project(monkeypatch):
    monkeypatch.delenv("GOOGLE_CLOUD_PROJECT", raising=False)
    result = run_cli(["demo", "--provider", "vertex", "--model", "gemini-2.5-flash"])

    assert_one_error_line(result, "GOOGLE_CLOUD_PROJECT")


@pytest.mark.parametrize("key", [None, "GEMINI_API_KEY"])
def test_the_demo_runs_a_tool_round_against_a_gemini_server(stream_server, tmp_path, monkeypatch, key):
    if key:
        monkeypatch.setenv(key, "test-gemini-key")
    calls = [{"functionCall": {"name": "multiply", "args": {"a": 17, "b": 23}}, "thoughtSignature": "c2ln"},
             {"functionCall": {"name": "word_count", "args": {"text": "the quick brown fox jumps over the lazy dog"}}}]
    stream_server.add_response([gemini_sse(gemini_chunk(calls, "STOP", usage=gemini_usage(120, 40)))])
    stream_server.add_response([gemini_sse(gemini_chunk([{"text": "17 times 23 "}]),
                                           gemini_chunk([{"text": "is 391; the sentence has 9 words."}], "STOP",
                                                        usage=gemini_usage(200, 15)))])
    child = Child(["demo", "--provider", "gemini", "--model", "gemini-2.5-flash", "--base-url", stream_server.url],
                  use_pty=False, cwd=str(tmp_path))
    try:
        child.expect('[tool] multiply {"a": 17, "b": 23}')
        child.expect("is 391; the sentence has 9 words.")
        status, stderr = child.finish()
    finally:
        child.close()

    assert status == 0, stderr
    assert f"gemini-2.5-flash via gemini at {stream_server.url}" in child.output
    first, second = (request.json for request in stream_server.requests)
    assert first["contents"] == [{"role": "user", "parts": [{"text": DEMO_QUESTION}]}]
    assert second["contents"][1]["parts"][0]["thoughtSignature"] == "c2ln"
    responses = [p["functionResponse"] for p in second["contents"][2]["parts"]]
    assert responses == [{"name": "multiply", "response": {"output": "391"}},
                         {"name": "word_count", "response": {"output": "9"}}]
    headers = stream_server.requests[0].headers
    assert headers.get("x-goog-api-key") == (os.environ.get(key) if key else None)
    assert "[usage] 320 tokens in, 55 out" in child.output
