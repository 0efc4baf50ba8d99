"""The Flask + RQ example (docs/examples/flask_worker) under gunicorn, with real rq workers and Redis.

The module starts gunicorn with two sync worker processes (a sync worker
serves one request at a time, which lets a test pin one of them with an
open event stream and so decide which process serves the next request) and
two ``rq worker`` processes.
"""

from __future__ import annotations

import json

from tests.support.webapps import SseClient, read_until_end

#: How long a test waits for the answer of a turn.
TURN_TIMEOUT = 60.0


def start_turn(http, app, message, session_id=None):
    response = http.post(f"{app.url}/turns", json={"message": message, "session_id": session_id}, timeout=30)
    assert response.status_code == 202, response.text
    return response.json(), int(response.headers["X-Worker-Pid"])


def payloads(events):
    return [json.loads(event.data) for event in events]


def test_the_page_uses_event_source_and_shows_tools_approvals_and_the_answer(flask_app, http):
    page = http.get(flask_app.url + "/", timeout=30)
    assert page.status_code == 200
    for needle in ("new EventSource(", "approval_required", "tool_execution_started", "text_delta", "Last-Event-ID"):
        assert needle in page.text


def test_a_turn_streams_from_an_rq_worker_and_approval_crosses_two_gunicorn_workers(flask_app, http, relay):
    pin_1 = relay.publish("pin-1", _note("pin one"))  # a turn the test controls: it pins a web worker
    with SseClient(http, f"{flask_app.url}/turns/pin-1/events") as pinned:
        first_pid = pinned.pid
        turn, start_pid = start_turn(http, flask_app, "What is 17 * 23?")
        assert start_pid != first_pid  # the other worker: the first one is busy streaming

        with SseClient(http, f"{flask_app.url}/turns/{turn['turn_id']}/events") as stream:
            assert stream.pid == start_pid
            events = payloads(read_until_end(stream))
        assert events[-1]["type"] == "approval_required"
        [request] = events[-1]["requests"]
        assert request["tool_name"] == "multiply" and request["arguments"] == {"a": 17, "b": 23}

        # Pin the worker that started the turn, free the other: the approval must land there.
        relay.publish("pin-2", _note("pin two"))
        with SseClient(http, f"{flask_app.url}/turns/pin-2/events") as pinned_2:
            assert pinned_2.pid == start_pid
            relay.finish("pin-1")
            assert [e.id for e in read_until_end(pinned)] == [pin_1]
            approved = http.post(f"{flask_app.url}/turns/{turn['turn_id']}/approve", timeout=30,
                                 json={"decisions": {request["tool_call_id"]: {"approve": True}}})
            relay.finish("pin-2")
    assert approved.status_code == 202, approved.text
    approve_pid = int(approved.headers["X-Worker-Pid"])
    assert approve_pid == first_pid != start_pid
    resumed = approved.json()
    assert resumed["session_id"] == turn["session_id"] and resumed["turn_id"] != turn["turn_id"]

    with SseClient(http, f"{flask_app.url}/turns/{resumed['turn_id']}/events") as stream:
        events = payloads(read_until_end(stream))
    completed = [e for e in events if e["type"] == "tool_execution_completed"]
    assert [(e["tool_name"], e["result_summary"]) for e in completed] == [("multiply", "391")]
    answer = "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert "17 x 23 = 391" in answer


def test_a_client_that_reconnects_with_last_event_id_mid_turn_gets_every_event_once(flask_app, http, relay):
    turn, _ = start_turn(http, flask_app, "sleep 1500 ms, then what is 2 + 3?")
    url = f"{flask_app.url}/turns/{turn['turn_id']}/events"
    seen = []
    with SseClient(http, url) as stream:
        for event in stream.events():  # drop the connection at the first event
            seen.append(event)
            break
    # Wait (on Redis, not on the clock) until the turn has published past the drop, while it still runs.
    for _, event in relay.read(turn["turn_id"], after=seen[-1].id, timeout=TURN_TIMEOUT):
        if getattr(event, "tool_name", None) == "sleep_ms":
            break
    with SseClient(http, url, last_event_id=seen[-1].id) as stream:
        seen.extend(read_until_end(stream))
    everything = [entry_id for entry_id, _ in relay.read(turn["turn_id"], timeout=TURN_TIMEOUT)]
    assert [event.id for event in seen] == everything  # none lost, none twice, in order
    assert "2 + 3 = 5" in "".join(e["text"] for e in payloads(seen) if e["type"] == "text_delta")


def test_bad_requests_get_a_400_and_unknown_turns_a_404(flask_app, http):
    assert http.post(f"{flask_app.url}/turns", json={"message": ""}, timeout=30).status_code == 400
    assert http.get(f"{flask_app.url}/turns/x/events", headers={"Last-Event-ID": "nope"}, timeout=30).status_code == 400
    assert http.post(f"{flask_app.url}/turns/none/approve", json={"decisions": {}}, timeout=30).status_code == 404
    assert http.post(f"{flask_app.url}/turns/none/cancel", timeout=30).status_code == 404


def _note(text):
    from agcore_sync import TextDelta

    return TextDelta(text)
