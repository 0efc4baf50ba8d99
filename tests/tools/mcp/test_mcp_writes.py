"""Writing to the server: the encoder's fast path, and the queue threads share to write."""

from __future__ import annotations

import json
import sys
import threading
import time

import pytest

from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.tools.error import McpConnectionError

CALL_TIMEOUT = 30.0
#: "At once": the loss report waits at most for the exit code and the stderr
#: drain (3 s) on a server that stays alive; far below CALL_TIMEOUT.
PROMPT = 10.0
PENDING = 8
WAIT = 20.0

# Answers initialize; holds every echo call unanswered, and once it holds
# as many as its argument says, closes its stdin, says so with a progress
# notification and stays alive with stdout open: the client's next write
# fails (EPIPE) while its reader sees no end of stdout.
HALF_CLOSING_SERVER = """
import json, os, sys, threading
out = sys.stdout.buffer
held = 0
for line in sys.stdin.buffer:
    message = json.loads(line)
    if message.get("method") == "initialize":
        result = {"protocolVersion": message["params"]["protocolVersion"], "capabilities": {"tools": {}},
                  "serverInfo": {"name": "half-closing"}}
        out.write(json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result}).encode() + b"\\n")
        out.flush()
    elif message.get("method") == "tools/call":
        held += 1
        if held == int(sys.argv[1]):
            break
sys.stdin.close()
os.close(0)
sys.stderr.write("stdin closed\\n")
sys.stderr.flush()
note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progressToken": "closed", "progress": 1}}
out.write(json.dumps(note).encode() + b"\\n")
out.flush()
threading.Event().wait()
"""


def test_encode_writes_what_the_standard_encoder_writes():
    message = {"jsonrpc": "2.0", "id": 7, "params": {"text": "caf\u00e9\n\u2028", "n": [1, 2.5, None, True], "x": {}}}
    expected = json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    assert jsonrpc.encode(message) == expected


def test_a_cyclic_message_is_refused_with_the_standard_value_error():
    params: dict = {}
    params["self"] = params
    with pytest.raises(ValueError, match="Circular"):
        jsonrpc.encode(jsonrpc.request(1, "tools/call", params))
    assert jsonrpc.encode(jsonrpc.request(2, "ping")) == b'{"jsonrpc":"2.0","id":2,"method":"ping"}\n'


def test_a_failed_write_fails_every_pending_call_at_once_and_later_calls_too(open_client, tmp_path):
    server = tmp_path / "half_closing_server.py"
    server.write_text(HALF_CLOSING_SERVER)
    stdin_closed = threading.Event()
    outcomes = []
    lock = threading.Lock()

    def on_progress(params):
        if params.get("progressToken") == "closed":
            stdin_closed.set()

    argv = [sys.executable, str(server), str(PENDING)]
    with open_client(argv, timeout=CALL_TIMEOUT, on_progress=on_progress) as client:

        def call() -> None:
            try:
                client.call_tool("echo", {})
                outcome = None
            except Exception as exc:  # noqa: BLE001 - inspected below
                outcome = exc
            with lock:
                outcomes.append((outcome, time.monotonic()))

        threads = [threading.Thread(target=call) for _ in range(PENDING)]
        for thread in threads:
            thread.start()
        assert stdin_closed.wait(WAIT), "the server holds every call, then closes its stdin"

        failed_write_at = time.monotonic()
        with pytest.raises(McpConnectionError) as failed:
            client.call_tool("echo", {})
        for thread in threads:
            thread.join(WAIT)
        assert not any(thread.is_alive() for thread in threads)

        began = time.monotonic()
        with pytest.raises(McpConnectionError) as later:
            client.call_tool("echo", {})
        assert time.monotonic() - began < 1.0, "once a write failed, later calls fail immediately"

    assert "could not write" in str(failed.value)
    assert len(outcomes) == PENDING
    for error, failed_at in outcomes:
        # The server is alive and its stdout open: only the failed write tells.
        assert isinstance(error, McpConnectionError), error
        assert failed_at - failed_write_at < PROMPT, "failed at once, not at the call timeout"
    assert "stdin closed" in later.value.stderr_tail
