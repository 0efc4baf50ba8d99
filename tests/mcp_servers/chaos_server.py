"""A stdlib MCP server over stdio that misbehaves by seed, for the chaos tests.

Run as ``python tests/mcp_servers/chaos_server.py --seed N [options]``. It
speaks the ``initialize`` handshake (``server/discover`` gets -32601) and is
single-threaded: it reads stdin with ``select`` so it can keep answers
scheduled for later while it reads more requests.

What a call of the ``echo(text)`` tool does is decided by :func:`plan` from
the seed and the call's ``text`` alone, so the order in which concurrent
calls arrive does not matter, a restarted server decides the same way, and
a test can compute each call's mode itself:

============  ==========================================================
mode          what the server does
============  ==========================================================
ok            answers ``echo <text>`` at once
delay         answers after up to :data:`MAX_DELAY` seconds
hold          holds the answer until :data:`HOLD_COUNT` answers are held
              or the oldest has waited :data:`HOLD_MAX`, then releases
              the held answers in reverse order (out of order)
garbage       writes lines that are not JSON-RPC messages, then answers
flood         writes ``--flood-bytes`` of stderr, then answers
tool_error    answers an ``isError`` result ``refused <text>``
rpc_error     answers the JSON-RPC error -32000 ``rejected <text>``
slow          answers after ``--slow`` seconds (past the client's timeout)
crash         writes a line to stderr and half a response to stdout, then
              dies mid-call: ``os._exit`` with a code, or SIGKILL
============  ==========================================================

A correct answer is the text ``echo <text>`` with ``structuredContent``
``{"echo": <text>, "pid": <pid>}``, so each caller can check it got its own.

Other tools, always well behaved unless named for it: ``crash(code)`` dies
at once; ``crash_once(text, marker)`` dies if the file ``marker`` does not
exist yet (creating it first), else echoes; ``fail(text)`` answers the
JSON-RPC error -32000; ``hang(text)`` never answers; ``pid()`` answers the
server's pid; ``close_stdin(linger)`` closes its stdin, answers, and exits
``linger`` seconds later (a write to it fails before its exit is seen).

Options:
    --seed N             the chaos seed (default 0).
    --calm               ``echo`` always behaves (mode ok).
    --slow S             seconds a ``slow`` answer waits (default 3.0).
    --flood-bytes N      bytes of stderr per ``flood`` (default 262144).
    --calls FILE         append ``<tool> <text>`` to FILE for every tools/call,
                         so a test can count executions across restarts.
    --notify PORT        connect to 127.0.0.1:PORT at start-up and write one
                         line per event: ``started <pid>``, ``initialize
                         <pid>`` per ``initialize`` received, ``call <tool>
                         <text> <pid>`` per tools/call received (before the
                         tool runs), so a test knows what reached which process.
    --fail-start-if F    exit with code 5 at start-up if the file F exists.
    --stall-init-if F    never answer ``initialize`` if the file F exists at
                         start-up.
"""

from __future__ import annotations

import argparse
import heapq
import itertools
import json
import os
import random
import select
import signal
import socket
import sys
import threading
import time
from typing import Any, Dict, List, Optional, Tuple

#: The modes of an ``echo`` call and their weights.
MODES: Tuple[Tuple[str, int], ...] = (
    ("ok", 40),
    ("delay", 15),
    ("hold", 12),
    ("garbage", 8),
    ("flood", 5),
    ("tool_error", 5),
    ("rpc_error", 4),
    ("slow", 4),
    ("crash", 1),
)
#: Longest wait of a ``delay`` answer, in seconds.
MAX_DELAY = 0.25
#: How many held answers are released together.
HOLD_COUNT = 3
#: Longest time an answer is held, in seconds.
HOLD_MAX = 0.3
#: Exit codes of a crash; a crash draws SIGKILL instead a quarter of the time.
EXIT_CODES = (1, 3, 7, 70)

GARBAGE_LINES = (
    b"chaos: this is not json",
    b'{"jsonrpc": "2.0", "id": 1, "result": {"content": [{"type": "te',
    b"\xff\xfe not utf-8 \xc3\x28",
    b"[1, 2, 3]",
    b'{"no": "jsonrpc member"}',
    b'{"jsonrpc": "2.0", "id": "nobody-asked", "result": {}}',
    b"[" * 5000 + b"]" * 5000,
    b"",
)

