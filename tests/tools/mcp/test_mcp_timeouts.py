"""Timeouts: McpTimeoutError, notifications/cancelled, a usable client, late answers dropped."""

from __future__ import annotations

import json
import logging
import time

import pytest

from agcore_sync.tools.error import McpTimeoutError, ToolTimeoutError

SHORT = 0.3


def test_a_call_past_its_timeout_raises_and_sends_cancelled_and_the_next_call_works(open_client, sdk_server):
    with open_client(sdk_server) as client:
        started = time.monotonic()
        with pytest.raises(McpTimeoutError) as caught:
            client.call_tool("slow", {"seconds": 60}, timeout=SHORT)
        elapsed = time.monotonic() - started
        call_id = client.transport.requests("tools/call")[-1]["id"]
        cancelled = client.transport.requests("notifications/cancelled")
        assert client.call_tool("echo", {"text": "next"}).text == "next"
    assert SHORT <= elapsed < SHORT + 5
    assert len(cancelled) == 1 and cancelled[0]["params"]["requestId"] == call_id
    error = caught.value
    assert error.recoverable is False
    assert error.tool_name == "slow"
    assert not isinstance(error, ToolTimeoutError)
    assert "'slow'" in str(error) and "cancelled" in str(error)


def test_the_client_timeout_applies_when_the_call_gives_none(open_client, sdk_server):
    with open_client(sdk_server) as client:
        client.timeout = SHORT  # after connect: the server needs longer to start
        with pytest.raises(McpTimeoutError):
            client.call_tool("slow", {"seconds": 60})
        assert client.call_tool("echo", {"text": "ok"}).text == "ok"


def test_a_late_response_to_a_cancelled_call_is_dropped(open_client, raw_server, caplog):
    caplog.set_level(logging.DEBUG, logger="agcore_sync.mcp")
    with open_client(raw_server) as client:
        with pytest.raises(McpTimeoutError):
            client.call_tool("late", timeout=SHORT)
        late_id = client.transport.requests("tools/call")[-1]["id"]
        # The server answers "late" only after it read the cancellation, so
        # its late response is on the wire before this call's answer.
        assert client.call_tool("echo", {"text": "mine"}).text == "mine"
        assert json.loads(client.call_tool("cancelled").text) == [late_id]
    dropped = [r.getMessage() for r in caplog.records if "unknown or cancelled id" in r.getMessage()]
    assert dropped == [f"dropped a response from 'test' to unknown or cancelled id {late_id}"]


def test_timeout_none_on_the_client_means_no_limit(open_client, sdk_server):
    with open_client(sdk_server, timeout=None) as client:
        assert client.call_tool("slow", {"seconds": 0.5, "text": "waited"}).text == "waited"
