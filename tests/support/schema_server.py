"""A local OpenAI-compatible server that enforces ``response_format`` the way a grammar-constrained server does.

No real OpenAI-compatible server that enforces ``response_format`` (such as
llama.cpp's ``llama-server``) installs on this machine from the registries
it reaches: ``llama-cpp-python`` has no wheel on PyPI (building it from
source takes longer than a test run), Debian 12 has no ``llama.cpp``
package, and no package ships a small model. This server stands in for one
over real sockets on 127.0.0.1 (port 0). It plays the part of the grammar:

- ``response_format`` ``json_schema``: the schema must compile
  (``jsonschema``), and with ``"strict": true`` it must follow OpenAI's
  strict rules (every object closed, every property required), else a 400
  shaped like OpenAI's errors. The answer is generated *from the schema*
  (a small instance that conforms), checked against it, and sent as the
  message content. With ``support_response_format=False`` the field is
  refused with a 400, as servers without it do.
- a forced ``tool_choice`` (or ``"required"`` with a single tool named
  ``final_result``): a tool call whose arguments are generated from the
  tool's parameters.
- a system prompt holding a JSON Schema after a blank line (the prompted
  mode): the answer is generated from it, wrapped in a code fence as small
  models like to.
- anything else: the text ``"ok"``.

Streamed requests (``"stream": true``) get the same answer as Chat
Completions chunks, then ``data: [DONE]``. Every request body is recorded.

Ownership: :class:`SchemaServer` owns the serving thread and its
per-connection threads (daemons); :meth:`SchemaServer.stop` shuts down,
closes the socket and joins them with a bound.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional

import jsonschema

__all__ = ["SchemaServer", "instance_of"]

#: How long stop() waits for the serving thread.
JOIN_TIMEOUT = 5.0


def instance_of(schema: Dict[str, Any], root: Optional[Dict[str, Any]] = None) -> Any:
    """Return a small JSON value that conforms to ``schema`` (the subset structured output uses)."""
    root = schema if root is None else root
    if "$ref" in schema:
        target: Any = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            if part:
                target = target[part]
        return instance_of(target, root)
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][0]
    for key in ("anyOf", "oneOf"):
        if key in schema:
            return instance_of(schema[key][0], root)
    if "allOf" in schema:
        return instance_of(schema["allOf"][0], root)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        required = schema.get("required", list(properties))
        return {name: instance_of(properties[name], root) for name in required if name in properties}
    if kind == "array":
        return [instance_of(schema.get("items", {"type": "string"}), root) for _ in range(schema.get("minItems", 1))]
    if kind == "string":
        return "x" * max(1, schema.get("minLength", 1))
    if kind == "integer":
        return int(schema.get("minimum", 1))
    if kind == "number":
        return float(schema.get("minimum", 1.5))
    if kind == "boolean":
        return True
    return None


def _strict_problems(schema: Any, path: str = "$") -> List[str]:
    problems: List[str] = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            if schema.get("additionalProperties") is not False:
                problems.append(f"{path}: additionalProperties must be false in strict mode")
            if sorted(schema.get("required", [])) != sorted(schema.get("properties", {})):
                problems.append(f"{path}: every property must be required in strict mode")
        for key, value in schema.items():
            if key not in ("enum", "const", "default"):
                problems.extend(_strict_problems(value, f"{path}.{key}"))
    elif isinstance(schema, list):
        for i, item in enumerate(schema):
            problems.extend(_strict_problems(item, f"{path}[{i}]"))
    return problems


class _Refused(Exception):
    def __init__(self, message: str, param: Optional[str] = None) -> None:
        super().__init__(message)
        self.param = param


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length))
        owner = self.server.owner
        with owner.lock:
            owner.requests.append(body)
        try:
            message = owner.answer(body)
        except _Refused as exc:
            error = {"error": {"message": str(exc), "type": "invalid_request_error", "param": exc.param,
                               "code": None}}
            self._send(400, "application/json", json.dumps(error).encode())
            return
        finish = "tool_calls" if message.get("tool_calls") else "stop"
        base = {"id": "chatcmpl-local", "created": 1, "model": body.get("model", "local")}
        usage = {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17}
        if not body.get("stream"):
            payload = {**base, "object": "chat.completion", "usage": usage,
                       "choices": [{"index": 0, "message": {"role": "assistant", **message}, "finish_reason": finish}]}
            self._send(200, "application/json", json.dumps(payload).encode())
            return
        delta: Dict[str, Any] = {"role": "assistant", "content": message.get("content")}
        if message.get("tool_calls"):
            delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(message["tool_calls"])]
        chunk = {**base, "object": "chat.completion.chunk"}
        chunks = [
            {**chunk, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
            {**chunk, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
            {**chunk, "choices": [], "usage": usage},
        ]
        data = "".join(f"data: {json.dumps(c)}\n\n" for c in chunks) + "data: [DONE]\n\n"
        self._send(200, "text/event-stream", data.encode())

    def _send(self, status: int, content_type: str, data: bytes) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    block_on_close = True

    def __init__(self, owner: SchemaServer) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.owner = owner


class SchemaServer:
    """The server; use as a context manager. ``url`` is the ``base_url`` for ``OpenAIProvider``.

    Args:
        support_response_format: False makes ``response_format`` a 400, as
            on servers without native structured output.
    """

    def __init__(self, *, support_response_format: bool = True) -> None:
        self.support_response_format = support_response_format
        self.requests: List[Dict[str, Any]] = []
        self.lock = threading.Lock()
        self._server = _Server(self)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.05},
                                        name="schema-server", daemon=True)

    def __enter__(self) -> SchemaServer:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop serving, close the socket and join the threads."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(JOIN_TIMEOUT)

    def answer(self, body: Dict[str, Any]) -> Dict[str, Any]:
        """Return the assistant message for a request body (or raise _Refused)."""
        response_format = body.get("response_format")
        if response_format is not None:
            if not self.support_response_format:
                raise _Refused("response_format is not supported by this server", "response_format")
            spec = response_format["json_schema"]
            schema = spec["schema"]
            try:
                jsonschema.Draft202012Validator.check_schema(schema)
            except jsonschema.SchemaError as exc:
                raise _Refused(f"Invalid schema for response_format '{spec['name']}': {exc.message}",
                               "response_format") from None
            if spec.get("strict"):
                problems = _strict_problems(schema)
                if problems:
                    raise _Refused(f"Invalid schema for response_format '{spec['name']}': {problems[0]}",
                                   "response_format")
            value = instance_of(schema)
            jsonschema.validate(value, schema)
            return {"content": json.dumps(value)}
        forced = self._forced_tool(body)
        if forced is not None:
            arguments = instance_of(forced["function"]["parameters"])
            jsonschema.validate(arguments, forced["function"]["parameters"])
            return {"content": None, "tool_calls": [{"id": f"call_{len(self.requests)}", "type": "function",
                                                     "function": {"name": forced["function"]["name"],
                                                                  "arguments": json.dumps(arguments)}}]}
        system = next((m["content"] for m in body["messages"] if m["role"] == "system"), "")
        if "JSON Schema" in system:
            schema = json.loads(system[system.index("\n\n") + 2:])
            return {"content": f"```json\n{json.dumps(instance_of(schema))}\n```"}
        return {"content": "ok"}

    @staticmethod
    def _forced_tool(body: Dict[str, Any]) -> Optional[Dict[str, Any]]:
        tools = body.get("tools") or []
        choice = body.get("tool_choice")
        if isinstance(choice, dict):
            return next((t for t in tools if t["function"]["name"] == choice["function"]["name"]), None)
        if choice == "required":
            return next((t for t in tools if t["function"]["name"] == "final_result"), None)
        return None
