"""What both example apps must do, as functions of an HTTP client, the app's gunicorn and a relay.

``tests/webapps/test_flask_worker.py`` and ``test_django_worker.py`` run
each scenario against their app (the two apps have the same routes).
"""

from __future__ import annotations

import json
import uuid
from typing import Any, Dict, List, Tuple

import requests

from agcore_sync import TextDelta
from agcore_sync.contrib.redis import RedisEventRelay
from tests.support.webapps import Gunicorn, SseClient, read_until_end

#: How long a scenario waits for a turn's events.
TURN_TIMEOUT = 60.0

#: Seconds a request may take.
HTTP_TIMEOUT = 30.0


def with_csrf(http: requests.Session, app: Gunicorn) -> requests.Session:
    """Load the page (it sets Django's CSRF cookie) and send the token with every request, as the page does."""
    page = http.get(app.url + "/", timeout=HTTP_TIMEOUT)
    assert page.status_code == 200, page.text
    http.headers["X-CSRFToken"] = http.cookies.get("csrftoken", "")
    return http


def start_turn(http: requests.Session, app: Gunicorn, message: str) -> Tuple[Dict[str, Any], int]:
    """POST /turns; return the answer's JSON and the pid of the web process that served it."""
    response = http.post(f"{app.url}/turns", json={"message": message}, timeout=HTTP_TIMEOUT)
    assert response.status_code == 202, response.text
    return response.json(), int(response.headers["X-Worker-Pid"])


def payloads(events: List[Any]) -> List[Dict[str, Any]]:
    """The events' JSON data."""
    return [json.loads(event.data) for event in events]


def answer(events: List[Dict[str, Any]]) -> str:
    """The text the model streamed."""
    return "".join(event["text"] for event in events if event["type"] == "text_delta")


def the_page_shows_tools_approvals_and_the_answer(http: requests.Session, app: Gunicorn) -> None:
    page = http.get(app.url + "/", timeout=HTTP_TIMEOUT)
    assert page.status_code == 200 and page.headers["Content-Type"].startswith("text/html")
    for needle in ("new EventSource(", "approval_required", "tool_execution_started", "text_delta", "button"):
        assert needle in page.text


def pin(relay: RedisEventRelay, name: str, text: str) -> Tuple[str, str]:
    """Publish a quiet turn of the test's own, known to the app as its turns are; return (turn id, entry id)."""
    turn_id = f"{name}-{uuid.uuid4().hex}"
    relay.client.set(f"example:turn-session:{turn_id}", "pinned", ex=600)  # what the app writes when it enqueues
    return turn_id, relay.publish(turn_id, TextDelta(text))


def approval_crosses_two_gunicorn_workers(http: requests.Session, app: Gunicorn, relay: RedisEventRelay) -> None:
    """Start a turn on one web process, approve it on the other, stream the answer.

    A sync worker serves one request at a time, so an open event stream
    pins it: the test publishes to two turns of its own ("pins") to decide
    which process gets the next request, and proves it with X-Worker-Pid.
    """
    pin_1, first_entry = pin(relay, "pin", "pin one")
    pin_2, _ = pin(relay, "pin", "pin two")
    with SseClient(http, f"{app.url}/turns/{pin_1}/events") as pinned:
        first_pid = pinned.pid
        turn, start_pid = start_turn(http, app, "What is 17 * 23?")
        assert start_pid != first_pid  # the first process is busy streaming

        with SseClient(http, f"{app.url}/turns/{turn['turn_id']}/events") as stream:
            assert stream.pid == start_pid
            events = payloads(read_until_end(stream))
        assert events[-1]["type"] == "approval_required"
        [request] = events[-1]["requests"]
        assert request["tool_name"] == "multiply" and request["arguments"] == {"a": 17, "b": 23}

        # Pin the process that started the turn and free the other: the approval must land there.
        with SseClient(http, f"{app.url}/turns/{pin_2}/events") as pinned_2:
            assert pinned_2.pid == start_pid
            relay.finish(pin_1)
            assert [event.id for event in read_until_end(pinned)] == [first_entry]
            approved = http.post(f"{app.url}/turns/{turn['turn_id']}/approve", timeout=HTTP_TIMEOUT,
                                 json={"decisions": {request["tool_call_id"]: {"approve": True}}})
            relay.finish(pin_2)
    assert approved.status_code == 202, approved.text
    assert int(approved.headers["X-Worker-Pid"]) == first_pid != start_pid
    resumed = approved.json()
    assert resumed["session_id"] == turn["session_id"] and resumed["turn_id"] != turn["turn_id"]

    with SseClient(http, f"{app.url}/turns/{resumed['turn_id']}/events") as stream:
        events = payloads(read_until_end(stream))
    completed = [(e["tool_name"], e["result_summary"]) for e in events if e["type"] == "tool_execution_completed"]
    assert completed == [("multiply", "391")]
    assert "17 x 23 = 391" in answer(events)


