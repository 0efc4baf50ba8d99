"""A peer that sends one endless message costs a bounded amount of memory and a typed error.

Each case runs ``tests/hardening/bounded_peer.py`` in a fresh interpreter,
which reads its own peak RSS (``ru_maxrss``) before and after the call:
the peer sends :data:`SENT` bytes in one message, the client's limit is
:data:`LIMIT`, and the peak may grow by about twice the limit, never by
what was sent. Without the limits the same runs grow by more than
:data:`SENT` (the whole line, then its decoded copy).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_sync._http.sse import DEFAULT_MAX_EVENT_SIZE, EventTooLarge, SseParser
from agcore_sync.llm._http_provider import ERROR_BODY_LIMIT, ERROR_QUOTE_CHARS
from agcore_sync.llm.openai import OpenAIProvider
from agcore_sync.mcp.transports.base import DEFAULT_MAX_MESSAGE_SIZE
from agcore_sync.mcp.transports.http import HttpTransport
from agcore_sync.mcp.transports.stdio import StdioTransport

ROOT = Path(__file__).resolve().parents[2]
MIB = 1024 * 1024
#: The limit the clients are given.
LIMIT = 4 * MIB
#: What the peer sends in one message: 16 times the limit.
SENT = 64 * MIB
#: Growth of the peak allowed: twice the limit plus the noise of a run
#: (sockets, threads, the error's traceback).
ALLOWED_KIB = (2 * LIMIT + 8 * MIB) // 1024
#: Bound on one child run.
CHILD_TIMEOUT = 120.0


def _run(mode: str, sent: int = SENT) -> dict:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-m", "tests.hardening.bounded_peer", mode, str(LIMIT), str(sent)],
                          cwd=ROOT, env=env, capture_output=True, timeout=CHILD_TIMEOUT, check=True)
    return json.loads(done.stdout.decode().strip().splitlines()[-1])


@pytest.mark.parametrize("mode", ["openai", "anthropic", "gemini"])
def test_a_provider_stream_with_one_endless_sse_line_ends_with_a_parse_error_in_bounded_memory(mode):
    result = _run(mode)
    assert result["error"] == "ResponseParseError"
    assert f"larger than {LIMIT} characters" in result["message"]
    assert "max_event_size" in result["message"]
    assert "sk-bounded-peer-key" not in result["message"]
    assert result["after_kib"] - result["before_kib"] < ALLOWED_KIB, result


def test_a_bedrock_frame_announcing_more_than_the_limit_ends_with_a_parse_error_in_bounded_memory():
    result = _run("bedrock")
    assert result["error"] == "ResponseParseError"
    assert f"larger than {LIMIT} bytes" in result["message"]
    assert "max_event_size" in result["message"]
    assert "sk-bounded-peer-key" not in result["message"]
    assert result["after_kib"] - result["before_kib"] < ALLOWED_KIB, result


def test_the_event_stream_limit_has_the_sse_default():
    from agcore_sync._http.eventstream import DEFAULT_MAX_EVENT_SIZE as EVENTSTREAM_DEFAULT

    assert EVENTSTREAM_DEFAULT == DEFAULT_MAX_EVENT_SIZE


def test_an_mcp_stdio_server_writing_an_endless_line_loses_its_connection_in_bounded_memory():
    result = _run("mcp-stdio", sent=SENT // 2)
    assert result["error"] == "McpConnectionError"
    assert f"longer than {LIMIT} bytes" in result["message"]
    assert result["after_kib"] - result["before_kib"] < ALLOWED_KIB, result


@pytest.mark.parametrize("mode", ["mcp-http-json", "mcp-http-sse"])
def test_an_mcp_http_answer_larger_than_the_limit_fails_its_request_in_bounded_memory(mode):
    result = _run(mode)
    assert result["error"] == "McpError"
    assert "max_message_size" in result["message"]
    assert result["after_kib"] - result["before_kib"] < ALLOWED_KIB, result


def test_an_http_error_with_a_huge_body_reads_64_kib_of_it_and_quotes_at_most_2000_characters():
    result = _run("openai-error")
    assert result["error"] == "ServerError"
    assert result["message"].startswith("OpenAI returned HTTP 500: ")
    assert len(result["message"]) <= ERROR_QUOTE_CHARS + 100
    # Not even the limit of a normal body: the error body's own 64 KiB bound.
    assert result["after_kib"] - result["before_kib"] < 8 * MIB // 1024, result


def test_a_non_streamed_body_larger_than_max_response_size_is_a_parse_error_in_bounded_memory():
    result = _run("openai-chat")
    assert result["error"] == "ResponseParseError"
    assert f"larger than {LIMIT} bytes" in result["message"]
    assert "max_response_size" in result["message"]
    assert result["after_kib"] - result["before_kib"] < ALLOWED_KIB, result


def test_the_bounds_of_plain_bodies_have_their_documented_defaults():
    assert ERROR_BODY_LIMIT == 64 * 1024 and ERROR_QUOTE_CHARS == 2000
    assert OpenAIProvider(model="m", api_key="k").max_response_size == 32 * MIB


# -- the parser's limit, in process ------------------------------------------


def test_the_sse_parser_counts_an_unfinished_line_across_chunks():
    parser = SseParser(max_event_size=100)
    assert parser.feed(b"data: " + b"x" * 60) == []
    with pytest.raises(EventTooLarge) as caught:
        parser.feed(b"x" * 60)
    assert caught.value.limit == 100


def test_the_sse_parser_counts_the_data_lines_of_one_event():
    parser = SseParser(max_event_size=100)
    parser.feed(b"data: " + b"x" * 40 + b"\n")
    parser.feed(b"data: " + b"x" * 40 + b"\n")
    with pytest.raises(EventTooLarge):
        parser.feed(b"data: " + b"x" * 40 + b"\n")


def test_the_sse_parser_refuses_one_long_line_that_arrives_in_a_single_chunk():
    with pytest.raises(EventTooLarge):
        SseParser(max_event_size=100).feed(b": a comment " + b"x" * 200 + b"\ndata: 1\n\n")


def test_many_events_up_to_the_limit_each_pass():
    parser = SseParser(max_event_size=100)
    body = (b"data: " + b"x" * 90 + b"\n\n") * 50
    events = parser.feed(body[:3000]) + parser.feed(body[3000:]) + parser.close()
    assert [len(e.data) for e in events] == [90] * 50


def test_the_limits_have_their_documented_defaults():
    assert DEFAULT_MAX_EVENT_SIZE == DEFAULT_MAX_MESSAGE_SIZE == 32 * MIB
    assert OpenAIProvider(model="m", api_key="k").max_event_size == 32 * MIB
    assert StdioTransport("python").max_message_size == 32 * MIB
    assert HttpTransport("http://127.0.0.1:1/mcp").max_message_size == 32 * MIB


@pytest.mark.parametrize("value", [0, -1, True, 1.5])
def test_a_limit_that_is_not_a_positive_int_is_refused(value):
    with pytest.raises((TypeError, ValueError), match="max_message_size"):
        StdioTransport("python", max_message_size=value)
    with pytest.raises((TypeError, ValueError), match="max_message_size"):
        HttpTransport("http://127.0.0.1:1/mcp", max_message_size=value)
