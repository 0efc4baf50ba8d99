"""Stream agent turns to the browser as Server-Sent Events, with Flask.

``POST /chat/<conversation_id>`` with the JSON body ``{"message": "..."}``
answers with ``text/event-stream``: one SSE event per stream event (its
``type`` as the SSE event name, ``event.to_dict()`` as JSON data), then a
final ``done`` event (``turn_index``, and ``cost_usd``: the sum of the
turn's ``cost_update`` events). ``GET /`` serves a small page that uses it.

One :class:`~agcore_sync.AgentSession` per conversation id lives in memory,
in a dict behind a lock, so the next message on the same id continues the
conversation. A session runs one turn at a time: a message sent while the
previous answer is still streaming gets ``409 Conflict``. (Keep sessions in
a store of your own with ``session.to_dict()`` / ``AgentSession.from_dict``
when several worker processes serve the app.)

A client that goes away stops its turn: the server notices on its next
write, closes the response iterator, and the generator's ``finally`` closes
the stream, so the worker starts no further provider call or tool.

Needs Flask: ``pip install -e ".[flask]"`` (from your clone). Run it against OpenAI (or
any OpenAI-compatible server via ``OPENAI_BASE_URL``), or without a key against
the built-in scripted demo model, which calls the tools as a real model would::

    python docs/examples/flask_app.py --port 5000        # or HOST / PORT in the environment
    flask --app docs/examples/flask_app.py run --port 5000   # the same app through Flask's CLI
    curl -N localhost:5000/chat/demo -H 'Content-Type: application/json' \\
         -d '{"message": "What is 17 * 23?"}'
"""

from __future__ import annotations

import argparse
import json
import os
import threading
from typing import Callable, Dict, Iterator, Optional

try:
    from flask import Flask, Response, jsonify, request
except ImportError as exc:  # checked by tests/examples/test_flask_app_command.py
    raise ImportError('docs/examples/flask_app.py needs Flask, the optional `flask` extra: '
                      'pip install -e ".[flask]"') from exc

from agcore_sync import (
    AgentError,
    AgentSession,
    CostUpdate,
    CycleConfig,
    LlmProvider,
    OpenAIProvider,
    ToolRegistry,
    TurnStream,
)
from agcore_sync.cli.demo import DemoProvider, demo_tools

#: ``provider_factory(conversation_id)`` returns the provider of a new conversation.
ProviderFactory = Callable[[str], LlmProvider]
#: ``registry_factory()`` returns the tools every conversation shares.
RegistryFactory = Callable[[], ToolRegistry]
#: ``on_stream(conversation_id, stream)`` is told of every stream the app starts.
StreamHook = Callable[[str, TurnStream], None]

#: Events a slow browser may fall behind by before the worker waits for it.
MAX_BUFFERED_EVENTS = 64


class ChatState:
    """The app's sessions, one per conversation id, and the shared tools.

    Stored as ``app.extensions["agcore_chat"]``; call :meth:`close` when the
    app shuts down.
    """

    def __init__(self, provider_factory: ProviderFactory, registry: ToolRegistry, config: CycleConfig,
                 system_prompt: Optional[str]) -> None:
        self.provider_factory = provider_factory
        self.registry = registry
        self.config = config
        self.system_prompt = system_prompt
        self.sessions: Dict[str, AgentSession] = {}
        self.lock = threading.Lock()

    def session(self, conversation_id: str) -> AgentSession:
        """Return the session of ``conversation_id``, creating it on first use."""
        with self.lock:
            session = self.sessions.get(conversation_id)
            if session is None:
                session = self.sessions[conversation_id] = AgentSession(
                    self.provider_factory(conversation_id), self.config, self.registry,
                    system_prompt=self.system_prompt)
            return session

    def close(self) -> None:
        """Close the shared tool registry."""
        self.registry.close()


def sse(event_name: str, data: dict) -> bytes:
    """Return one Server-Sent Event; JSON never contains a raw newline, so one data line suffices."""
    return f"event: {event_name}\ndata: {json.dumps(data)}\n\n".encode()


def stream_events(session: AgentSession, stream: TurnStream) -> Iterator[bytes]:
    """Yield the turn's events as SSE bytes; closing this generator closes the stream.

    The ``done`` event's ``cost_usd`` is the turn's cost: the sum of its
    ``cost_update`` events, so the two always agree (None when a call had
    no price).
    """
    turn_cost: Optional[float] = 0.0
    try:
        for event in stream:
            if isinstance(event, CostUpdate):
                turn_cost = None if turn_cost is None or event.cost_usd is None else turn_cost + event.cost_usd
            yield sse(event.type, event.to_dict())
        yield sse("done", {"turn_index": session.turn_index, "cost_usd": turn_cost})
    finally:
        # Runs on exhaustion, and when the server closes the response because
        # the client went away (GeneratorExit at the yield above).
        stream.close()


