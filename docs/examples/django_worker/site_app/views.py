"""The web side (Django + Celery): start turns, stream their events, approve, cancel.

The routes, bodies and answers are those of the Flask example (see
``site_app/urls.py`` and the README). The event stream is a
``StreamingHttpResponse`` over the relay's Server-Sent Events: any web
process serves any turn, and a client that reconnects with
``Last-Event-ID`` gets each event it missed, once.
"""

from __future__ import annotations

import json
import os
import uuid
from pathlib import Path
from typing import Any, Dict, Iterator, Optional

import agent
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse
from django.views.decorators.csrf import ensure_csrf_cookie
from django.views.decorators.http import require_GET, require_POST
from turns import run_turn

from agcore_sync.contrib.jobs import TurnJob

#: Seconds without an event before the stream sends a comment line: it keeps proxies from
#: closing an idle stream, and a write to a client that went away ends the response.
HEARTBEAT_S = float(os.environ.get("SSE_HEARTBEAT_S", "10"))

#: Seconds the turn -> session mapping lives (the relay keeps a turn's events an hour too).
TURN_TTL_S = 3600

#: How long a browser waits before reconnecting to a dropped stream, in milliseconds.
RETRY_MS = 1000

PAGE = Path(__file__).resolve().parent.parent / "index.html"


def _turn_key(turn_id: str) -> str:
    return f"example:turn-session:{turn_id}"


def _answered_key(turn_id: str) -> str:
    return f"example:turn-answered:{turn_id}"


def _enqueue(job: TurnJob) -> JsonResponse:
    agent.client().set(_turn_key(job.turn_id), job.session_id, ex=TURN_TTL_S)
    run_turn.delay(job.to_dict())
    return JsonResponse({"session_id": job.session_id, "turn_id": job.turn_id}, status=202)


def _bad_request(message: str) -> JsonResponse:
    return JsonResponse({"error": message}, status=400)


def _json(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body or b"null")
    except ValueError:
        return None


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
    """Return the turn's SSE stream with heartbeats; a bad ``last_event_id`` raises ValueError now."""
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
                except TimeoutError:  # quiet for HEARTBEAT_S: a comment, then read on after `last`
                    yield b": keep-alive\n\n"
                    stream = relay.sse(turn_id, last, timeout=HEARTBEAT_S)
        finally:
            stream.close()

    return body()


@require_GET
@ensure_csrf_cookie
def page(request: HttpRequest) -> HttpResponse:
    """The page (it reads the CSRF cookie and sends it back as ``X-CSRFToken``)."""
    return FileResponse(open(PAGE, "rb"), content_type="text/html; charset=utf-8")


@require_POST
def start_turn(request: HttpRequest) -> HttpResponse:
    """``{"message", "session_id"?}`` -> 202 ``{"session_id", "turn_id"}``."""
    body = _json(request)
    message = body.get("message") if isinstance(body, dict) else None
    session_id = body.get("session_id") if isinstance(body, dict) else None
    if not isinstance(message, str) or not message.strip():
        return _bad_request('send {"message": "..."} with a non-empty message')
    if session_id is not None and (not isinstance(session_id, str) or not session_id):
        return _bad_request("session_id must be a non-empty string")
    return _enqueue(TurnJob(session_id=session_id or uuid.uuid4().hex, turn_id=uuid.uuid4().hex,
                            user_input=message))


@require_GET
def events(request: HttpRequest, turn_id: str) -> HttpResponse:
    """The turn's events as Server-Sent Events (``Last-Event-ID`` resumes); 404 for an unknown turn."""
    known = agent.client().exists(_turn_key(turn_id))
    try:
        body = sse_body(turn_id, request.headers.get("Last-Event-ID"))
    except ValueError as exc:
        return _bad_request(str(exc))
    if not known:
        body.close()
        return JsonResponse({"error": f"no turn {turn_id!r} (it never started, or it ended over an hour ago)"},
                            status=404)
    response = StreamingHttpResponse(body, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@require_POST
def approve(request: HttpRequest, turn_id: str) -> HttpResponse:
    """``{"decisions": {...}}`` -> 202 ``{"session_id", "turn_id"}`` of the resumed turn; 409 the second time."""
    session_id = agent.client().get(_turn_key(turn_id))
    if session_id is None:
        return JsonResponse({"error": f"no turn {turn_id!r}"}, status=404)
    decisions = _decisions(_json(request))
    if decisions is None:
        return _bad_request('send {"decisions": {call_id: {"approve": true} or {"deny": "reason"}}}')
    if not agent.client().set(_answered_key(turn_id), "1", nx=True, ex=TURN_TTL_S):
        return JsonResponse({"error": "this turn was approved or denied already; its answer is on the way"},
                            status=409)
    return _enqueue(TurnJob(session_id=session_id.decode(), turn_id=uuid.uuid4().hex, decisions=decisions))


@require_POST
def cancel(request: HttpRequest, turn_id: str) -> HttpResponse:
    """Ask the worker running the turn to stop it (202)."""
    if agent.client().get(_turn_key(turn_id)) is None:
        return JsonResponse({"error": f"no turn {turn_id!r}"}, status=404)
    agent.runner().cancel(turn_id)
    return JsonResponse({"turn_id": turn_id}, status=202)