TOOLS = [
    {"name": name, "description": f"The {name} tool.", "inputSchema": {"type": "object", "properties": props}}
    for name, props in [
        ("echo", {"text": {"type": "string"}}),
        ("crash", {"code": {"type": "integer"}}),
        ("crash_once", {"text": {"type": "string"}, "marker": {"type": "string"}}),
        ("fail", {"text": {"type": "string"}}),
        ("hang", {"text": {"type": "string"}}),
        ("pid", {}),
        ("close_stdin", {"linger": {"type": "number"}}),
    ]
]

_out = sys.stdout.buffer
_err = sys.stderr.buffer
_options: Dict[str, Any] = {}
# Answers due later: (due time, sequence, encoded line).
_scheduled: List[Tuple[float, int, bytes]] = []
# Held answers: (held since, encoded line).
_held: List[Tuple[float, bytes]] = []
_sequence = itertools.count()
_notify: Dict[str, Optional[socket.socket]] = {"sock": None}


def plan(seed: int, text: str) -> Tuple[str, float]:
    """Return the mode of an ``echo`` call and a number in [0, 1) that picks its details."""
    rng = random.Random(f"chaos/{seed}/{text}")
    names = [name for name, _ in MODES]
    weights = [weight for _, weight in MODES]
    mode = rng.choices(names, weights)[0]
    return mode, rng.random()


def encode(message: Dict[str, Any]) -> bytes:
    return json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8") + b"\n"


def write(data: bytes) -> None:
    _out.write(data)
    _out.flush()


def log_err(text: str) -> None:
    _err.write(text.encode("utf-8") + b"\n")
    _err.flush()


def notify(event: str) -> None:
    sock = _notify["sock"]
    if sock is not None:
        try:
            sock.sendall(f"{event} {os.getpid()}\n".encode("ascii"))
        except OSError:
            _notify["sock"] = None


def echo_result(text: str) -> Dict[str, Any]:
    return {
        "content": [{"type": "text", "text": f"echo {text}"}],
        "structuredContent": {"echo": text, "pid": os.getpid()},
    }


