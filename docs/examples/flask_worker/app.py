"""The web side (Flask + RQ): start turns, stream their events, approve, cancel.

Routes (JSON in, JSON out, except the page and the event stream):

- ``GET /``: the page (``index.html``): a form, the tool calls, Approve /
  Deny buttons, the answer.
- ``POST /turns`` ``{"message": "...", "session_id": "..."?}``: enqueue a
  turn; answers ``202 {"session_id", "turn_id"}`` (a new session id when
  none is given).
- ``GET /turns/<turn_id>/events``: the turn's events as Server-Sent Events,
  read from Redis (any web process serves any turn). A client that
  reconnects sends ``Last-Event-ID`` and gets each event it missed, once
  (400 for an id that is not one of this turn's). An unknown turn is 404.
- ``POST /turns/<turn_id>/approve`` ``{"decisions": {call_id: {"approve":
  true} | {"deny": "reason"}}}``: enqueue the resume of a paused turn;
  answers ``202 {"session_id", "turn_id"}`` with a new turn id; a turn
  answered already is 409.
- ``POST /turns/<turn_id>/cancel``: ask the worker to stop the turn (202).

Errors are JSON ``{"error": "..."}`` written for the page's user; with Redis
unreachable every route but the page answers 503. Every response carries
``X-Worker-Pid``, the web process that served it.
Run it with gunicorn (see README.rst); the page's event streams hold a
worker each, so use the ``gthread`` worker class with enough threads.
"""

from __future__ import annotations

import os
import uuid
from typing import Any, Dict, Iterator, Optional

import agent
import redis
from flask import Flask, Response, jsonify, request, send_from_directory
from rq import Queue
from tasks import run_turn

from agcore_sync import SessionStoreError
from agcore_sync.contrib.jobs import TurnJob
from agcore_sync.contrib.redis import RelayError
from agcore_sync.contrib.rq import enqueue_turn

#: Seconds without an event before the stream sends a comment line: it keeps proxies from
#: closing an idle stream, and a write to a client that went away ends the response.
HEARTBEAT_S = float(os.environ.get("SSE_HEARTBEAT_S", "10"))

#: Seconds the turn -> session mapping lives (the relay keeps a turn's events an hour too).
TURN_TTL_S = 3600

#: How long a browser waits before reconnecting to a dropped stream, in milliseconds.
RETRY_MS = 1000

HERE = os.path.dirname(os.path.abspath(__file__))


def _turn_key(turn_id: str) -> str:
    return f"example:turn-session:{turn_id}"


def _answered_key(turn_id: str) -> str:
    return f"example:turn-answered:{turn_id}"


def _enqueue(job: TurnJob) -> Response:
    agent.client().set(_turn_key(job.turn_id), job.session_id, ex=TURN_TTL_S)
    enqueue_turn(Queue("turns", connection=agent.client()), run_turn, job)
    return jsonify(session_id=job.session_id, turn_id=job.turn_id), 202


def _bad_request(message: str) -> Response:
    return jsonify(error=message), 400


def _decisions(body: Any) -> Optional[Dict[str, Dict[str, Any]]]:
    """Return the body's decisions if they have the documented shape, else None."""
    decisions = body.get("decisions") if isinstance(body, dict) else None
    if not isinstance(decisions, dict) or not decisions:
        return None
    for call_id, decision in decisions.items():
        if not isinstance(call_id, str) or not isinstance(decision, dict):
            return None
        if not (decision == {"approve": True} or (set(decision) == {"deny"} and isinstance(decision["deny"], str))):
            return None
    return decisions


def sse_body(turn_id: str, last_event_id: Optional[str]) -> Iterator[bytes]:
    """Return the turn's SSE stream with heartbeats; a bad ``last_event_id`` raises ValueError now.

    The relay's stream raises TimeoutError after ``HEARTBEAT_S`` quiet
    seconds; the body then writes a comment line and goes on reading after
    the last event it sent, so no event is sent twice.
    """
    relay = agent.relay()
    first = relay.sse(turn_id, last_event_id, timeout=HEARTBEAT_S)

    def body() -> Iterator[bytes]:
        yield f"retry: {RETRY_MS}\n\n".encode()  # also sends the headers at once
        stream, last = first, last_event_id
        try:
            while True:
                try:
                    for chunk in stream:
                        if chunk.startswith(b"id: "):
                            last = chunk[4:chunk.index(b"\n")].decode()
                        yield chunk
                    return
                except TimeoutError:
                    yield b": keep-alive\n\n"
                    stream = relay.sse(turn_id, last, timeout=HEARTBEAT_S)
        finally:
            stream.close()

    return body()


def create_app() -> Flask:
    """Build the app (gunicorn: ``app:create_app()``)."""
    app = Flask(__name__)

    @app.after_request
    def worker_pid(response: Response) -> Response:
        response.headers["X-Worker-Pid"] = str(os.getpid())
        return response

    @app.get("/")
    def page() -> Response:
        return send_from_directory(HERE, "index.html")

    @app.post("/turns")
    def start_turn() -> Response:
        body = request.get_json(silent=True)
        message = body.get("message") if isinstance(body, dict) else None
        session_id = body.get("session_id") if isinstance(body, dict) else None
        if not isinstance(message, str) or not message.strip():
            return _bad_request('send {"message": "..."} with a non-empty message')
        if session_id is not None and (not isinstance(session_id, str) or not session_id):
            return _bad_request("session_id must be a non-empty string")
        return _enqueue(TurnJob(session_id=session_id or uuid.uuid4().hex, turn_id=uuid.uuid4().hex,
                                user_input=message))

    @app.errorhandler(redis.RedisError)
    @app.errorhandler(RelayError)
    @app.errorhandler(SessionStoreError)
    def redis_unavailable(exc: Exception) -> Response:
        app.logger.warning("Redis failed: %s", exc)
        return jsonify(error="the server cannot reach Redis (its job queue and event store) just now; "
                             "try again in a moment"), 503

    @app.get("/turns/<turn_id>/events")
    def events(turn_id: str) -> Response:
        known = agent.client().exists(_turn_key(turn_id))
        try:
            body = sse_body(turn_id, request.headers.get("Last-Event-ID"))
        except ValueError as exc:
            return _bad_request(str(exc))
        if not known:
            body.close()
            return jsonify(error=f"no turn {turn_id!r} (it never started, or it ended over an hour ago)"), 404
        return Response(body, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    @app.post("/turns/<turn_id>/approve")
    def approve(turn_id: str) -> Response:
        session_id = agent.client().get(_turn_key(turn_id))
        if session_id is None:
            return jsonify(error=f"no turn {turn_id!r}"), 404
        decisions = _decisions(request.get_json(silent=True))
        if decisions is None:
            return _bad_request('send {"decisions": {call_id: {"approve": true} or {"deny": "reason"}}}')
        if not agent.client().set(_answered_key(turn_id), "1", nx=True, ex=TURN_TTL_S):
            return jsonify(error="this turn was approved or denied already; its answer is on the way"), 409
        return _enqueue(TurnJob(session_id=session_id.decode(), turn_id=uuid.uuid4().hex, decisions=decisions))

    @app.post("/turns/<turn_id>/cancel")
    def cancel(turn_id: str) -> Response:
        if agent.client().get(_turn_key(turn_id)) is None:
            return jsonify(error=f"no turn {turn_id!r}"), 404
        agent.runner().cancel(turn_id)
        return jsonify(turn_id=turn_id), 202

    return app