def a_client_that_leaves_a_quiet_stream_frees_its_web_process(http: requests.Session, app: Gunicorn,
                                                              relay: RedisEventRelay) -> None:
    """The stream's heartbeat is a write, and a write to a closed connection ends the response.

    Both sync workers are pinned by streams of quiet turns; the first
    client goes away. Only the heartbeat can free its process: the next
    request must be served there, long before the turn's next event.
    """
    quiet_1, _ = pin(relay, "quiet", "one")
    quiet_2, _ = pin(relay, "quiet", "two")
    try:
        with SseClient(http, f"{app.url}/turns/{quiet_1}/events") as leaving:
            left_pid = leaving.pid
            with SseClient(http, f"{app.url}/turns/{quiet_2}/events") as staying:
                assert staying.pid != left_pid
                leaving.close()
                page = http.get(app.url + "/", timeout=HTTP_TIMEOUT)
                assert int(page.headers["X-Worker-Pid"]) == left_pid
    finally:
        relay.finish(quiet_1)
        relay.finish(quiet_2)


def a_reconnect_with_last_event_id_mid_turn_gets_every_event_once(http: requests.Session, app: Gunicorn,
                                                                   relay: RedisEventRelay) -> None:
    turn, _ = start_turn(http, app, "sleep 1500 ms, then what is 2 + 3?")
    url = f"{app.url}/turns/{turn['turn_id']}/events"
    seen = []
    with SseClient(http, url) as stream:
        for event in stream.events():  # drop the connection after the first event
            seen.append(event)
            break
    # Wait (on Redis, not on the clock) until the turn has gone on past the drop, while it still runs.
    for _, event in relay.read(turn["turn_id"], after=seen[-1].id, timeout=TURN_TIMEOUT):
        if getattr(event, "tool_name", None) == "sleep_ms":
            break
    with SseClient(http, url, last_event_id=seen[-1].id) as stream:
        seen.extend(read_until_end(stream))
    everything = [entry_id for entry_id, _ in relay.read(turn["turn_id"], timeout=TURN_TIMEOUT)]
    assert [event.id for event in seen] == everything  # none lost, none twice, in order
    assert "2 + 3 = 5" in answer(payloads(seen))


def cancel_stops_the_turn_in_the_worker(http: requests.Session, app: Gunicorn, relay: RedisEventRelay) -> None:
    turn, _ = start_turn(http, app, "sleep 2000 ms, then what is 2 + 3?")
    for _, event in relay.read(turn["turn_id"], timeout=TURN_TIMEOUT):
        if getattr(event, "tool_name", None) == "sleep_ms":
            break
    cancelled = http.post(f"{app.url}/turns/{turn['turn_id']}/cancel", timeout=HTTP_TIMEOUT)
    assert cancelled.status_code == 202, cancelled.text
    with SseClient(http, f"{app.url}/turns/{turn['turn_id']}/events") as stream:
        events = payloads(read_until_end(stream))  # the stream ends ...
    assert "2 + 3 = 5" not in answer(events)  # ... before the model's answer,
    assert events[-1]["type"] == "error" and events[-1]["error"]["class"] == "TurnCancelledError"  # and says why


