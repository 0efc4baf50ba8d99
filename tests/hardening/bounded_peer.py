"""A client against a peer that sends one endless message, measuring its own peak RSS.

Run as ``python -m tests.hardening.bounded_peer MODE LIMIT SENT`` from the
repository root; it prints one JSON line: the peak RSS (KiB, ``ru_maxrss``)
before the call and after it, the error the call ended with, and its text.
Modes:

- ``openai`` / ``anthropic``: a provider's ``chat_stream`` against a local
  server that answers with ``SENT`` bytes of one SSE ``data:`` line without
  a newline, in chunked HTTP, with ``max_event_size = LIMIT``.
- ``mcp-stdio``: ``McpClient.call_tool("big")`` against
  ``tests/mcp_servers/raw_server.py``, which answers with a ``SENT``-byte
  line, with ``StdioTransport(max_message_size=LIMIT)``.
- ``mcp-http-json`` / ``mcp-http-sse``: ``McpClient.list_tools()`` against a
  local Streamable HTTP server whose ``tools/list`` answer is a JSON body /
  one SSE event holding a tool name of ``SENT`` bytes, with
  ``HttpTransport(max_message_size=LIMIT)``.
- ``openai-error``: a provider's ``chat`` against a server that answers
  HTTP 500 with a JSON error body whose message is ``SENT`` bytes.
- ``openai-chat``: a provider's ``chat`` against a server that answers 200
  with a ``SENT``-byte JSON body, with ``max_response_size = LIMIT``.

The local servers run in this process but never hold more than one 64 KiB
piece (the same bytes object, written again and again), so what the peak
shows is the client's memory. A separate process, because ``ru_maxrss`` is
a high-water mark of the whole process.
"""

from __future__ import annotations

import json
import resource
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Dict, Optional

PIECE = b"x" * 65536


def _peak_kib() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    sent = 0
    mode = ""

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def _chunked(self, content_type: str, head: bytes, tail: bytes, status: int = 200) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Mcp-Session-Id", "s1")
        self.end_headers()
        try:
            self._chunk(head)
            remaining = self.sent
            while remaining > 0:
                piece = PIECE if remaining >= len(PIECE) else PIECE[:remaining]
                self._chunk(piece)
                remaining -= len(piece)
            self._chunk(tail)
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            pass  # the client stopped reading: what the limit is for
        self.close_connection = True

    def _chunk(self, data: bytes) -> None:
        self.wfile.write(b"%x\r\n" % len(data) + data + b"\r\n")

    def _json(self, value: Any, status: int = 200) -> None:
        body = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Mcp-Session-Id", "s1")
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        self.send_response(405)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if self.mode in ("openai", "anthropic", "gemini"):
            self._chunked("text/event-stream", b"data: ", b"\n\n")
            return
        if self.mode == "bedrock":  # one event-stream frame announcing all it sends
            import struct
            import zlib

            prelude = struct.pack(">II", self.sent + 16, 0)
            self._chunked("application/vnd.amazon.eventstream", prelude + struct.pack(">I", zlib.crc32(prelude)),
                          b"\0\0\0\0")
            return
        if self.mode == "openai-error":
            self._chunked("application/json", b'{"error":{"message":"', b'"}}', status=500)
            return
        if self.mode == "openai-chat":
            self._chunked("application/json", b'{"id":"x","object":"chat.completion","choices":[],"pad":"', b'"}')
            return
        method = body.get("method")
        if "id" not in body:
            self.send_response(202)
            self.send_header("Content-Length", "0")
            self.end_headers()
            return
        if method == "initialize":
            self._json({"jsonrpc": "2.0", "id": body["id"], "result": {
                "protocolVersion": body["params"]["protocolVersion"], "capabilities": {"tools": {}},
                "serverInfo": {"name": "bounded-peer", "version": "1"}}})
            return
        head = b'{"jsonrpc":"2.0","id":%s,"result":{"tools":[{"name":"' % json.dumps(body["id"]).encode()
        tail = b'","inputSchema":{"type":"object"}}]}}'
        if self.mode == "mcp-http-json":
            self._chunked("application/json", head, tail)
        else:
            self._chunked("text/event-stream", b"event: message\ndata: " + head, tail + b"\n\n")


