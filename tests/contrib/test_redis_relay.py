"""RedisEventRelay against a real redis-server: publish, read, SSE, Last-Event-ID, timeouts."""

from __future__ import annotations

import json
import queue
import socket
import threading
import time

import pytest
import redis
import requests
from flask import Flask, Response, request
from werkzeug.serving import make_server

from agcore_sync import AgentSession, Error, MockProvider, TextDelta, ToolRegistry, tool
from agcore_sync._http.sse import SseParser
from agcore_sync.contrib.redis import READ_BLOCK_SLICE, RedisEventRelay, RelayError
from agcore_sync.llm.events import StreamEvent

#: Bound on every wait for something that must happen.
WAIT = 10.0


@tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def turn_events(text: str = "17 * 23 = 391") -> list:
    """The events of a real streamed turn with a tool call, as a job worker would publish them."""
    provider = MockProvider([MockProvider.tool_calls(("multiply", {"a": 17, "b": 23})), MockProvider.text(text)])
    with ToolRegistry() as registry:
        registry.register(multiply)
        with AgentSession(provider, registry=registry) as session:
            return list(session.submit_turn_stream("What is 17 * 23?"))


@pytest.fixture
def relay(redis_client):
    return RedisEventRelay(redis_client)


def publish_all(relay, turn_id, events):
    ids = [relay.publish(turn_id, event) for event in events]
    relay.finish(turn_id)
    return ids


def parse_sse(chunks) -> list:
    parser = SseParser()
    events = []
    for chunk in chunks:
        events.extend(parser.feed(chunk))
    return events + parser.close()


def xread_calls(client) -> int:
    return int(client.info("commandstats").get("cmdstat_xread", {}).get("calls", 0))


# -- publish and read ---------------------------------------------------------------------


def test_a_finished_turn_reads_back_every_event_equal_in_order_with_its_entry_id(relay):
    events = turn_events() + [Error("the model went away", error=RuntimeError("boom"))]
    ids = publish_all(relay, "turn-1", events)
    assert len(set(ids)) == len(ids) and all(isinstance(i, str) for i in ids)
    got = list(relay.read("turn-1"))
    assert [entry_id for entry_id, _ in got] == ids
    assert [event for _, event in got] == events
    assert any(isinstance(e, TextDelta) for _, e in got)


def test_read_after_an_entry_id_yields_only_the_later_events(relay):
    events = turn_events()
    ids = publish_all(relay, "turn-1", events)
    got = list(relay.read("turn-1", after=ids[4]))
    assert [entry_id for entry_id, _ in got] == ids[5:]
    assert [event for _, event in got] == events[5:]
    assert list(relay.read("turn-1", after=ids[-1])) == []


def test_reading_after_the_end_mark_ends_at_once(relay):
    publish_all(relay, "turn-1", turn_events()[:2])
    end_id = relay.finish("turn-1")  # finishing again returns the same mark
    assert relay.finish("turn-1") == end_id
    assert list(relay.read("turn-1", after=end_id, timeout=WAIT)) == []


def test_a_reader_gets_live_events_as_they_are_published(relay):
    events = turn_events()[:6]
    received: queue.Queue = queue.Queue()
    errors = []

    def consume():
        try:
            for entry_id, event in relay.read("turn-1", timeout=WAIT):
                received.put((entry_id, event))
        except BaseException as exc:  # delivered to the test
            errors.append(exc)
        received.put(None)

    reader = threading.Thread(target=consume, name="test-relay-reader")
    reader.start()
    try:
        # Lockstep: each event is published only after the reader got the previous one,
        # so every one of them was read live, not after finish().
        for event in events:
            entry_id = relay.publish("turn-1", event)
            assert received.get(timeout=WAIT) == (entry_id, event)
        relay.finish("turn-1")
        assert received.get(timeout=WAIT) is None
    finally:
        reader.join(WAIT)
    assert not reader.is_alive() and errors == []


def test_a_read_with_nothing_coming_raises_timeout_error_after_timeout_seconds(relay):
    relay.publish("turn-1", TextDelta("only one"))
    started = time.monotonic()
    got = []
    with pytest.raises(TimeoutError, match="turn-1"):
        for item in relay.read("turn-1", timeout=0.4):
            got.append(item)
    elapsed = time.monotonic() - started
    assert [event for _, event in got] == [TextDelta("only one")]
    assert 0.4 <= elapsed < 0.4 + READ_BLOCK_SLICE + 2.0