def die(request_id: Any, text: str, detail: float) -> None:
    """Crash mid-call: a stderr line, half a response on stdout, then exit or SIGKILL."""
    code = EXIT_CODES[int(detail * 4 * len(EXIT_CODES)) % len(EXIT_CODES)]
    log_err(f"chaos: crashing on {text!r}")
    half = encode({"id": request_id, "result": echo_result(text)})
    _out.write(half[: len(half) // 2])
    _out.flush()
    if detail < 0.25:
        os.kill(os.getpid(), signal.SIGKILL)
    os._exit(code)


def chaos_echo(request_id: Any, text: str) -> None:
    """Answer one ``echo`` call the way :func:`plan` says."""
    mode, detail = ("ok", 0.0) if _options["calm"] else plan(_options["seed"], text)
    answer = encode({"id": request_id, "result": echo_result(text)})
    now = time.monotonic()
    if mode == "ok":
        write(answer)
    elif mode == "delay":
        heapq.heappush(_scheduled, (now + detail * MAX_DELAY, next(_sequence), answer))
    elif mode == "slow":
        heapq.heappush(_scheduled, (now + _options["slow"], next(_sequence), answer))
    elif mode == "hold":
        _held.append((now, answer))
        if len(_held) >= HOLD_COUNT:
            release_held()
    elif mode == "garbage":
        count = 2 + int(detail * 4)
        start = int(detail * len(GARBAGE_LINES))
        for index in range(count):
            write(GARBAGE_LINES[(start + index) % len(GARBAGE_LINES)] + b"\n")
        write(answer)
    elif mode == "flood":
        remaining = _options["flood_bytes"]
        chunk = b"f" * 99 + b"\n"
        while remaining > 0:
            _err.write(chunk)
            remaining -= len(chunk)
        _err.flush()
        write(answer)
    elif mode == "tool_error":
        write(encode({"id": request_id, "result": {"content": [{"type": "text", "text": f"refused {text}"}],
                                                   "isError": True}}))
    elif mode == "rpc_error":
        write(encode({"id": request_id, "error": {"code": -32000, "message": f"rejected {text}"}}))
    elif mode == "crash":
        die(request_id, text, detail)


def release_held() -> None:
    """Write every held answer, newest first (so out of the order they were asked in)."""
    held = [line for _, line in _held]
    _held.clear()
    for line in reversed(held):
        write(line)


def release_due() -> None:
    now = time.monotonic()
    while _scheduled and _scheduled[0][0] <= now:
        write(heapq.heappop(_scheduled)[2])
    if _held and now - _held[0][0] >= HOLD_MAX:
        release_held()


def next_wake() -> Optional[float]:
    """Seconds until something scheduled or held is due (None: nothing is)."""
    due = []
    if _scheduled:
        due.append(_scheduled[0][0])
    if _held:
        due.append(_held[0][0] + HOLD_MAX)
    if not due:
        return None
    return max(min(due) - time.monotonic(), 0.0)


def record_call(name: str, text: str) -> None:
    path = _options["calls"]
    if path:
        with open(path, "a", encoding="utf-8") as calls:
            calls.write(f"{name} {text}\n")


def call_tool(request_id: Any, params: Dict[str, Any]) -> None:
    name = params.get("name")
    args = params.get("arguments") or {}
    text = str(args.get("text", ""))
    record_call(str(name), text)
    notify(f"call {name} {text}")
    if name == "echo":
        chaos_echo(request_id, text)
    elif name == "crash":
        log_err("chaos: crash tool called")
        os._exit(int(args.get("code", 3)))
    elif name == "crash_once":
        marker = str(args["marker"])
        if not os.path.exists(marker):
            with open(marker, "w", encoding="utf-8"):
                pass
            log_err(f"chaos: crash_once crashing on {text!r}")
            os._exit(3)
        write(encode({"id": request_id, "result": echo_result(text)}))
    elif name == "fail":
        write(encode({"id": request_id, "error": {"code": -32000, "message": f"rejected {text}"}}))
    elif name == "hang":
        return
    elif name == "close_stdin":
        os.close(0)
        write(encode({"id": request_id, "result": {"content": [{"type": "text", "text": "stdin closed"}]}}))
        # The server lingers after closing stdin: a bounded wait, not synchronisation.
        threading.Event().wait(float(args.get("linger", 0.5)))
        os._exit(0)
    elif name == "pid":
        write(encode({"id": request_id, "result": {"content": [{"type": "text", "text": str(os.getpid())}]}}))
    else:
        write(encode({"id": request_id, "error": {"code": -32602, "message": f"unknown tool {name}"}}))


def handle(line: bytes) -> None:
    if not line.strip():
        return
    message = json.loads(line)
    method = message.get("method")
    request_id = message.get("id")
    params = message.get("params") or {}
    if method is None or request_id is None:
        return  # a response or a notification: nothing to do
    if method == "initialize":
        notify("initialize")
        if _options["stall_init"]:
            log_err("chaos: not answering initialize")
            return
        write(encode({"id": request_id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "chaos-server", "version": str(os.getpid())},
        }}))
    elif method == "ping":
        write(encode({"id": request_id, "result": {}}))
    elif method == "tools/list":
        tools = [dict(tool, description=f"{tool['description']} Served by pid {os.getpid()}.") for tool in TOOLS]
        write(encode({"id": request_id, "result": {"tools": tools}}))
    elif method == "tools/call":
        call_tool(request_id, params)
    else:
        write(encode({"id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}}))


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--calm", action="store_true")
    parser.add_argument("--slow", type=float, default=3.0)
    parser.add_argument("--flood-bytes", type=int, default=262144)
    parser.add_argument("--calls", default=None)
    parser.add_argument("--notify", type=int, default=None)
    parser.add_argument("--fail-start-if", default=None)
    parser.add_argument("--stall-init-if", default=None)
    args = parser.parse_args()
    if args.fail_start_if and os.path.exists(args.fail_start_if):
        log_err("chaos: refusing to start")
        os._exit(5)
    _options.update(
        seed=args.seed,
        calm=args.calm,
        slow=args.slow,
        flood_bytes=args.flood_bytes,
        calls=args.calls,
        stall_init=bool(args.stall_init_if and os.path.exists(args.stall_init_if)),
    )
    if args.notify is not None:
        _notify["sock"] = socket.create_connection(("127.0.0.1", args.notify), timeout=10)
        notify("started")
    pending = b""
    while True:
        release_due()
        readable, _, _ = select.select([0], [], [], next_wake())
        if not readable:
            continue
        chunk = os.read(0, 65536)
        if not chunk:
            return  # stdin closed: the client is done with us
        pending += chunk
        while b"\n" in pending:
            line, pending = pending.split(b"\n", 1)
            handle(line)


if __name__ == "__main__":
    try:
        main()
    except BrokenPipeError:
        os._exit(0)