def _with_server(mode: str, sent: int, body: Callable[[str], Any]) -> Any:
    handler = type("Handler", (_Handler,), {"mode": mode, "sent": sent})
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, name="bounded-peer-server", daemon=True)
    thread.start()
    try:
        return body(f"http://127.0.0.1:{server.server_address[1]}")
    finally:
        server.shutdown()
        server.server_close()
        thread.join(10.0)


def _provider(mode: str, limit: int, url: str) -> None:
    from agcore_sync.llm.anthropic import AnthropicProvider
    from agcore_sync.llm.gemini import GeminiProvider
    from agcore_sync.llm.openai import OpenAIProvider
    from agcore_sync.llm.types import Message, MessageRequest

    if mode == "bedrock":
        from agcore_sync.llm.bedrock import BedrockProvider

        provider: Any = BedrockProvider(model="m", api_key="sk-bounded-peer-key", base_url=url)
    else:
        cls = {"openai": OpenAIProvider, "gemini": GeminiProvider}.get(mode, AnthropicProvider)
        provider = cls(model="m", api_key="sk-bounded-peer-key", base_url=url + "/v1")
    provider.max_event_size = limit
    try:
        for _event in provider.chat_stream(MessageRequest(model="m", messages=(Message.user("hi"),))):
            pass
    finally:
        provider.close()


def _chat(limit: int, url: str) -> None:
    from agcore_sync.llm.openai import OpenAIProvider
    from agcore_sync.llm.types import Message, MessageRequest

    provider = OpenAIProvider(model="m", api_key="sk-bounded-peer-key", base_url=url + "/v1")
    provider.max_response_size = limit
    try:
        provider.chat(MessageRequest(model="m", messages=(Message.user("hi"),)))
    finally:
        provider.close()


def _mcp(transport: Any, *, call_big: int = 0) -> None:
    from agcore_sync.mcp import McpClient

    with McpClient("bounded-peer", transport, timeout=60.0) as client:
        if call_big:
            client.call_tool("big", {"n": call_big})
        else:
            client.list_tools()


def main(argv: Any) -> Dict[str, Any]:
    mode, limit, sent = argv[0], int(argv[1]), int(argv[2])
    import agcore_sync.llm.anthropic  # noqa: F401 - imports done before the baseline
    import agcore_sync.llm.gemini  # noqa: F401
    import agcore_sync.llm.openai  # noqa: F401
    import agcore_sync.mcp  # noqa: F401
    from agcore_sync.mcp.transports.http import HttpTransport
    from agcore_sync.mcp.transports.stdio import StdioTransport

    before = _peak_kib()
    error: Optional[BaseException] = None
    try:
        if mode in ("openai", "anthropic", "gemini", "bedrock"):
            _with_server(mode, sent, lambda url: _provider(mode, limit, url))
        elif mode in ("openai-error", "openai-chat"):
            _with_server(mode, sent, lambda url: _chat(limit, url))
        elif mode == "mcp-stdio":
            _mcp(StdioTransport(sys.executable, ["tests/mcp_servers/raw_server.py"], max_message_size=limit),
                 call_big=sent)
        else:
            _with_server(mode, sent, lambda url: _mcp(HttpTransport(url + "/mcp", max_message_size=limit)))
    except Exception as exc:  # noqa: BLE001 - reported to the test
        error = exc
    return {"before_kib": before, "after_kib": _peak_kib(),
            "error": None if error is None else type(error).__name__,
            "message": "" if error is None else str(error)}


if __name__ == "__main__":
    print(json.dumps(main(sys.argv[1:])))
