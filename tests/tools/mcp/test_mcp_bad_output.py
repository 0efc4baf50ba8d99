"""A server writing junk, huge lines, floods of stderr or answers nobody asked for."""

from __future__ import annotations

import logging

TEN_MB = 10 * 1024 * 1024


def test_lines_that_are_not_json_rpc_are_logged_and_skipped(open_client, raw_server, caplog):
    caplog.set_level(logging.WARNING, logger="agcore_sync.mcp")
    with open_client(raw_server) as client:
        assert client.call_tool("garbage").text == "after garbage"
        assert client.call_tool("echo", {"text": "still in sync"}).text == "still in sync"
    warnings = [r.getMessage() for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(warnings) == 7, warnings  # every bad line but the empty one
    assert any("this is not json" in w for w in warnings)
    assert any("invalid UTF-8" in w for w in warnings)
    assert any("nested too deeply" in w for w in warnings)
    assert all(len(w) < 600 for w in warnings), "a huge bad line is not logged whole"


def test_a_ten_megabyte_response_line_arrives_intact(open_client, raw_server):
    with open_client(raw_server) as client:
        text = client.call_tool("big", {"n": TEN_MB}).text
        assert client.call_tool("echo", {"text": "after"}).text == "after"
    assert len(text) == TEN_MB
    assert text == "y" * TEN_MB


def test_ten_megabytes_of_stderr_do_not_deadlock_the_server(open_client, raw_server):
    with open_client(raw_server, timeout=60.0) as client:
        assert client.call_tool("stderr_flood", {"n": TEN_MB}).text == "flooded"
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"
        # The drain reads stderr concurrently; once the server is stopped it
        # has read everything, so the tail ends with the last line written.
        client.close()
        tail = client.transport.stderr_tail.splitlines()
    assert tail[-1] == "flood done"
    assert len(tail) == 20


def test_stderr_lines_are_logged_at_debug(open_client, raw_server, caplog):
    caplog.set_level(logging.DEBUG, logger="agcore_sync.mcp")
    with open_client(raw_server + ["--stderr-lines", "2"]) as client:
        client.call_tool("echo", {"text": "x"})
    records = [r for r in caplog.records if "raw_server start-up line 1" in r.getMessage()]
    assert records and records[0].levelno == logging.DEBUG


def test_a_response_with_an_unknown_id_is_dropped(open_client, raw_server, caplog):
    caplog.set_level(logging.DEBUG, logger="agcore_sync.mcp")
    with open_client(raw_server) as client:
        assert client.call_tool("unknown_id").text == "known"
        assert client.call_tool("echo", {"text": "next"}).text == "next"
    assert any("unknown or cancelled id 987654" in r.getMessage() for r in caplog.records)
