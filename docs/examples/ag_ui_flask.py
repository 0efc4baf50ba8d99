"""An AG-UI agent endpoint in Flask: any AG-UI client (CopilotKit, @ag-ui/client's HttpAgent) can talk to it.

Run it from the repository root (extra ``flask``)::

    pip install -e ".[flask]"
    flask --app docs/examples/ag_ui_flask.py run

and point an ``HttpAgent`` at ``http://127.0.0.1:5000/agent``. The client
posts a ``RunAgentInput``; the answer is the run's AG-UI events. A run whose
``multiply`` call waits for a human ends with an ``interrupt`` outcome; the
client's next run sends ``resume: [{"interruptId": ..., "status":
"resolved", "payload": {"approved": true}}]`` and the turn goes on. Sessions
are kept in this process, one per ``threadId`` (run one process, or keep them
in a store as docs/examples/ai_sdk_django does).
"""

from __future__ import annotations

import threading
from typing import Dict

from agcore_sync import AgentSession, FunctionTool, ToolRegistry
from agcore_sync.cli.demo import DemoProvider, demo_tools
from agcore_sync.ui import UiRequestError, ag_ui_decisions, from_ag_ui, to_ag_ui

try:
    from flask import Flask, Response, jsonify, request
except ImportError as exc:  # pragma: no cover - depends on the extra
    raise ImportError('this example needs Flask: pip install -e ".[flask]"') from exc


def new_session() -> AgentSession:
    """A new thread's session: the scripted demo model and the demo tools, ``multiply`` behind an approval."""
    registry = ToolRegistry()
    for demo in demo_tools():
        if demo.name == "multiply":
            demo = FunctionTool(demo.func, name=demo.name, description=demo.description, requires_approval=True)
        registry.register(demo)
    return AgentSession(DemoProvider(), registry=registry, system_prompt="Use the tools for arithmetic.")


def create_app() -> Flask:
    """Build the app (``flask --app docs/examples/ag_ui_flask.py run``)."""
    app = Flask(__name__)
    sessions: Dict[str, AgentSession] = app.extensions.setdefault("ag_ui_sessions", {})
    lock = threading.Lock()

    @app.errorhandler(UiRequestError)
    def bad_request(exc: UiRequestError) -> Response:
        return jsonify(error=str(exc)), 400

    @app.post("/agent")
    def run() -> Response:
        run_input = request.get_json(silent=True)
        decisions = ag_ui_decisions(run_input)  # checks the body too: a 400 names the bad field
        messages = from_ag_ui(run_input)
        with lock:
            session = sessions.setdefault(run_input["threadId"], new_session())
        if decisions:
            events = session.resume_turn_stream(decisions)
        elif messages:
            events = session.submit_turn_stream(messages[-1])
        else:
            raise UiRequestError("RunAgentInput.messages", "there is no message to answer")
        return Response(to_ag_ui(events, thread_id=run_input["threadId"], run_id=run_input["runId"]),
                        content_type="text/event-stream", headers={"Cache-Control": "no-cache"})

    return app


def close_sessions(app: Flask) -> None:
    """Close the tool registries of the app's sessions (their threads stop); call it at shutdown."""
    for session in app.extensions.get("ag_ui_sessions", {}).values():
        session.registry.close()


app = create_app()
