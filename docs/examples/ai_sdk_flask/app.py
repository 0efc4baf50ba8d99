"""An AI SDK chat (``useChat``) served by Flask, with the turns run by RQ workers.

Routes, as ``@ai-sdk/react``'s ``DefaultChatTransport`` calls them:

- ``GET /``: the page; ``GET /static/chat.js``: its script (React and
  ``useChat``, bundled from ``../ai_sdk_frontend``).
- ``POST /api/chat``: the body ``useChat`` posts (``{id, messages, ...}``).
  A new user message enqueues a turn; a message whose tool approvals were
  answered enqueues the resume of the paused turn. The answer is the turn's
  AI SDK UI message stream, read from Redis as the worker publishes it.
- ``GET /api/chat/<id>/stream``: ``useChat``'s ``resume``: the stream of the
  chat's latest turn from its start (204 when the chat has none), so a page
  that reloads mid-turn shows every part once.
- ``GET /api/chat/<id>``: the messages the page last posted, for a reload.

Any gunicorn worker serves any request: the chats' state is in Redis.
"""

from __future__ import annotations

import json
import os
import uuid
from typing import Any, Optional

import agent
from flask import Flask, Response, jsonify, request, send_from_directory
from redis.exceptions import RedisError
from rq import Queue
from tasks import run_turn

from agcore_sync.contrib.jobs import TurnJob
from agcore_sync.contrib.rq import enqueue_turn
from agcore_sync.ui import AI_SDK_HEADERS, UiRequestError, ai_sdk_decisions, from_ai_sdk, to_ai_sdk

HERE = os.path.dirname(os.path.abspath(__file__))
#: The bundled page script (build it with ../ai_sdk_frontend/build.sh).
FRONTEND = os.path.join(HERE, "..", "ai_sdk_frontend", "dist")
#: Seconds a chat's state lives in Redis (the relay keeps a turn's events an hour too).
CHAT_TTL_S = 3600
#: Seconds the stream waits for a worker's next event before it gives up on the turn.
EVENT_TIMEOUT_S = float(os.environ.get("EVENT_TIMEOUT_S", "300"))


def _key(chat_id: str, what: str) -> str:
    return f"example:ai-sdk:{chat_id}:{what}"


def _stream(turn_id: str, message_id: Optional[str]) -> Response:
    events = (event for _, event in agent.relay().read(turn_id, timeout=EVENT_TIMEOUT_S))
    return Response(to_ai_sdk(events, message_id=message_id), headers=dict(AI_SDK_HEADERS))


def _start(chat_id: str, job: TurnJob, message_id: Optional[str]) -> Response:
    client = agent.client()
    client.set(_key(chat_id, "turn"), json.dumps({"turn_id": job.turn_id, "message_id": message_id}),
               ex=CHAT_TTL_S)
    enqueue_turn(Queue("turns", connection=client), run_turn, job)
    return _stream(job.turn_id, message_id)


def _last_user_text(messages: Any) -> str:
    for message in reversed(from_ai_sdk(messages)):
        if message.role.value == "user":
            return message.text
    raise UiRequestError("messages", "there is no user message to answer")


def create_app() -> Flask:
    """Build the app (gunicorn: ``app:create_app()``)."""
    app = Flask(__name__)

    @app.after_request
    def worker_pid(response: Response) -> Response:
        response.headers["X-Worker-Pid"] = str(os.getpid())
        return response

    @app.errorhandler(UiRequestError)
    def bad_request(exc: UiRequestError) -> Response:
        return jsonify(error=str(exc)), 400

    @app.errorhandler(RedisError)
    def redis_down(exc: RedisError) -> Response:
        return jsonify(error=f"Redis is not reachable at {agent.REDIS_URL}"), 503

    @app.get("/")
    def page() -> Response:
        return send_from_directory(HERE, "index.html")

    @app.get("/static/chat.js")
    def script() -> Response:
        return send_from_directory(FRONTEND, "chat.js")

    @app.post("/api/chat")
    def chat() -> Response:
        body = request.get_json(silent=True)
        if not isinstance(body, dict) or not isinstance(body.get("id"), str) or not body["id"]:
            raise UiRequestError("id", "the body must be useChat's {id, messages}")
        chat_id, messages = body["id"], body.get("messages")
        decisions = ai_sdk_decisions(messages)
        agent.client().set(_key(chat_id, "messages"), json.dumps(messages), ex=CHAT_TTL_S)
        if decisions:  # the answered approvals of the paused turn: resume it in the same message
            job = TurnJob(session_id=chat_id, turn_id=uuid.uuid4().hex, decisions=decisions)
            return _start(chat_id, job, None)
        job = TurnJob(session_id=chat_id, turn_id=uuid.uuid4().hex, user_input=_last_user_text(messages))
        return _start(chat_id, job, f"msg-{job.turn_id}")

    @app.get("/api/chat/<chat_id>/stream")
    def resume(chat_id: str) -> Response:
        latest = agent.client().get(_key(chat_id, "turn"))
        if latest is None:
            return Response(status=204)
        turn = json.loads(latest)
        return _stream(turn["turn_id"], turn["message_id"])

    @app.get("/api/chat/<chat_id>")
    def messages(chat_id: str) -> Response:
        stored = agent.client().get(_key(chat_id, "messages"))
        return jsonify(messages=json.loads(stored) if stored else [])

    return app