def test_the_timeout_counts_from_the_last_event_not_from_the_start(relay):
    timeout = 1.0
    received: queue.Queue = queue.Queue()
    result = []

    def consume():
        try:
            for _, event in relay.read("turn-1", timeout=timeout):
                received.put(event)
            result.append("ended")
        except TimeoutError:
            result.append("timed out")
        received.put(None)

    reader = threading.Thread(target=consume, name="test-relay-reader")
    reader.start()
    try:
        for i in range(4):  # about 4 x 0.4 s in all: longer than the timeout, each gap shorter
            threading.Event().wait(0.4)  # time passing is the behaviour under test
            relay.publish("turn-1", TextDelta(str(i)))
            assert received.get(timeout=WAIT) == TextDelta(str(i))
        relay.finish("turn-1")
        assert received.get(timeout=WAIT) is None
    finally:
        reader.join(WAIT)
    assert result == ["ended"]


def test_a_blocked_read_waits_in_the_server_and_does_not_busy_loop(relay, redis_client):
    before = xread_calls(redis_client)
    with pytest.raises(TimeoutError):
        list(relay.read("turn-quiet", timeout=2.5))
    calls = xread_calls(redis_client) - before
    # 2.5 s in slices of READ_BLOCK_SLICE (1 s): three XREADs, not thousands.
    assert 1 <= calls <= 2.5 / READ_BLOCK_SLICE + 2


def test_a_client_with_a_short_socket_timeout_reads_in_shorter_slices(make_client, redis_client):
    relay = RedisEventRelay(make_client(socket_timeout=0.5))
    before = xread_calls(redis_client)
    with pytest.raises(TimeoutError):
        list(relay.read("turn-quiet", timeout=1.2))  # slices of 0.25 s stay under the socket timeout
    assert xread_calls(redis_client) - before >= 3


def test_the_stream_expires_ttl_seconds_after_its_last_append(redis_client):
    relay = RedisEventRelay(redis_client, ttl=60)
    relay.publish("turn-1", TextDelta("x"))
    assert 59_000 < redis_client.pttl("agcore:turn:{turn-1}") <= 60_000
    RedisEventRelay(redis_client, ttl=None).publish("turn-2", TextDelta("x"))
    assert redis_client.pttl("agcore:turn:{turn-2}") == -1


def test_a_publish_whose_reply_was_lost_and_that_redis_py_sent_again_appends_once(lossy_client, redis_client):
    proxy, client = lossy_client
    relay = RedisEventRelay(client)
    relay.publish("warm-up", TextDelta("x"))  # the script is in the server now: a publish is one EVALSHA
    first = relay.publish("t1", TextDelta("a"))
    proxy.lose_next_reply(b"turn:{t1}")
    second = relay.publish("t1", TextDelta("b"))
    assert proxy.reply_lost.is_set()
    third = relay.publish("t1", TextDelta("b"))  # the same event again, published again: a new entry
    relay.finish("t1")
    assert [entry_id for entry_id, _ in relay.read("t1", timeout=5)] == [first, second, third]
    assert [event.text for _, event in relay.read("t1", timeout=5)] == ["a", "b", "b"]


def test_publishing_after_finish_is_refused(relay):
    relay.publish("turn-1", TextDelta("a"))
    relay.finish("turn-1")
    with pytest.raises(RelayError, match="finished") as caught:
        relay.publish("turn-1", TextDelta("late"))
    assert caught.value.turn_id == "turn-1"
    assert [event for _, event in relay.read("turn-1")] == [TextDelta("a")]


def test_a_client_that_decodes_responses_reads_the_same(make_client, redis_client):
    relay = RedisEventRelay(make_client(decode_responses=True))
    events = turn_events()
    ids = publish_all(relay, "turn-1", events)
    assert list(relay.read("turn-1")) == list(zip(ids, events))
    assert parse_sse(relay.sse("turn-1"))[-1].event == "end"


