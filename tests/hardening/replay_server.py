"""A stdlib MCP server over stdio that writes whatever lines it is given, for fuzzing a client.

Run as ``python tests/hardening/replay_server.py``. It answers ``initialize``,
``ping`` and ``tools/list`` (one tool) and ignores every message without a
``method`` (the client's answers to the junk requests it was made to send).
The one tool:

- ``emit(lines)``: ``lines`` is a list of base64 strings; each is decoded
  and written to stdout as one raw line (no check at all), then the call is
  answered with the text ``emitted <n>``.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Any, Dict

_out = sys.stdout.buffer
_in = sys.stdin.buffer

TOOL = {
    "name": "emit",
    "description": "Write raw lines to stdout, then answer.",
    "inputSchema": {"type": "object", "properties": {"lines": {"type": "array", "items": {"type": "string"}}}},
}


def send(message: Dict[str, Any]) -> None:
    _out.write(json.dumps({"jsonrpc": "2.0", **message}).encode("utf-8") + b"\n")
    _out.flush()


def handle(message: Dict[str, Any]) -> None:
    method = message.get("method")
    if method is None or "id" not in message:
        return
    request_id = message["id"]
    params = message.get("params") or {}
    if method == "initialize":
        send({"id": request_id, "result": {
            "protocolVersion": params.get("protocolVersion"),
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "replay-server", "version": "0.0.1"},
        }})
    elif method == "ping":
        send({"id": request_id, "result": {}})
    elif method == "tools/list":
        send({"id": request_id, "result": {"tools": [TOOL]}})
    elif method == "tools/call" and params.get("name") == "emit":
        lines = (params.get("arguments") or {}).get("lines") or []
        for line in lines:
            _out.write(base64.b64decode(line) + b"\n")
        _out.flush()
        send({"id": request_id, "result": {"content": [{"type": "text", "text": f"emitted {len(lines)}"}]}})
    else:
        send({"id": request_id, "error": {"code": -32601, "message": f"Method not found: {method}"}})


def main() -> None:
    while True:
        line = _in.readline()
        if not line:
            return
        if line.strip():
            handle(json.loads(line))


if __name__ == "__main__":
    main()
