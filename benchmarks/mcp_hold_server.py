"""A stdio MCP server that answers ``tools/call`` in batches: K calls in flight, exactly.

Run: ``python benchmarks/mcp_hold_server.py K``. Like ``mcp_echo_server.py``
(one ``echo`` tool, stdlib only) except that it holds each ``tools/call``
until K of them are pending, then answers all K at once. A client whose K
threads each make one call therefore has all K in flight together, however
fast or slow it sends them. ``initialize`` and ``tools/list`` are answered at
once. Exits at stdin EOF.
"""

from __future__ import annotations

import json
import sys
from typing import List

from mcp_echo_server import answer


def main(batch: int) -> None:
    out = sys.stdout.buffer
    held: List[dict] = []
    for line in sys.stdin.buffer:
        message = json.loads(line)
        if "id" not in message or "method" not in message:
            continue  # notifications and stray answers
        if message["method"] != "tools/call":
            out.write(json.dumps(answer(message), separators=(",", ":")).encode() + b"\n")
            out.flush()
            continue
        held.append(message)
        if len(held) >= batch:
            out.write(b"".join(json.dumps(answer(m), separators=(",", ":")).encode() + b"\n" for m in held))
            out.flush()
            held.clear()


if __name__ == "__main__":
    main(int(sys.argv[1]))
