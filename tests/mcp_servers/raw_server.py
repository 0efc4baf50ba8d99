"""A tiny stdlib MCP server over stdio that misbehaves on request, for tests.

Run as ``python tests/mcp_servers/raw_server.py [options]``. It speaks the
``initialize`` handshake (``server/discover`` gets -32601, as from any
server older than 2026-07-28) and serves these tools:

- ``echo(text)``: the text back.
- ``params()``: the JSON of this request's params (``_meta`` included).
- ``init_params()``: the JSON of the ``initialize`` params it received.
- ``hang(label)``: never answers; sends one progress notification when the
  request has a ``progressToken`` and writes ``hang received <label>`` to
  stderr, so a test knows the call arrived.
- ``late()``: waits for ``notifications/cancelled`` naming this request,
  then answers anyway (a late response).
- ``cancelled()``: the JSON list of request ids cancelled so far.
- ``crash(code, lines)``: writes ``lines`` to stderr and exits with ``code``
  in the middle of the call.
- ``garbage()``: writes lines that are not JSON-RPC messages (text,
  truncated JSON, invalid UTF-8, deep nesting, a huge number, a JSON array
  of numbers, an empty line), then answers ``after garbage``.
- ``big(n)``: answers with ``n`` bytes of text, on one line.
- ``stderr_flood(n)``: writes ``n`` bytes to stderr, then a last line
  ``flood done``, then answers.
- ``unknown_id()``: writes a response to an id nobody asked for, then answers.
- ``ask(method, params)``: sends a server-to-client request and answers with
  the JSON of the client's response (``result`` or ``error``).
- ``notify(level)``: sends ``notifications/message`` at ``level`` and
  ``notifications/tools/list_changed``, then answers.
- ``grandchild_pid()``: the pid of the grandchild started by ``--grandchild``.

Options:
    --answer-version V   answer ``initialize`` with protocol version V
                         (default: the version offered).
    --ignore-discover    never answer ``server/discover`` (instead of -32601).
    --ignore-eof         keep running after stdin ends.
    --ignore-term        ignore SIGTERM.
    --grandchild         start a child that never exits on its own and stays
                         in the process group.
    --stderr-lines N     write N lines to stderr at start-up.
    --broken-tools       also list ``broken`` (``inputSchema`` ``{"type":
                         "strin"}``, not a valid JSON Schema) and
                         ``bad.name`` (a name providers refuse).

``resources/list`` answers three resources over three pages (cursors
``p2``, ``p3``); ``prompts/list`` two prompts over two pages.
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import signal
import subprocess
import sys
from typing import Any, Deque, Dict, List, Optional

_out = sys.stdout.buffer
_in = sys.stdin.buffer
_err = sys.stderr.buffer

_deferred: Deque[Dict[str, Any]] = collections.deque()
_cancelled: List[Any] = []
_state: Dict[str, Any] = {"init": None, "grandchild": None, "next_id": 1}

# Tools that wait for the client themselves; while waiting, calls of these are deferred.
_BLOCKING_TOOLS = {"hang", "late", "ask", "crash"}

TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object", "properties": props}}
    for name, props in [
        ("echo", {"text": {"type": "string"}}),
        ("params", {}),
        ("init_params", {}),
        ("hang", {"label": {"type": "string"}}),
        ("late", {}),
        ("cancelled", {}),
        ("crash", {"code": {"type": "integer"}, "lines": {"type": "array", "items": {"type": "string"}}}),
        ("garbage", {}),
        ("big", {"n": {"type": "integer"}}),
        ("stderr_flood", {"n": {"type": "integer"}}),
        ("unknown_id", {}),
        ("ask", {"method": {"type": "string"}, "params": {"type": "object"}}),
        ("notify", {"level": {"type": "string"}}),
        ("grandchild_pid", {}),
    ]
]


def write_line(data: bytes) -> None:
    _out.write(data + b"\n")
    _out.flush()


def send(message: Dict[str, Any]) -> None:
    message = {"jsonrpc": "2.0", **message}
    write_line(json.dumps(message).encode("utf-8"))


def log_err(text: str) -> None:
    _err.write(text.encode("utf-8") + b"\n")
    _err.flush()


def read_message() -> Optional[Dict[str, Any]]:
    """Return the next message from the client, or None at end of input."""
    if _deferred:
        return _deferred.popleft()
    while True:
        line = _in.readline()
        if not line:
            return None
        if line.strip():
            return json.loads(line)


def wait_for(predicate: Any) -> Optional[Dict[str, Any]]:
    """Read until a message matches; others wait in _deferred for the main loop."""
    held: List[Dict[str, Any]] = []
    try:
        while True:
            line = _in.readline()
            if not line:
                return None
            if not line.strip():
                continue
            message = json.loads(line)
            if predicate(message):
                return message
            if "id" in message and (message.get("params") or {}).get("name") not in _BLOCKING_TOOLS:
                handle(message)  # answer quick requests meanwhile (a client may call while it answers us)
            else:
                held.append(message)
    finally:
        _deferred.extend(held)


def text_result(text: str, **extra: Any) -> Dict[str, Any]:
    return {"content": [{"type": "text", "text": text}], **extra}


def call_tool(request_id: Any, params: Dict[str, Any]) -> Optional[Dict[str, Any]]:
    """Run a tool; return its result, or None when the tool answers by itself (or never)."""
    name = params.get("name")
    args = params.get("arguments") or {}
    if name == "echo":
        return text_result(str(args.get("text", "")))
    if name == "params":
        return text_result(json.dumps(params, sort_keys=True))
    if name == "init_params":
        return text_result(json.dumps(_state["init"], sort_keys=True))
    if name == "hang":
        token = (params.get("_meta") or {}).get("progressToken")
        if token is not None:
            send({"method": "notifications/progress", "params": {"progressToken": token, "progress": 1}})
        log_err(f"hang received {args.get('label', '')}")
        return None
    if name == "late":
        wait_for(lambda m: m.get("method") == "notifications/cancelled" and m["params"]["requestId"] == request_id)
        _cancelled.append(request_id)
        return text_result("late")
    if name == "cancelled":
        return text_result(json.dumps(_cancelled))
    if name == "crash":
        for line in args.get("lines", []):
            log_err(line)
        os._exit(int(args.get("code", 3)))
    if name == "garbage":
        for line in (
            b"this is not json",
            b'{"jsonrpc": "2.0", "id": 1, "result": {"trunc',
            b"\xff\xfe not utf-8 \xc3\x28",
            b"[" * 100000 + b"]" * 100000,
            b'{"jsonrpc": "2.0", "method": "x", "params": {"n": ' + b"9" * 10000 + b"}}",
            b"[1, 2, 3]",
            b'{"no": "jsonrpc member"}',
            b"",
        ):
            write_line(line)
        return text_result("after garbage")
    if name == "big":
        return text_result("y" * int(args.get("n", 0)))
    if name == "stderr_flood":
        remaining = int(args.get("n", 0))
        chunk = (b"e" * 99) + b"\n"
        while remaining > 0:
            _err.write(chunk)
            remaining -= len(chunk)
        _err.flush()
        log_err("flood done")
        return text_result("flooded")
    if name == "unknown_id":
        send({"id": 987654, "result": text_result("nobody asked")})
        return text_result("known")
    if name == "ask":
        server_id = f"srv-{_state['next_id']}"
        _state["next_id"] += 1
        send({"id": server_id, "method": args["method"], "params": args.get("params") or {}})
        answer = wait_for(lambda m: m.get("id") == server_id and "method" not in m)
        if answer is None:
            sys.exit(0)
        answer.pop("jsonrpc", None)
        return text_result(json.dumps(answer, sort_keys=True))
    if name == "notify":
        level = args.get("level", "warning")
        send({"method": "notifications/message", "params": {"level": level, "logger": "raw", "data": "note"}})
        send({"method": "notifications/tools/list_changed"})
        return text_result("notified")
    if name == "grandchild_pid":
        child = _state["grandchild"]
        return text_result(str(child.pid if child is not None else None))
    return text_result(f"unknown tool {name}", isError=True)


def handle(message: Dict[str, Any]) -> None:
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if method is None:
        return  # a response to nothing we are waiting for
    if request_id is None:
        if method == "notifications/cancelled":
            _cancelled.append(params.get("requestId"))
        return
    if method == "initialize":
        _state["init"] = params
        version = _state["answer_version"] or params.get("protocolVersion")
        send(
            {
                "id": request_id,
                "result": {
                    "protocolVersion": version,
                    "capabilities": {"tools": {"listChanged": True}},
                    "serverInfo": {"name": "raw-server", "version": "0.0.1"},
                },
            }
        )
    elif method == "server/discover" and _state["ignore_discover"]:
        return
    elif method == "ping":
        send({"id": request_id, "result": {}})
    elif method == "tools/list":
        send({"id": request_id, "result": {"tools": TOOLS + _state.get("extra_tools", [])}})
    elif method == "resources/list":
        page = {None: (0, "p2"), "p2": (1, "p3"), "p3": (2, None)}[(params or {}).get("cursor")]
        result: Dict[str, Any] = {"resources": [{"uri": f"raw://r{page[0]}", "name": f"r{page[0]}"}]}
        if page[1]:
            result["nextCursor"] = page[1]
        send({"id": request_id, "result": result})
    elif method == "prompts/list":
        cursor = (params or {}).get("cursor")
        result = {"prompts": [{"name": "second" if cursor else "first"}]}
        if not cursor:
            result["nextCursor"] = "more"
        send({"id": request_id, "result": result})
    elif method == "tools/call":
        result = call_tool(request_id, params)
        if result is not None:
            send({"id": request_id, "result": result})
    else:
        send({"id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--answer-version", default=None)
    parser.add_argument("--ignore-discover", action="store_true")
    parser.add_argument("--ignore-eof", action="store_true")
    parser.add_argument("--ignore-term", action="store_true")
    parser.add_argument("--grandchild", action="store_true")
    parser.add_argument("--stderr-lines", type=int, default=0)
    parser.add_argument("--broken-tools", action="store_true")
    args = parser.parse_args()
    if args.broken_tools:
        _state["extra_tools"] = [
            {"name": "broken", "description": "Bad schema.", "inputSchema": {"type": "strin"}},
            {"name": "bad.name", "description": "Bad name.", "inputSchema": {"type": "object"}},
        ]
    _state["answer_version"] = args.answer_version
    _state["ignore_discover"] = args.ignore_discover
    if args.ignore_term:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    if args.grandchild:
        # A child that never exits on its own, holding none of our pipes, so
        # only a signal to the process group ends it.
        _state["grandchild"] = subprocess.Popen(
            [sys.executable, "-c", "import signal; signal.pause()"],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
    for number in range(args.stderr_lines):
        log_err(f"raw_server start-up line {number}")
    while True:
        message = read_message()
        if message is None:
            break
        handle(message)
    if args.ignore_eof:
        while True:
            signal.pause()


if __name__ == "__main__":
    main()
