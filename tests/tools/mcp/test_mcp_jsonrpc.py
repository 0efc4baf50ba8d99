"""jsonrpc.py: message building, encoding and a parser that never raises."""

from __future__ import annotations

import json

import pytest

from agcore_sync.mcp.shared import jsonrpc


def test_a_request_has_the_version_id_method_and_params():
    assert jsonrpc.request(7, "tools/list", {"cursor": "c"}) == {
        "jsonrpc": "2.0", "id": 7, "method": "tools/list", "params": {"cursor": "c"},
    }


def test_a_request_without_params_leaves_the_member_out():
    assert "params" not in jsonrpc.request(1, "ping")
    assert "params" not in jsonrpc.notification("notifications/initialized")


def test_responses_carry_a_result_or_an_error_with_code_message_and_data():
    assert jsonrpc.result_response("a", {}) == {"jsonrpc": "2.0", "id": "a", "result": {}}
    assert jsonrpc.error_response(3, jsonrpc.METHOD_NOT_FOUND, "no", data={"m": "x"}) == {
        "jsonrpc": "2.0", "id": 3, "error": {"code": -32601, "message": "no", "data": {"m": "x"}},
    }
    assert "data" not in jsonrpc.error_response(3, jsonrpc.INTERNAL_ERROR, "boom")["error"]


def test_the_standard_error_codes_have_their_json_rpc_values():
    assert (jsonrpc.PARSE_ERROR, jsonrpc.INVALID_REQUEST, jsonrpc.METHOD_NOT_FOUND,
            jsonrpc.INVALID_PARAMS, jsonrpc.INTERNAL_ERROR) == (-32700, -32600, -32601, -32602, -32603)


def test_encode_writes_one_line_even_when_strings_hold_newlines():
    params = {"text": "a\nb\r\nc", "emoji": "é✓"}
    line = jsonrpc.encode(jsonrpc.request(1, "x", params))
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert json.loads(line) == {"jsonrpc": "2.0", "id": 1, "method": "x", "params": params}


def test_parse_line_round_trips_an_encoded_message():
    message = jsonrpc.request(5, "tools/call", {"name": "echo", "arguments": {"text": "hi"}})
    assert jsonrpc.parse_line(jsonrpc.encode(message)) == message
    assert jsonrpc.parse_line(jsonrpc.encode(message).decode()) == message


def test_parse_line_returns_a_batch_as_a_list_of_messages():
    batch = [jsonrpc.notification("a"), jsonrpc.result_response(1, {})]
    assert jsonrpc.parse_line(json.dumps(batch)) == batch


@pytest.mark.parametrize(
    "line, reason",
    [
        (b"hello world\n", "not JSON"),
        (b'{"jsonrpc": "2.0", "id": 1, "result": {"a', "not JSON"),
        (b"\xff\xfe\xc3\x28\n", "invalid UTF-8"),
        (b"[" * 200_000 + b"]" * 200_000, "nested too deeply"),
        (b'{"jsonrpc": "2.0", "id": ' + b"9" * 100_000 + b"}", "not JSON"),
        (b"[1, 2, 3]", "not a batch"),
        (b"[]", "not a batch"),
        (b'{"id": 1, "result": {}}', "not a JSON-RPC 2.0 message"),
        (b'"just a string"', "not a JSON-RPC 2.0 message"),
        (b"", "not JSON"),
        (b"null", "not a JSON-RPC 2.0 message"),
    ],
)
def test_parse_line_never_raises_and_says_why_a_line_was_rejected(line, reason):
    parsed = jsonrpc.parse_line(line)
    assert isinstance(parsed, jsonrpc.ParseFailure)
    assert reason in parsed.reason


def test_a_parse_failure_keeps_only_a_short_preview_of_a_huge_line():
    parsed = jsonrpc.parse_line(b"x" * 10_000_000)
    assert isinstance(parsed, jsonrpc.ParseFailure)
    assert len(parsed.preview) <= 203 and parsed.preview.startswith("xxx")


def test_a_huge_float_parses_as_infinity_rather_than_failing():
    parsed = jsonrpc.parse_line(b'{"jsonrpc": "2.0", "method": "m", "params": {"x": 1e999}}')
    assert parsed["params"]["x"] == float("inf")


def test_message_kinds_are_told_apart_by_their_members():
    request = jsonrpc.request(1, "ping")
    note = jsonrpc.notification("notifications/progress")
    answer = jsonrpc.result_response(1, {})
    assert (jsonrpc.is_request(request), jsonrpc.is_notification(request), jsonrpc.is_response(request)) == (
        True, False, False)
    assert (jsonrpc.is_request(note), jsonrpc.is_notification(note), jsonrpc.is_response(note)) == (False, True, False)
    assert (jsonrpc.is_request(answer), jsonrpc.is_notification(answer), jsonrpc.is_response(answer)) == (
        False, False, True)
