"""A minimal stdio MCP server for the benchmarks: one ``echo`` tool, stdlib only.

Reads one JSON-RPC message per line on stdin and answers on stdout:
``initialize``, ``tools/list`` (one tool) and ``tools/call`` (the arguments
echoed back as one text block). Notifications get no answer; any other
request gets -32601. Exits at stdin EOF.
"""

from __future__ import annotations

import json
import sys

TOOL = {"name": "echo", "description": "Echo the arguments.", "inputSchema": {"type": "object"}}


def answer(message: dict) -> dict:
    method = message["method"]
    if method == "initialize":
        version = message.get("params", {}).get("protocolVersion", "2025-11-25")
        result = {"protocolVersion": version, "capabilities": {"tools": {}}, "serverInfo": {"name": "echo"}}
    elif method == "tools/list":
        result = {"tools": [TOOL]}
    elif method == "tools/call":
        text = json.dumps(message["params"].get("arguments", {}), separators=(",", ":"))
        result = {"content": [{"type": "text", "text": text}], "isError": False}
    else:
        return {"jsonrpc": "2.0", "id": message["id"], "error": {"code": -32601, "message": f"no method {method}"}}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}


def main() -> None:
    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" in message and "method" in message:
            out.write(json.dumps(answer(message), separators=(",", ":")).encode() + b"\n")
            out.flush()


if __name__ == "__main__":
    main()