def test_an_entry_that_is_not_an_event_is_a_relay_error_naming_the_turn(relay, redis_client):
    relay.publish("turn-1", TextDelta("fine"))
    bad_id = redis_client.xadd("agcore:turn:{turn-1}", {"event": "{not json"}).decode()
    got = []
    with pytest.raises(RelayError, match=bad_id) as caught:
        for item in relay.read("turn-1", timeout=WAIT):
            got.append(item)
    assert caught.value.turn_id == "turn-1" and len(got) == 1
    redis_client.xadd("agcore:turn:{turn-2}", {"event": '{"type": "no_such_event"}'})
    with pytest.raises(RelayError, match="not a stream event"):
        list(relay.read("turn-2", timeout=WAIT))


def test_bad_arguments_are_refused_at_the_call(relay, redis_client):
    with pytest.raises(TypeError, match="StreamEvent"):
        relay.publish("turn-1", {"type": "text_delta", "text": "a dict"})
    with pytest.raises(TypeError, match="turn_id"):
        relay.publish(7, TextDelta("x"))
    with pytest.raises(ValueError, match="turn_id"):
        relay.read("")
    with pytest.raises(ValueError, match="after"):
        relay.read("turn-1", after="yesterday")
    with pytest.raises(ValueError, match="last_event_id"):
        relay.sse("turn-1", last_event_id="1-2-3")
    with pytest.raises(ValueError, match="timeout"):
        relay.read("turn-1", timeout=0)
    with pytest.raises(TypeError, match="redis.Redis"):
        RedisEventRelay(object())
    with pytest.raises(ValueError, match="ttl"):
        RedisEventRelay(redis_client, ttl=-5)
    assert redis_client.keys("*") == []


def test_a_server_that_is_gone_is_a_relay_error_with_the_cause_chained():
    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=2)
    try:
        relay = RedisEventRelay(client)
        with pytest.raises(RelayError, match="turn-1") as caught:
            relay.publish("turn-1", TextDelta("x"))
        assert isinstance(caught.value.__cause__, redis.ConnectionError)
        with pytest.raises(RelayError):
            list(relay.read("turn-1", timeout=WAIT))
    finally:
        client.close()


# -- Server-Sent Events -----------------------------------------------------------------------


def test_sse_frames_are_an_id_line_a_data_line_and_a_blank_line_then_an_end_event(relay):
    events = turn_events()[:3]
    ids = publish_all(relay, "turn-1", events)
    frames = list(relay.sse("turn-1"))
    assert frames[:-1] == [f"id: {i}\ndata: ".encode() + _json(e) + b"\n\n" for i, e in zip(ids, events)]
    assert frames[-1] == b"event: end\ndata: {}\n\n"
    parsed = parse_sse(frames)
    assert [StreamEvent.from_dict(json.loads(p.data)) for p in parsed[:-1]] == events
    assert [p.id for p in parsed[:-1]] == ids
    assert parsed[-1].id == ids[-1]  # the end frame has no id: Last-Event-ID stays on the last event


def test_sse_with_last_event_id_resumes_after_it_and_an_empty_header_starts_over(relay):
    events = turn_events()
    ids = publish_all(relay, "turn-1", events)
    resumed = parse_sse(relay.sse("turn-1", last_event_id=ids[2]))
    assert [p.id for p in resumed[:-1]] == ids[3:]
    assert len(parse_sse(relay.sse("turn-1", last_event_id=""))) == len(events) + 1
    after_the_end = parse_sse(relay.sse("turn-1", last_event_id=ids[-1]))
    assert [p.event for p in after_the_end] == ["end"]


@pytest.mark.parametrize("bad", ["١٧٠٠٠٠٠٠٠٠٠٠٠-٠", "1700000000000-0\n", " 1-0", "1700000000000", "1-2-3", "-1-0",
                                 "18446744073709551616-0", "1-18446744073709551616", "", b"\xff-1", 1700])
def test_a_malformed_last_event_id_raises_value_error_at_the_call_before_any_redis_call(relay, redis_client, bad):
    publish_all(relay, "turn-1", turn_events()[:2])
    calls = redis_client.info("stats")["total_commands_processed"]
    if bad != "":  # "" means "from the start" for sse (a browser's empty header)
        with pytest.raises(ValueError, match="last_event_id must be a Redis stream entry id"):
            relay.sse("turn-1", last_event_id=bad)
    with pytest.raises(ValueError, match="after must be a Redis stream entry id"):
        relay.read("turn-1", after=bad)
    assert redis_client.info("stats")["total_commands_processed"] == calls + 1  # the INFO itself