def create_app(provider_factory: Optional[ProviderFactory] = None,
               registry_factory: Optional[RegistryFactory] = None, *,
               config: Optional[CycleConfig] = None, system_prompt: Optional[str] = None,
               max_buffered_events: int = MAX_BUFFERED_EVENTS, on_stream: Optional[StreamHook] = None) -> Flask:
    """Build the chat app.

    Args:
        provider_factory: makes the provider of each new conversation (None:
            OpenAI when ``OPENAI_API_KEY`` is set, else the scripted demo model).
        registry_factory: makes the tools, once, shared by every conversation
            (None: the demo tools, with the default provider; else no tools).
        config: the cycle settings of every session.
        system_prompt: the system prompt of every session.
        max_buffered_events: how far a turn may run ahead of its client.
        on_stream: called with each stream the app starts (tests use it to
            watch the worker threads).
    """
    if provider_factory is None:
        provider_factory, registry_factory = demo_provider, registry_factory or demo_registry
    app = Flask(__name__)
    state = ChatState(provider_factory, registry_factory() if registry_factory else ToolRegistry(),
                      config or CycleConfig(), system_prompt)
    app.extensions["agcore_chat"] = state

    @app.get("/")
    def index() -> str:
        return PAGE

    @app.post("/chat/<conversation_id>")
    def chat(conversation_id: str):
        body = request.get_json(silent=True)
        message = body.get("message") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message.strip():
            return jsonify(error='send a JSON body {"message": "..."}'), 400
        session = state.session(conversation_id)
        try:
            stream = session.submit_turn_stream(message, max_buffered_events=max_buffered_events)
        except AgentError as exc:  # a turn of this conversation is still streaming
            return jsonify(error=str(exc)), 409
        if on_stream is not None:
            on_stream(conversation_id, stream)
        response = Response(stream_events(session, stream), mimetype="text/event-stream",
                            headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
        # Also close the stream if the server drops the response before iterating it.
        response.call_on_close(stream.close)
        return response

    return app


PAGE = """<!doctype html>
<meta charset="utf-8"><title>agcore_sync chat</title>
<form id="f"><input id="m" size="60" autofocus placeholder="Ask something"><button>Send</button></form>
<pre id="out"></pre>
<script>
const out = document.getElementById("out"), conversation = crypto.randomUUID();
document.getElementById("f").onsubmit = async (e) => {
  e.preventDefault();
  const input = document.getElementById("m"), message = input.value; input.value = "";
  out.textContent += "\\n> " + message + "\\n";
  const response = await fetch("/chat/" + conversation, {method: "POST",
    headers: {"Content-Type": "application/json"}, body: JSON.stringify({message})});
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const {value, done} = await reader.read();
    if (done) break;
    buffer += value;
    let end;
    while ((end = buffer.indexOf("\\n\\n")) >= 0) {
      const data = buffer.slice(0, end).split("\\n").find(l => l.startsWith("data: "));
      buffer = buffer.slice(end + 2);
      const event = data ? JSON.parse(data.slice(6)) : {};
      if (event.type === "text_delta") out.textContent += event.text;
      if (event.type === "tool_execution_started") out.textContent += `\\n[${event.tool_name}(${event.arguments})]`;
      if (event.type === "tool_execution_completed") out.textContent += ` -> ${event.result_summary}\\n`;
      if (event.type === "error") out.textContent += `\\n[error: ${event.message}]\\n`;
    }
  }
};
</script>
"""


def demo_provider(conversation_id: str) -> LlmProvider:
    """OpenAI when ``OPENAI_API_KEY`` is set, else the scripted demo model (it calls the tools)."""
    if os.environ.get("OPENAI_API_KEY"):
        return OpenAIProvider(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return DemoProvider()


def demo_registry() -> ToolRegistry:
    """The demo tools: add, multiply, word_count, utc_now, sleep_ms."""
    registry = ToolRegistry()
    registry.register_all(demo_tools())
    return registry


def main(argv: Optional[list] = None) -> None:
    """Serve the app: ``--host`` / ``--port``, defaulting to ``HOST`` / ``PORT`` or 127.0.0.1:5000."""
    parser = argparse.ArgumentParser(description="The agcore_sync Flask chat example.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "5000")))
    args = parser.parse_args(argv)
    create_app().run(host=args.host, port=args.port, threaded=True)


if __name__ == "__main__":
    main()
