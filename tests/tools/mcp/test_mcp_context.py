"""Server-request handlers run in a copy of the contextvars context of the thread that called connect()."""

from __future__ import annotations

import contextvars
import json
import queue
import threading

REQUEST_ID: contextvars.ContextVar[str] = contextvars.ContextVar("REQUEST_ID", default="unset")
JOIN_TIMEOUT = 10.0


def ask(client, method, params=None):
    """Make the raw server send ``method`` to the client; return the client's answer."""
    return json.loads(client.call_tool("ask", {"method": method, "params": params or {}}).text)


def sampled(text):
    return {"role": "assistant", "content": {"type": "text", "text": text}, "model": "test-model"}


def test_handlers_see_the_context_of_connect_even_after_the_caller_changed_it(open_client, raw_server):
    seen = []

    def sample(params):
        seen.append((REQUEST_ID.get(), threading.current_thread().name))
        return sampled(REQUEST_ID.get())

    def elicit(params):
        seen.append((REQUEST_ID.get(), threading.current_thread().name))
        return {"action": "decline"}

    client = open_client(raw_server, sampling_handler=sample, elicitation_handler=elicit)
    token = REQUEST_ID.set("at-connect")
    try:
        client.connect()
    finally:
        REQUEST_ID.reset(token)
    token = REQUEST_ID.set("after-connect")
    try:
        answer = ask(client, "sampling/createMessage", {"messages": [], "maxTokens": 5})
        ask(client, "elicitation/create", {"message": "?", "requestedSchema": {"type": "object"}})
    finally:
        REQUEST_ID.reset(token)
        client.close()
    assert answer["result"]["content"]["text"] == "at-connect"
    assert [value for value, _ in seen] == ["at-connect", "at-connect"]
    assert all(name.startswith("agcore-mcp-worker-") for _, name in seen)


def test_a_variable_a_handler_sets_is_seen_neither_by_the_next_handler_nor_by_the_caller(open_client, raw_server):
    seen = []

    def sample(params):
        seen.append(REQUEST_ID.get())
        REQUEST_ID.set("set-by-handler")
        return sampled("ok")

    client = open_client(raw_server, sampling_handler=sample)
    token = REQUEST_ID.set("at-connect")
    try:
        client.connect()
        ask(client, "sampling/createMessage", {"messages": [], "maxTokens": 5})
        ask(client, "sampling/createMessage", {"messages": [], "maxTokens": 5})
        assert REQUEST_ID.get() == "at-connect"
    finally:
        REQUEST_ID.reset(token)
        client.close()
    assert seen == ["at-connect", "at-connect"]


def test_the_context_is_the_connecting_threads_not_the_calling_threads(open_client, raw_server):
    seen = []
    client = open_client(raw_server, sampling_handler=lambda params: seen.append(REQUEST_ID.get()) or sampled("ok"))
    failures: queue.Queue = queue.Queue()

    def connect_in_its_own_context():
        try:
            REQUEST_ID.set("connector")
            client.connect()
        except BaseException as exc:  # noqa: BLE001 - handed to the test thread
            failures.put(exc)

    connector = threading.Thread(target=connect_in_its_own_context, name="connector")
    connector.start()
    connector.join(JOIN_TIMEOUT)
    assert not connector.is_alive()
    assert failures.empty()
    token = REQUEST_ID.set("caller")
    try:
        ask(client, "sampling/createMessage", {"messages": [], "maxTokens": 5})
    finally:
        REQUEST_ID.reset(token)
        client.close()
    assert seen == ["connector"]


def test_on_progress_and_the_sdk_servers_requests_run_in_the_context_of_connect(open_client, sdk_server):
    seen = []

    def record(kind):
        def handler(params):
            seen.append((kind, REQUEST_ID.get()))
            if kind == "sample":
                return sampled("hello")
            if kind == "elicit":
                return {"action": "accept", "content": {"name": "Ada"}}
            return None

        return handler

    client = open_client(
        sdk_server,
        on_progress=record("progress"),
        sampling_handler=record("sample"),
        elicitation_handler=record("elicit"),
    )
    token = REQUEST_ID.set("at-connect")
    try:
        client.connect()
    finally:
        REQUEST_ID.reset(token)
    try:
        assert client.call_tool("progress", {"steps": 2}).text == "2 steps"
        assert client.call_tool("sample", {"prompt": "hi"}).text == "test-model: hello"
        assert client.call_tool("elicit").text.startswith("action=accept name=Ada")
    finally:
        client.close()  # joins the worker after what is queued: every progress notification is handled
    assert sorted(seen) == [
        ("elicit", "at-connect"), ("progress", "at-connect"), ("progress", "at-connect"), ("sample", "at-connect"),
    ]
