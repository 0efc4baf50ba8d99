"""docs/examples/ag_ui_flask.py, served on 127.0.0.1 and driven by @ag-ui/client's HttpAgent (Node)."""

from __future__ import annotations

import importlib.util
import threading
from pathlib import Path

import pytest
import requests
from werkzeug.serving import make_server

from tests.support.ui_peers import ui_client

EXAMPLE = Path(__file__).resolve().parents[2] / "docs" / "examples" / "ag_ui_flask.py"


@pytest.fixture
def agent_url():
    spec = importlib.util.spec_from_file_location("ag_ui_flask_example", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    app = module.create_app()
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, name="ag-ui-example", daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_port}/agent"
    server.shutdown()
    server.server_close()
    thread.join(10)
    assert not thread.is_alive()
    module.close_sessions(app)
    module.close_sessions(module.app)


def test_an_ag_ui_client_runs_the_example_agent_through_an_approval_interrupt(agent_url):
    user = {"id": "u1", "role": "user", "content": "What is 17 * 23?"}
    first = ui_client("ag-ui", agent_url, {"threadId": "t1", "runId": "run-1", "messages": [user]})
    assert first["errors"] == []
    outcome = first["events"][-1]["outcome"]
    assert outcome["type"] == "interrupt"
    [interrupt] = outcome["interrupts"]

    resume = [{"interruptId": interrupt["id"], "status": "resolved", "payload": {"approved": True}}]
    second = ui_client("ag-ui", agent_url, {"threadId": "t1", "runId": "run-2", "messages": first["messages"],
                                            "resume": resume})
    assert second["errors"] == []
    assert second["events"][-1]["outcome"] == {"type": "success"}
    assert [m["role"] for m in second["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert second["messages"][2]["content"] == "391"
    assert "391" in second["messages"][-1]["content"]


def test_a_body_that_is_not_a_run_agent_input_is_a_400_naming_the_field(agent_url):
    answer = requests.post(agent_url, json={"threadId": "t", "runId": "r"}, timeout=30)
    assert answer.status_code == 400
    assert answer.json() == {"error": "RunAgentInput.messages: must be a list"}
