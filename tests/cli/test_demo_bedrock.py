"""``python -m agcore_sync demo --provider bedrock``: credentials and region from the environment."""

from __future__ import annotations

from tests.cli.helpers import Child, run_cli
from tests.cli.test_demo import assert_one_error_line
from tests.support import bedrock_wire as bw

MODEL = "us.anthropic.claude-haiku-4-5-20251001-v1:0"
KEY = "ABSKZGVtby1iZWRyb2NrLWtleQ=="


def _calls() -> list:
    return [bw.message_start(),
            bw.tool_start(0, "tooluse_m", "multiply"), bw.tool_delta(0, '{"a": 17, "b": 23}'), bw.block_stop(0),
            bw.tool_start(1, "tooluse_w", "word_count"),
            bw.tool_delta(1, '{"text": "the quick brown fox jumps over the lazy dog"}'), bw.block_stop(1),
            bw.message_stop("tool_use"), bw.metadata(120, 40)]


def test_the_demo_runs_against_bedrock_with_the_key_and_region_from_the_environment(stream_server, tmp_path,
                                                                                    monkeypatch):
    monkeypatch.setenv("AWS_BEARER_TOKEN_BEDROCK", KEY)
    monkeypatch.setenv("AWS_REGION", "eu-west-1")
    stream_server.add_response(_calls(), headers=bw.STREAM_HEADERS)
    stream_server.add_response(bw.text_stream(["17 times 23 ", "is 391; the sentence has 9 words."], (200, 15)),
                               headers=bw.STREAM_HEADERS)
    child = Child(["demo", "--provider", "bedrock", "--model", MODEL, "--base-url", stream_server.url],
                  use_pty=False, cwd=str(tmp_path))
    try:
        child.expect('[tool] multiply {"a": 17, "b": 23}')
        child.expect("is 391; the sentence has 9 words.")
        status, stderr = child.finish()
    finally:
        child.close()
    assert status == 0, stderr
    assert f"{MODEL} via bedrock at {stream_server.url}" in child.output
    assert [r.path for r in stream_server.requests] == [
        "/model/us.anthropic.claude-haiku-4-5-20251001-v1%3A0/converse-stream"] * 2
    assert all(r.headers["authorization"] == f"Bearer {KEY}" for r in stream_server.requests)
    second = stream_server.requests[1].json
    results = [b["toolResult"] for b in second["messages"][2]["content"]]
    assert results == [{"toolUseId": "tooluse_m", "content": [{"text": "391"}], "status": "success"},
                       {"toolUseId": "tooluse_w", "content": [{"text": "9"}], "status": "success"}]
    assert "[usage] 320 tokens in, 55 out" in child.output
    assert KEY not in child.output


def test_bedrock_without_a_region_is_one_line_naming_aws_region():
    result = run_cli(["demo", "--provider", "bedrock", "--model", MODEL])

    assert_one_error_line(result, "--provider bedrock", "AWS_REGION")
    assert result.returncode == 2


def test_bedrock_without_a_model_is_one_line_on_stderr():
    result = run_cli(["demo", "--provider", "bedrock"])

    assert_one_error_line(result, "--model")
