"""docs/examples/ai_sdk_django: useChat's protocol from Django under gunicorn (2 workers), sessions in SQLite.

The answers are read by the ``ai`` package's own parser and message builder
(tests/node/ui_client.mjs), with the CSRF token the page's cookie carries.
The approval lands on whichever worker is free: the session is in the store.
"""

from __future__ import annotations

import copy
import uuid

import pytest
import requests

from tests.support.ui_peers import ui_client
from tests.support.webapps import Gunicorn, child_env
from tests.webapps.conftest import EXAMPLES


@pytest.fixture(scope="module")
def django_chat(log_dir):
    """gunicorn (2 workers) serving chat_site:application with a fresh SQLite file."""
    pytest.importorskip("django", reason="django is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "ai_sdk_django"
    env = child_env("redis://unused", cwd, CHAT_DB=str(log_dir / "chats.sqlite3"))
    app = Gunicorn("chat_site:application", workers=2, cwd=cwd, env=env, log_dir=log_dir)
    try:
        yield app
    finally:
        app.stop()


def _csrf(app) -> dict:
    page = requests.get(app.url + "/", timeout=30)
    assert page.status_code == 200 and "/static/chat.js" in page.text
    token = page.cookies["csrftoken"]
    return {"X-CSRFToken": token, "Cookie": f"csrftoken={token}"}


def test_a_django_chat_pauses_for_approval_and_resumes_in_the_same_message(django_chat):
    headers = _csrf(django_chat)
    chat = uuid.uuid4().hex
    user = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": "What is 17 * 23?"}]}
    first = ui_client("ai-sdk", django_chat.url + "/api/chat", {"id": chat, "messages": [user]}, headers=headers)
    assert first["status"] == 200 and first["invalid"] == [] and first["errors"] == []
    paused = first["message"]
    [part] = [p for p in paused["parts"] if p["type"] == "tool-multiply"]
    assert part["state"] == "approval-requested"

    answered = copy.deepcopy(paused)
    for p in answered["parts"]:
        if p["type"] == "tool-multiply":
            p.update(state="approval-responded", approval={"id": p["approval"]["id"], "approved": True})
    second = ui_client("ai-sdk", django_chat.url + "/api/chat", {"id": chat, "messages": [user, answered]},
                       previous=answered, headers=headers)
    assert second["invalid"] == [] and second["errors"] == []
    [part] = [p for p in second["message"]["parts"] if p["type"] == "tool-multiply"]
    assert part["state"] == "output-available" and part["output"] == 391


def test_a_django_post_without_the_csrf_token_or_with_a_bad_body_is_refused(django_chat):
    assert requests.post(django_chat.url + "/api/chat", json={}, timeout=30).status_code == 403
    headers = _csrf(django_chat)
    bad = requests.post(django_chat.url + "/api/chat", json={"id": "c", "messages": [{"role": "user"}]},
                        headers=headers, timeout=30)
    assert bad.status_code == 400 and bad.json() == {"error": "messages[0].parts: must be a list of parts"}
