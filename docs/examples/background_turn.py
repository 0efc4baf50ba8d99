"""A turn run by a background job, streamed to the browser through Redis.

The job worker (RQ, Celery, ...) runs ``run_turn``: it loads the session
from Redis under a lease, publishes every event of the turn to the relay,
saves the session and marks the end. Any web process answers the browser
with ``relay.sse(...)`` (``create_app`` is the Flask side); a browser that
reconnects sends ``Last-Event-ID`` and gets what it missed, once.

Here a thread plays the job worker. It needs a Redis server: ``REDIS_URL``
(default ``redis://localhost:6379/0``) and ``pip install -e ".[redis]"``.
"""

import os
import sys
import threading
import uuid

import redis

from agcore_sync import AgentSession, Error, MockProvider, SessionNotFoundError, TextDelta
from agcore_sync.contrib.redis import RedisEventRelay, RedisSessionStore


def run_turn(client, turn_id, conversation_id, message, provider):
    """The background job: run one turn of a conversation and publish its events."""
    store = RedisSessionStore(client, ttl=30 * 24 * 3600)
    relay = RedisEventRelay(client)
    try:
        with store.lease(conversation_id, ttl=60):
            try:
                session = AgentSession.load(store, conversation_id, provider=provider)
            except SessionNotFoundError:
                session = AgentSession(provider)
            for event in session.submit_turn_stream(message):  # failures arrive as an Error event
                relay.publish(turn_id, event)
            session.save(store, conversation_id)
    except Exception as exc:  # busy, conflict, Redis down: tell the browser, then let the job fail
        relay.publish(turn_id, Error(str(exc), error=exc))
        raise
    finally:
        relay.finish(turn_id)


def create_app(client):
    """The web side (Flask): the browser's ``EventSource`` reads ``/turns/<turn_id>/events``."""
    from flask import Flask, Response, request

    relay = RedisEventRelay(client)
    app = Flask(__name__)

    @app.get("/turns/<turn_id>/events")
    def events(turn_id):
        body = relay.sse(turn_id, request.headers.get("Last-Event-ID"), timeout=60)
        return Response(body, mimetype="text/event-stream",
                        headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})

    return app


if __name__ == "__main__":
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/0"))
    try:
        client.ping()  # before any thread starts: one clear line, not a traceback per thread
    except redis.RedisError as exc:
        client.close()
        sys.exit(f"background_turn.py needs a Redis server (set REDIS_URL, default redis://localhost:6379/0): {exc}")
    try:
        turn_id = uuid.uuid4().hex
        provider = MockProvider([MockProvider.text("Background turns stream through Redis.")])
        # In production: queue.enqueue(run_turn, ...) for RQ, or a Celery task.
        worker = threading.Thread(target=run_turn, args=(client, turn_id, "chat-7", "Tell me.", provider))
        worker.start()

        # A reader in any process sees the events live, as the worker publishes them.
        ids = []
        for entry_id, event in RedisEventRelay(client).read(turn_id, timeout=30):
            ids.append(entry_id)
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
        print()
        worker.join(30)

        # A browser that lost its connection after the third event reconnects with Last-Event-ID.
        browser = create_app(client).test_client()
        body = browser.get(f"/turns/{turn_id}/events", headers={"Last-Event-ID": ids[2]}).get_data(as_text=True)
        print(body.splitlines()[0])
        assert body.count("id: ") == len(ids) - 3 and body.endswith("event: end\ndata: {}\n\n")

        stored = RedisSessionStore(client).load("chat-7")
        print("session chat-7 saved at version", stored.version)
    finally:
        client.close()