def bad_requests_get_a_400_and_unknown_turns_a_404(http: requests.Session, app: Gunicorn) -> None:
    assert http.post(f"{app.url}/turns", json={"message": ""}, timeout=HTTP_TIMEOUT).status_code == 400
    assert http.post(f"{app.url}/turns", data=b"{not json", timeout=HTTP_TIMEOUT,
                     headers={"Content-Type": "application/json"}).status_code == 400
    bad_id = http.get(f"{app.url}/turns/x/events", headers={"Last-Event-ID": "nope"}, timeout=HTTP_TIMEOUT)
    assert bad_id.status_code == 400 and "last_event_id" in bad_id.json()["error"]
    assert http.post(f"{app.url}/turns/none/approve", json={"decisions": {}}, timeout=HTTP_TIMEOUT).status_code == 404
    assert http.post(f"{app.url}/turns/none/cancel", timeout=HTTP_TIMEOUT).status_code == 404
    turn, _ = start_turn(http, app, "What is 2 + 3?")
    for body in ({"decisions": {}}, {"decisions": {"c": {"approve": "yes"}}}, {"decisions": {"c": {"deny": 3}}}, []):
        response = http.post(f"{app.url}/turns/{turn['turn_id']}/approve", json=body, timeout=HTTP_TIMEOUT)
        assert response.status_code == 400, body


def unknown_turns_and_ids_of_other_turns_are_refused_at_once(http: requests.Session, app: Gunicorn,
                                                            relay: RedisEventRelay) -> None:
    """An unknown turn's events are a 404 (not a 200 that keeps alive forever); a foreign Last-Event-ID a 400."""
    unknown = http.get(f"{app.url}/turns/{uuid.uuid4().hex}/events", timeout=HTTP_TIMEOUT)
    assert unknown.status_code == 404 and "no turn" in unknown.json()["error"]
    other, other_entry = pin(relay, "other", "another turn's event")  # older than every entry of the turn
    relay.finish(other)
    turn, _ = start_turn(http, app, "What is 2 + 3?")
    for last_event_id in (other_entry, "1-0"):
        refused = http.get(f"{app.url}/turns/{turn['turn_id']}/events", headers={"Last-Event-ID": last_event_id},
                           timeout=HTTP_TIMEOUT)
        assert refused.status_code == 400 and "last_event_id" in refused.json()["error"], refused.text
    list(relay.read(turn["turn_id"], timeout=TURN_TIMEOUT))  # let the turn end before the next test


def a_second_approval_is_a_plain_409(http: requests.Session, app: Gunicorn, relay: RedisEventRelay) -> None:
    """Approving twice answers a JSON error meant for the page's user, not the library's advice."""
    turn, _ = start_turn(http, app, "What is 17 * 23?")
    events = [event for _, event in relay.read(turn["turn_id"], timeout=TURN_TIMEOUT)]
    [request] = events[-1].requests
    decisions = {"decisions": {request.tool_call_id: {"approve": True}}}
    first = http.post(f"{app.url}/turns/{turn['turn_id']}/approve", json=decisions, timeout=HTTP_TIMEOUT)
    assert first.status_code == 202, first.text
    second = http.post(f"{app.url}/turns/{turn['turn_id']}/approve", json=decisions, timeout=HTTP_TIMEOUT)
    assert second.status_code == 409 and second.headers["Content-Type"].startswith("application/json")
    assert "already" in second.json()["error"] and "submit_turn" not in second.text
    resumed = [event for _, event in relay.read(first.json()["turn_id"], timeout=TURN_TIMEOUT)]
    assert "17 x 23 = 391" in "".join(getattr(event, "text", "") for event in resumed)


def redis_down_is_a_json_503_naming_redis(http: requests.Session, app: Gunicorn) -> None:
    started = http.post(f"{app.url}/turns", json={"message": "What is 2 + 3?"}, timeout=HTTP_TIMEOUT)
    assert started.status_code == 503 and "Redis" in started.json()["error"], started.text
    for path in (f"/turns/{uuid.uuid4().hex}/events", f"/turns/{uuid.uuid4().hex}/cancel"):
        call = http.get if path.endswith("events") else http.post
        response = call(app.url + path, timeout=HTTP_TIMEOUT)
        assert response.status_code == 503 and "Redis" in response.json()["error"], response.text
