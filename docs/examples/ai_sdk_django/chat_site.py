"""An AI SDK chat (``useChat``) served by Django: one module, turns streamed in the request.

Run it (from this folder)::

    pip install -e "../../..[django]"
    gunicorn --workers 2 --threads 8 chat_site:application

then open http://127.0.0.1:8000/. The page is the one of the Flask example
(``../ai_sdk_frontend``); ``useChat`` posts to ``/api/chat``. Each request
loads its chat's session from a SQLite file (``CHAT_DB``, default
``chats.sqlite3`` here), holds the chat's lease while the turn streams, and
saves the session when the stream ends, so any gunicorn worker serves any
chat and an approval resumes the paused turn wherever it lands. The model is
agcore_sync's scripted demo model (no key, no network); ask "What is 17 *
23?" and approve the ``multiply`` call.
"""

from __future__ import annotations

import functools
import json
import os
import uuid
from pathlib import Path
from typing import Iterator, Optional

import django
from django.conf import settings

HERE = Path(__file__).resolve().parent

settings.configure(
    DEBUG=os.environ.get("DJANGO_DEBUG") == "1",
    SECRET_KEY=os.environ.get("DJANGO_SECRET_KEY", "insecure-example-only-set-DJANGO_SECRET_KEY"),
    ALLOWED_HOSTS=["127.0.0.1", "localhost"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=["django.middleware.common.CommonMiddleware", "django.middleware.csrf.CsrfViewMiddleware"],
    INSTALLED_APPS=[],
)
django.setup()

from django.core.wsgi import get_wsgi_application  # noqa: E402
from django.http import FileResponse, HttpRequest, HttpResponse, JsonResponse, StreamingHttpResponse  # noqa: E402
from django.urls import path  # noqa: E402
from django.views.decorators.csrf import ensure_csrf_cookie  # noqa: E402
from django.views.decorators.http import require_GET, require_POST  # noqa: E402

from agcore_sync import (  # noqa: E402
    AgentSession,
    Error,
    FunctionTool,
    SessionBusyError,
    SessionNotFoundError,
    SqliteSessionStore,
    ToolRegistry,
)
from agcore_sync.cli.demo import DemoProvider, demo_tools  # noqa: E402
from agcore_sync.ui import AI_SDK_HEADERS, UiRequestError, ai_sdk_decisions, from_ai_sdk, to_ai_sdk  # noqa: E402

#: Seconds a request holds its chat's lease without renewing it (a crashed worker blocks it this long).
LEASE_TTL = 60.0


@functools.cache
def store() -> SqliteSessionStore:
    """This process's session store (one SQLite connection, shared by its threads)."""
    return SqliteSessionStore(os.environ.get("CHAT_DB", str(HERE / "chats.sqlite3")), ttl=7 * 24 * 3600)


def registry() -> ToolRegistry:
    """The demo tools, with ``multiply`` behind a human's approval."""
    tools = ToolRegistry()
    for demo in demo_tools():
        if demo.name == "multiply":
            demo = FunctionTool(demo.func, name=demo.name, description=demo.description, requires_approval=True)
        tools.register(demo)
    return tools


def _load(chat_id: str) -> AgentSession:
    try:
        return AgentSession.load(store(), chat_id, provider=DemoProvider(), registry=registry())
    except SessionNotFoundError:
        return AgentSession(DemoProvider(), registry=registry(), system_prompt="Use the tools for arithmetic.")


def _turn(chat_id: str, messages: list, message_id: Optional[str]) -> Iterator[bytes]:
    """Stream one turn (or one resume) of a chat while holding its lease; save the session at the end."""
    try:
        lease = store().lease(chat_id, ttl=LEASE_TTL)
        lease.__enter__()
    except SessionBusyError:  # another request streams a turn of this chat: say so in the stream
        yield from to_ai_sdk([Error("another turn of this chat is running; try again when it ends")])
        return
    try:
        session = _load(chat_id)
        try:
            decisions = ai_sdk_decisions(messages)
            if decisions and session.pending_approvals:
                events = session.resume_turn_stream(decisions)
            else:
                events = session.submit_turn_stream(from_ai_sdk(messages)[-1])
            with to_ai_sdk(events, message_id=message_id) as frames:
                yield from frames
            session.save(store(), chat_id)
        finally:
            session.registry.close()
    finally:
        lease.__exit__(None, None, None)


@require_POST
def chat(request: HttpRequest) -> HttpResponse:
    """``POST /api/chat``: the next turn of a chat, as an AI SDK UI message stream."""
    try:
        body = json.loads(request.body)
        chat_id, messages = body["id"], body["messages"]
        decisions = ai_sdk_decisions(messages)
        if not decisions:
            from_ai_sdk(messages)  # a bad body is a 400 now, not an error inside the stream
    except (ValueError, KeyError, TypeError) as exc:  # UiRequestError is a ValueError
        return JsonResponse({"error": str(exc) if isinstance(exc, UiRequestError) else "send useChat's body"},
                            status=400)
    message_id = None if decisions else f"msg-{uuid.uuid4().hex}"
    response = StreamingHttpResponse(_turn(chat_id, messages, message_id))
    for name, value in AI_SDK_HEADERS.items():
        response[name] = value
    return response


@require_GET
def stream(request: HttpRequest, chat_id: str) -> HttpResponse:
    """``GET /api/chat/<id>/stream``: a turn runs inside its request here, so there is none to resume."""
    return HttpResponse(status=204)


@require_GET
def messages(request: HttpRequest, chat_id: str) -> HttpResponse:
    """``GET /api/chat/<id>``: no UI messages are kept on this side; the page starts empty."""
    return JsonResponse({"messages": []})


@ensure_csrf_cookie
def page(request: HttpRequest) -> HttpResponse:
    """``GET /``: the chat page (and the CSRF cookie its script sends back)."""
    return HttpResponse((HERE.parent / "ai_sdk_flask" / "index.html").read_text())


def script(request: HttpRequest) -> FileResponse:
    """``GET /static/chat.js``: the bundled page script."""
    return FileResponse(open(HERE.parent / "ai_sdk_frontend" / "dist" / "chat.js", "rb"),
                        content_type="text/javascript")


urlpatterns = [
    path("", page),
    path("static/chat.js", script),
    path("api/chat", chat),
    path("api/chat/<str:chat_id>/stream", stream),
    path("api/chat/<str:chat_id>", messages),
]

application = get_wsgi_application()
