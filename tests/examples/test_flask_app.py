"""docs/examples/flask_app.py served for real on 127.0.0.1 and read as Server-Sent Events with requests."""

from __future__ import annotations

import collections
import importlib.util
import json
import pathlib
import queue
import threading

import pytest
import requests
from werkzeug.serving import make_server

from agcore_sync._http.sse import SseParser
from agcore_sync.llm.events import (
    ContentBlockStart,
    CostUpdate,
    MessageComplete,
    MessageStart,
    StreamEvent,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, StopReason
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

#: Bound on every wait for something that must happen.
WAIT = 10.0

_PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "flask_app.py"
_spec = importlib.util.spec_from_file_location("flask_app_example", _PATH)
flask_app = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(flask_app)

EXPECTED_TYPES = (
    ["message_start", "content_block_start", "tool_call_arguments_delta*", "tool_call_end", "content_block_end",
     "cost_update", "message_complete", "tool_execution_started", "tool_execution_completed",
     "message_start", "content_block_start", "text_delta*", "content_block_end", "cost_update", "message_complete",
     "done"]
)


def collapse(types):
    out = []
    for name in types:
        if name.endswith("_delta"):
            name += "*"
            if out and out[-1] == name:
                continue
        out.append(name)
    return out


class Server:
    """The app on a werkzeug server in a thread; ``stop()`` shuts it down and joins every thread it started."""

    def __init__(self, app):
        self.app = app
        self._before = set(threading.enumerate())
        self._server = make_server("127.0.0.1", 0, app, threaded=True)  # listening once constructed
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-flask-server")
        self._stopped = False
        self._thread.start()

    def stop(self):
        if self._stopped:
            return []
        self._stopped = True
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)
        self.app.extensions["agcore_chat"].close()
        left = [t for t in set(threading.enumerate()) - self._before]
        for thread in left:  # request handlers, stream workers and tool threads must all end
            thread.join(WAIT)
        return [t.name for t in left if t.is_alive()]


@pytest.fixture
def serve():
    servers = []

    def start(*args, **kwargs):
        servers.append(Server(flask_app.create_app(*args, **kwargs)))
        return servers[-1]

    yield start
    for server in servers:
        assert server.stop() == []


def post(url, message, session=None):
    return (session or requests).post(url, json={"message": message}, stream=True, timeout=WAIT)


class SseReader:
    """Reads one response's SSE body as (sse event name, StreamEvent or the ``done`` dict) pairs."""

    def __init__(self, response):
        self._chunks = response.iter_content(chunk_size=None)
        self._parser = SseParser()
        self._ready = collections.deque()

    def read(self, until=None):
        """Return the pairs up to the end of the body, or up to the first event ``until`` accepts."""
        out = []
        while True:
            while self._ready:
                out.append(self._ready.popleft())
                if until is not None and until(out[-1][1]):
                    return out
            chunk = next(self._chunks, None)
            if chunk is None:
                return out
            for sse in self._parser.feed(chunk):
                data = json.loads(sse.data)
                self._ready.append((sse.event, data if sse.event == "done" else StreamEvent.from_dict(data)))


def events_of(response, until=None):
    return SseReader(response).read(until)


@tool
def double(n: int) -> int:
    """Double an integer."""
    return 2 * n


