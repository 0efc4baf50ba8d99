"""Server-to-client requests: ping, roots, elicitation, sampling, unknown methods; both eras."""

from __future__ import annotations

import json
import threading

import pytest

from agcore_sync.tools.error import McpError

SCHEMA = {
    "type": "object",
    "properties": {
        "name": {"type": "string"},
        "color": {"type": "string", "default": "blue"},
        "count": {"type": "integer", "default": 3},
    },
    "required": ["name"],
}
ROOTS = [{"uri": "file:///work/project", "name": "project"}]


def ask(client, method, params=None):
    """Make the raw server send ``method`` to the client; return the client's answer."""
    return json.loads(client.call_tool("ask", {"method": method, "params": params or {}}).text)


def reply(text="sampled"):
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "test-model"}


class Recorder:
    """A handler that records its params and the thread it ran on."""

    def __init__(self, result):
        self.result = result
        self.calls = []
        self.threads = []

    def __call__(self, params):
        self.calls.append(params)
        self.threads.append(threading.current_thread().name)
        return self.result(params) if callable(self.result) else self.result


def test_ping_is_answered_with_an_empty_result(open_client, raw_server):
    with open_client(raw_server) as client:
        assert ask(client, "ping") == {"id": "srv-1", "result": {}}


def test_roots_list_is_answered_from_roots(open_client, raw_server):
    with open_client(raw_server, roots=ROOTS) as client:
        assert ask(client, "roots/list")["result"] == {"roots": ROOTS}


def test_roots_list_without_roots_gets_method_not_found(open_client, raw_server):
    with open_client(raw_server) as client:
        assert ask(client, "roots/list")["error"]["code"] == -32601


def test_elicitation_goes_to_its_handler_on_the_worker_thread_and_defaults_are_filled(open_client, raw_server):
    handler = Recorder({"action": "accept", "content": {"name": "Ada", "count": 7}})
    with open_client(raw_server, elicitation_handler=handler) as client:
        params = {"mode": "form", "message": "Your preferences?", "requestedSchema": SCHEMA}
        answer = ask(client, "elicitation/create", params)
    assert handler.calls == [params]
    assert answer["result"] == {"action": "accept", "content": {"name": "Ada", "count": 7, "color": "blue"}}
    assert handler.threads[0].startswith("agcore-mcp-worker-")


def test_a_declined_elicitation_is_passed_through_without_content(open_client, raw_server):
    with open_client(raw_server, elicitation_handler=lambda params: {"action": "decline"}) as client:
        answer = ask(client, "elicitation/create", {"message": "?", "requestedSchema": SCHEMA})
    assert answer["result"] == {"action": "decline"}


def test_sampling_goes_to_its_handler_which_may_call_the_server_again(open_client, raw_server):
    # Handlers never run on the reader thread: one that waits for another
    # answer from the same server would deadlock there.
    box = {}

    def sample(params):
        box["thread"] = threading.current_thread().name
        return reply(box["client"].call_tool("echo", {"text": "nested"}).text)

    with open_client(raw_server, sampling_handler=sample) as client:
        box["client"] = client
        answer = ask(client, "sampling/createMessage", {"messages": [], "maxTokens": 5})
    assert answer["result"] == reply("nested")
    assert box["thread"].startswith("agcore-mcp-worker-")


@pytest.mark.parametrize("method", ["elicitation/create", "sampling/createMessage", "resources/whatever", "x/y"])
def test_requests_without_a_handler_or_unknown_get_method_not_found(open_client, raw_server, method):
    with open_client(raw_server) as client:
        error = ask(client, method)["error"]
    assert error["code"] == -32601
    assert method in error["message"]


def test_a_failing_handler_becomes_an_internal_error_answer(open_client, raw_server):
    def broken(params):
        raise RuntimeError("handler exploded")

    with open_client(raw_server, sampling_handler=broken) as client:
        error = ask(client, "sampling/createMessage")["error"]
        assert client.call_tool("echo", {"text": "alive"}).text == "alive"
    assert error["code"] == -32603
    assert "handler exploded" in error["message"]


# -- the SDK server, handshake era: real server-to-client requests ----------


def test_the_sdk_server_elicits_samples_and_lists_roots_through_the_handlers(open_client, sdk_server):
    elicit = Recorder({"action": "accept", "content": {"name": "Ada"}})
    sample = Recorder(reply("hello from the model"))
    with open_client(sdk_server, elicitation_handler=elicit, sampling_handler=sample, roots=ROOTS) as client:
        assert client.call_tool("elicit").text == "action=accept name=Ada color=blue count=3"
        raw = json.loads(client.call_tool("elicit_raw").text)
        assert client.call_tool("sample", {"prompt": "hi"}).text == "test-model: hello from the model"
        assert json.loads(client.call_tool("roots").text) == [["file:///work/project", "project"]]
    # The server received the defaults from the client, not from its own model.
    assert raw == {"action": "accept", "content": {"color": "blue", "count": 3, "name": "Ada"}}
    assert sample.calls[0]["messages"] == [{"role": "user", "content": {"type": "text", "text": "hi"}}]
    assert all(name.startswith("agcore-mcp-worker-") for name in elicit.threads + sample.threads)


def test_the_sdk_server_refuses_a_tool_needing_a_capability_the_client_lacks(open_client, sdk_server):
    with open_client(sdk_server) as client:
        with pytest.raises(McpError) as caught:
            client.call_tool("sample", {"prompt": "hi"})
    assert caught.value.code == -32021  # missing required client capability


# -- the SDK server, 2026-07-28: input_required results and retries ---------


def test_input_required_results_are_answered_through_the_handlers_and_retried(open_client, sdk_server):
    elicit = Recorder({"action": "accept", "content": {"name": "Bo"}})
    sample = Recorder(reply("modern answer"))
    with open_client(
        sdk_server, protocol="auto", elicitation_handler=elicit, sampling_handler=sample, roots=ROOTS
    ) as client:
        assert client.negotiated_version == "2026-07-28"
        assert client.call_tool("elicit").text == "action=accept name=Bo color=blue count=3"
        assert client.call_tool("sample", {"prompt": "hey"}).text == "test-model: modern answer"
        assert json.loads(client.call_tool("roots").text) == [["file:///work/project", "project"]]
        calls = client.transport.requests("tools/call")
    assert [call["params"]["name"] for call in calls] == ["elicit", "elicit", "sample", "sample", "roots", "roots"]
    first, retry = calls[0]["params"], calls[1]["params"]
    assert "inputResponses" not in first and "requestState" not in first
    assert retry["arguments"] == first["arguments"]
    assert isinstance(retry["requestState"], str) and retry["requestState"]
    (answer,) = retry["inputResponses"].values()
    assert answer == {"action": "accept", "content": {"name": "Bo", "color": "blue", "count": 3}}
    assert calls[1]["id"] != calls[0]["id"], "the retry is a new request"
    assert elicit.calls[0]["requestedSchema"]["properties"]["color"]["default"] == "blue"
    assert list(calls[5]["params"]["inputResponses"].values()) == [{"roots": ROOTS}]


def test_input_required_without_the_handler_fails_with_a_clear_error(open_client, sdk_server):
    with open_client(sdk_server, protocol="auto") as client:
        with pytest.raises(McpError) as caught:
            client.call_tool("elicit")
        assert client.call_tool("echo", {"text": "usable"}).text == "usable"
    # The SDK checks the declared capabilities before it asks.
    assert caught.value.code == -32021
