"""docs/examples/ai_sdk_flask: useChat's protocol over gunicorn (2 workers), RQ and Redis.

The HTTP tests read the app's answers with the ``ai`` package's own parser
and message builder (tests/node/ui_client.mjs); the browser test loads the
real page (React and ``@ai-sdk/react``'s ``useChat``, bundled by
docs/examples/ai_sdk_frontend/build.sh) in Debian's headless chromium,
cuts its connections mid-turn through a TCP proxy, reloads it, and checks
that the resumed stream shows every part once.
"""

from __future__ import annotations

import copy
import shutil
import sys
import uuid

import pytest

from tests.support.tcp_proxy import TcpProxy
from tests.support.ui_peers import ui_client
from tests.support.webapps import Gunicorn, Service, child_env
from tests.webapps.conftest import EXAMPLES

#: How long the page gets to show each step.
STEP_TIMEOUT = 60.0


@pytest.fixture(scope="module")
def ai_sdk_app(redis_server, log_dir):
    """docs/examples/ai_sdk_flask: gunicorn (2 workers) and one ``rq worker``; yields gunicorn."""
    pytest.importorskip("rq", reason="rq is not installed: pip install -e '.[test]'")
    pytest.importorskip("flask", reason="flask is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "ai_sdk_flask"
    env = child_env(redis_server.url, cwd)
    services = [Gunicorn("app:create_app()", workers=2, cwd=cwd, env=env, log_dir=log_dir),
                Service("rq-ai-sdk", [sys.executable, "-m", "rq.cli", "worker", "--url", redis_server.url,
                                      "--name", f"ai-sdk-{uuid.uuid4().hex[:8]}", "turns"],
                        cwd=cwd, env=env, log_dir=log_dir)]
    try:
        yield services[0]
    finally:
        for service in services:
            service.stop()


def _user(text: str) -> dict:
    return {"id": f"u-{uuid.uuid4().hex[:6]}", "role": "user", "parts": [{"type": "text", "text": text}]}


def test_a_turn_its_approval_and_its_resume_stream_are_read_by_the_ai_package(ai_sdk_app):
    chat = uuid.uuid4().hex
    user = _user("What is 17 * 23?")
    first = ui_client("ai-sdk", ai_sdk_app.url + "/api/chat", {"id": chat, "messages": [user]})
    assert first["status"] == 200 and first["invalid"] == [] and first["errors"] == []
    paused = first["message"]
    [part] = [p for p in paused["parts"] if p["type"] == "tool-multiply"]
    assert part["state"] == "approval-requested" and part["input"] == {"a": 17, "b": 23}

    answered = copy.deepcopy(paused)
    for p in answered["parts"]:
        if p["type"] == "tool-multiply":
            p.update(state="approval-responded", approval={"id": p["approval"]["id"], "approved": True})
    second = ui_client("ai-sdk", ai_sdk_app.url + "/api/chat", {"id": chat, "messages": [user, answered]},
                       previous=answered)
    assert second["invalid"] == [] and second["errors"] == []
    message = second["message"]
    assert message["id"] == paused["id"]
    [part] = [p for p in message["parts"] if p["type"] == "tool-multiply"]
    assert part["state"] == "output-available" and part["output"] == 391
    assert "391" in "".join(p["text"] for p in message["parts"] if p["type"] == "text")

    # useChat's resume: the latest turn again, from its start (a GET, here through the same parser).
    import requests

    replay = requests.get(f"{ai_sdk_app.url}/api/chat/{chat}/stream", timeout=30)
    assert replay.status_code == 200 and replay.headers["x-vercel-ai-ui-message-stream"] == "v1"
    assert replay.text.count('"type":"tool-output-available"') == 1 and replay.text.endswith("data: [DONE]\n\n")
    assert requests.get(f"{ai_sdk_app.url}/api/chat/{uuid.uuid4().hex}/stream", timeout=30).status_code == 204


def test_a_body_that_is_not_use_chats_is_a_400_naming_the_field(ai_sdk_app):
    import requests

    answer = requests.post(ai_sdk_app.url + "/api/chat", json={"id": "c", "messages": [{"role": "user"}]},
                           timeout=30)
    assert answer.status_code == 400
    assert answer.json() == {"error": "messages[0].parts: must be a list of parts"}


webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'")


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium with a fresh profile (tests/browser/install.sh); quit after the test."""
    chromium, chromedriver = shutil.which("chromium"), shutil.which("chromedriver")
    if chromium is None or chromedriver is None:
        pytest.skip("chromium or chromedriver is not installed: run `bash tests/browser/install.sh`")
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service as DriverService

    from tests.webapps.test_browser import CHROMIUM_FLAGS

    options = Options()
    options.binary_location = chromium
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(options=options, service=DriverService(executable_path=chromedriver))
    try:
        yield driver
    finally:
        driver.quit()


def _parts(browser) -> list:
    return browser.execute_script(
        "const c = window.agcoreChat; return c ? c.messages.map(m => [m.role, m.parts]) : []")


def test_use_chat_approves_a_tool_and_a_reload_after_a_cut_resumes_with_every_part_once(ai_sdk_app, browser):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    proxy = TcpProxy(ai_sdk_app.port)
    try:
        wait = WebDriverWait(browser, STEP_TIMEOUT)
        browser.get(f"http://127.0.0.1:{proxy.port}/")
        field = wait.until(lambda b: b.find_elements(By.ID, "message"))[0]
        field.send_keys("sleep 3000 ms, then what is 17 * 23?")
        browser.find_element(By.ID, "send").click()

        # While sleep_ms runs in the rq worker, cut the page's connections, then reload it.
        wait.until(lambda b: "sleep_ms(" in b.find_element(By.ID, "messages").text)
        assert proxy.drop() >= 1
        browser.refresh()

        approve = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "button.approve"))[0]
        text = browser.find_element(By.ID, "messages").text
        assert text.count("sleep_ms(") == 1 and "slept 3000 ms" in text
        approve.click()
        wait.until(lambda b: "391" in "".join(
            part.get("text", "") for role, parts in _parts(b) if role == "assistant" for part in parts))
        wait.until(lambda b: b.find_element(By.ID, "status").text == "ready")

        [(user_role, _), (role, parts)] = _parts(browser)
        assert (user_role, role) == ("user", "assistant")
        tools = [(p["type"], p["state"]) for p in parts if p["type"].startswith("tool-")]
        assert tools == [("tool-sleep_ms", "output-available"), ("tool-multiply", "output-available")]
        assert [p["toolCallId"] for p in parts if p["type"].startswith("tool-")] == list(
            dict.fromkeys(p["toolCallId"] for p in parts if p["type"].startswith("tool-")))
        answer = "".join(p.get("text", "") for p in parts if p["type"] == "text")
        assert answer.count("391") == 1
    finally:
        proxy.close()