def test_twenty_concurrent_clients_each_get_a_complete_correctly_ordered_stream(serve):
    clients = 20
    # Every turn's tool waits here until all twenty are running at once.
    all_in_flight = threading.Barrier(clients, timeout=WAIT)

    @tool
    def double_together(n: int) -> int:
        """Double an integer, once every client's turn has got this far."""
        all_in_flight.wait()
        return 2 * n

    def provider(conversation_id):
        n = int(conversation_id.split("-")[1])
        return MockProvider([
            MockProvider.tool_calls((f"call-{n}", "double_together", {"n": n})),
            MockProvider.text(f"conversation {n}: twice {n} is {2 * n}"),
        ])

    def registry():
        reg = ToolRegistry(max_workers=clients)
        reg.register(double_together)
        return reg

    server = serve(provider, registry)
    results = {}
    start = threading.Barrier(clients, timeout=WAIT)

    def client(n):
        try:
            start.wait()
            with requests.Session() as http, post(f"{server.url}/chat/conv-{n}", f"double {n}", http) as response:
                assert response.status_code == 200
                assert response.headers["Content-Type"].startswith("text/event-stream")
                results[n] = events_of(response)
        except BaseException as exc:  # reported by the main thread
            results[n] = exc

    threads = [threading.Thread(target=client, args=(n,), name=f"test-client-{n}") for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(WAIT * 2)
    assert not any(t.is_alive() for t in threads)
    for n in range(clients):
        pairs = results[n]
        assert not isinstance(pairs, BaseException), f"client {n}: {pairs!r}"
        assert collapse([name for name, _ in pairs]) == EXPECTED_TYPES
        events = [event for _, event in pairs[:-1]]
        assert all(event.type == name for name, event in pairs[:-1])
        started = next(e for e in events if isinstance(e, ToolExecutionStarted))
        completed = next(e for e in events if isinstance(e, ToolExecutionCompleted))
        assert (started.tool_call_id, started.arguments) == (f"call-{n}", json.dumps({"n": n}))
        assert (completed.tool_call_id, completed.result_summary, completed.is_error) == (f"call-{n}", str(2 * n),
                                                                                          False)
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert text == f"conversation {n}: twice {n} is {2 * n}"
        assert events[-1].full_response.stop_reason is StopReason.STOP
        assert pairs[-1][1]["turn_index"] == 1


def test_a_client_that_disconnects_after_its_first_tool_event_stops_its_turn(serve):
    endless_closed = threading.Event()

    def endless(request):
        # Streams text forever: only a cancelled stream ever stops it.
        try:
            yield MessageStart("endless-1", "endless")
            yield ContentBlockStart(0, "text")
            while True:
                yield TextDelta("and on ")
        finally:
            endless_closed.set()

    provider = MockProvider([MockProvider.tool_calls(("c1", "double", {"n": 4})), MockProvider.stream(endless)])
    streams = queue.Queue()

    def registry():
        reg = ToolRegistry()
        reg.register(double)
        return reg

    server = serve(lambda _: provider, registry, on_stream=lambda cid, stream: streams.put((cid, stream)))
    with requests.Session() as http:
        response = post(f"{server.url}/chat/leaver", "go on forever", http)
        seen = events_of(response, until=lambda e: isinstance(e, (ToolExecutionStarted, ToolExecutionCompleted)))
        response.close()  # the browser tab is gone
    assert isinstance(seen[-1][1], ToolExecutionStarted)
    cid, stream = streams.get(timeout=WAIT)
    assert cid == "leaver"
    # Left alone, the turn would stream forever; it ends only because the server saw the client go.
    stream.worker.join(WAIT)
    assert not stream.worker.is_alive()
    # Depending on when the server's write failed, the worker stopped before the second provider
    # call or inside it; in the second case the endless provider stream was closed.
    assert len(provider.requests) in (1, 2)
    if len(provider.requests) == 2:
        assert endless_closed.wait(WAIT)
    assert server.stop() == []  # the request handler, the worker and the tool threads have all ended
    assert stream.closed
    session = server.app.extensions["agcore_chat"].sessions["leaver"]
    assert session.turn_index == 1
    assert session.messages()[0] == Message.user("go on forever")


def test_a_second_turn_on_the_same_conversation_sees_the_first_turns_messages(serve):
    provider = MockProvider([MockProvider.text("Nice to meet you, Ada."), MockProvider.text("You are Ada.")])
    server = serve(lambda _: provider)
    with requests.Session() as http:
        with post(f"{server.url}/chat/ada", "My name is Ada.", http) as first:
            first_events = events_of(first)
        with post(f"{server.url}/chat/ada", "What is my name?", http) as second:
            second_events = events_of(second)
    assert isinstance(first_events[-2][1], MessageComplete) and isinstance(second_events[-2][1], MessageComplete)
    assert [(second_events[-1][0], second_events[-1][1]["turn_index"])] == [("done", 2)]
    assert list(provider.requests[1].messages) == [
        Message.user("My name is Ada."), Message.assistant("Nice to meet you, Ada."), Message.user("What is my name?")]


def test_a_message_while_the_previous_answer_streams_is_a_conflict_and_a_bad_body_is_refused(serve):
    release = threading.Event()

    @tool
    def slow() -> str:
        """Wait until the test lets go."""
        release.wait(WAIT)
        return "finally"

    def registry():
        reg = ToolRegistry()
        reg.register(slow)
        return reg

    provider = MockProvider([MockProvider.tool_calls(("c1", "slow", {})), MockProvider.text("done")])
    server = serve(lambda _: provider, registry)
    try:
        with requests.Session() as http:
            with post(f"{server.url}/chat/busy", "first", http) as first:
                reader = SseReader(first)
                reader.read(until=lambda e: isinstance(e, ToolExecutionStarted))
                second = requests.post(f"{server.url}/chat/busy", json={"message": "second"}, timeout=WAIT)
                assert second.status_code == 409 and "turn" in second.json()["error"]
                release.set()
                rest = reader.read()
            bad = requests.post(f"{server.url}/chat/busy", json={"text": "wrong key"}, timeout=WAIT)
    finally:
        release.set()
    assert rest[-1][0] == "done" and rest[-2][1].full_response.message.text == "done"
    assert bad.status_code == 400
    assert len(provider.requests) == 2


def test_the_factory_needs_no_arguments_and_the_demo_model_calls_the_tools(serve):
    server = serve()  # what `flask --app docs/examples/flask_app.py run` calls
    pairs = events_of(post(f"{server.url}/chat/demo", "What is 17 * 23?"))
    started = [event for _, event in pairs if isinstance(event, ToolExecutionStarted)]
    completed = [event for _, event in pairs if isinstance(event, ToolExecutionCompleted)]
    assert [event.tool_name for event in started] == ["multiply"]
    assert completed[0].result_summary == "391"
    text = "".join(event.text for _, event in pairs if isinstance(event, TextDelta))
    assert "391" in text
    assert pairs[-1][0] == "done"


def test_the_done_events_cost_agrees_with_the_turns_cost_updates(serve):
    server = serve()  # the demo model: its calls report a price of 0.0, which the session's table lacks
    with post(f"{server.url}/chat/cost", "What is 2 + 3?") as response:
        events = events_of(response)
    costs = [event.cost_usd for _, event in events[:-1] if isinstance(event, CostUpdate)]
    assert len(costs) == 2 and costs == [0.0, 0.0]
    assert events[-1] == ("done", {"turn_index": 1, "cost_usd": sum(costs)})


def test_an_agent_used_as_a_tool_streams_wrapped_and_its_cost_counts_in_done(serve):
    from agcore_sync import AgentSession, SubagentEvent, Usage, agent_tool

    def research():
        return AgentSession(MockProvider([MockProvider.text("Ada Lovelace.", usage=Usage(100, 5), model="gpt-4o")]))

    def registry():
        reg = ToolRegistry()
        reg.register(agent_tool(research, name="research", description="Research."))
        return reg

    provider = MockProvider([
        MockProvider.tool_calls(("c1", "research", {"input": "first programmer?"}), usage=Usage(50, 10),
                                model="gpt-4o"),
        MockProvider.text("It was Ada Lovelace.", usage=Usage(80, 6), model="gpt-4o"),
    ])
    server = serve(lambda _: provider, registry)
    with post(f"{server.url}/chat/sub", "Who was the first programmer?") as response:
        pairs = events_of(response)
    wrapped = [event for name, event in pairs if name == "subagent_event"]
    assert wrapped and all(isinstance(event, SubagentEvent) and event.tool_call_id == "c1" for event in wrapped)
    assert "".join(e.event.text for e in wrapped if isinstance(e.event, TextDelta)) == "Ada Lovelace."
    costs = [event.innermost.cost_usd if isinstance(event, SubagentEvent) else event.cost_usd
             for _, event in pairs[:-1]
             if isinstance(event, CostUpdate) or (isinstance(event, SubagentEvent)
                                                  and isinstance(event.innermost, CostUpdate))]
    assert len(costs) == 3 and all(cost > 0 for cost in costs)
    assert pairs[-1] == ("done", {"turn_index": 1, "cost_usd": pytest.approx(sum(costs))})
    assert 'event.type === "subagent_event"' in flask_app.PAGE