def test_an_id_that_is_not_an_entry_of_this_turn_raises_value_error_at_the_call_even_while_it_runs(relay):
    other = publish_all(relay, "turn-2", turn_events()[:2])  # another turn's ids
    mine = relay.publish("turn-1", TextDelta("a"))  # turn-1 runs: no end mark yet
    future = f"{int(mine.split('-')[0]) + 60_000}-0"
    for entry_id, turn in ((other[0], "turn-1"), (future, "turn-1"), (mine, "never-existed")):
        with pytest.raises(ValueError, match=f"is not an entry of turn '{turn}'"):
            relay.sse(turn, last_event_id=entry_id, timeout=WAIT)
        with pytest.raises(ValueError, match=f"is not an entry of turn '{turn}'"):
            relay.read(turn, after=entry_id, timeout=WAIT)
    relay.finish("turn-1")
    with pytest.raises(ValueError, match="is not an entry"):  # before the end, not an entry: still refused
        relay.read("turn-1", after="0-1")


def test_an_id_at_or_after_the_end_of_a_finished_turn_returns_at_once(relay):
    ids = publish_all(relay, "turn-1", turn_events()[:2])
    end_id = relay.finish("turn-1")
    later = f"{int(end_id.split('-')[0]) + 60_000}-0"
    for entry_id in (end_id, later, "18446744073709551615-18446744073709551615"):
        assert list(relay.read("turn-1", after=entry_id)) == []  # no timeout: it must not wait
        assert list(relay.sse("turn-1", last_event_id=entry_id)) == [b"event: end\ndata: {}\n\n"]
    assert [entry_id for entry_id, _ in relay.read("turn-1", after=ids[0])] == ids[1:]


def _json(event) -> bytes:
    return json.dumps(event.to_dict(), ensure_ascii=False, separators=(",", ":")).encode()


class SseApp:
    """A Flask app serving ``relay.sse`` on 127.0.0.1, as a web process of a background turn would."""

    def __init__(self, relay: RedisEventRelay) -> None:
        app = Flask(__name__)

        @app.get("/turns/<turn_id>/events")
        def events(turn_id):
            body = relay.sse(turn_id, request.headers.get("Last-Event-ID"), timeout=WAIT)
            return Response(body, mimetype="text/event-stream", headers={"Cache-Control": "no-cache"})

        self._before = set(threading.enumerate())
        self._server = make_server("127.0.0.1", 0, app, threaded=True)
        self.url = f"http://127.0.0.1:{self._server.server_port}"
        self._thread = threading.Thread(target=self._server.serve_forever, name="test-relay-sse-server")
        self._thread.start()

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(WAIT)
        for thread in set(threading.enumerate()) - self._before:
            thread.join(WAIT)
            assert not thread.is_alive(), thread.name


def test_a_browser_that_reconnects_mid_stream_gets_every_event_once(relay):
    events = turn_events()
    server = SseApp(relay)
    seen = []  # (id, event) in the order the "browser" got them
    try:
        # The job worker publishes the first half; the browser reads three events and drops the connection.
        first_half = events[: len(events) // 2]
        for event in first_half:
            relay.publish("turn-1", event)
        with requests.get(f"{server.url}/turns/turn-1/events", stream=True, timeout=WAIT) as response:
            parser = SseParser()
            for chunk in response.iter_content(chunk_size=None):
                for sse in parser.feed(chunk):
                    seen.append((sse.id, sse.data))
                if len(seen) >= 3:
                    break
        assert len(seen) >= 3
        # While it is away the turn goes on and ends.
        for event in events[len(first_half):]:
            relay.publish("turn-1", event)
        relay.finish("turn-1")
        # It reconnects with Last-Event-ID, as EventSource does.
        headers = {"Last-Event-ID": seen[-1][0]}
        with requests.get(f"{server.url}/turns/turn-1/events", headers=headers, stream=True,
                          timeout=WAIT) as response:
            rest = parse_sse(response.iter_content(chunk_size=None))
    finally:
        server.stop()
    assert rest[-1].event == "end"
    seen += [(sse.id, sse.data) for sse in rest[:-1]]
    ids = [entry_id for entry_id, _ in seen]
    assert len(ids) == len(set(ids)) == len(events)
    assert [StreamEvent.from_dict(json.loads(data)) for _, data in seen] == events
