"""A real headless browser (Debian's chromium, through selenium) on the Flask + RQ example.

The page is loaded through a TCP proxy, so the test can drop the browser's
connections mid-turn: its ``EventSource`` reconnects with ``Last-Event-ID``
and must show every event once. ``bash tests/browser/install.sh`` installs
chromium and chromium-driver; without them this module skips.
"""

from __future__ import annotations

import shutil

import pytest

from tests.support.tcp_proxy import TcpProxy

webdriver = pytest.importorskip("selenium.webdriver", reason="selenium is not installed: pip install -e '.[test]'")

CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
if CHROMIUM is None or CHROMEDRIVER is None:
    pytest.skip("chromium or chromedriver is not installed: run `bash tests/browser/install.sh`",
                allow_module_level=True)

from selenium.webdriver.common.by import By  # noqa: E402
from selenium.webdriver.support.ui import WebDriverWait  # noqa: E402

#: How long the page gets to show each step.
STEP_TIMEOUT = 60.0

#: Chromium as root in a sandboxed container, without any network of its own.
CHROMIUM_FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                  "--disable-background-networking", "--disable-component-update", "--disable-sync",
                  "--disable-dev-shm-usage")


@pytest.fixture
def browser(tmp_path):
    """A headless Chromium with a fresh profile; quit (and its driver reaped) after the test."""
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = CHROMIUM
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tmp_path / 'profile'}")
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def proxy(flask_app):
    """A TCP proxy in front of gunicorn; closed (threads joined) after the test."""
    tcp = TcpProxy(flask_app.port)
    yield tcp
    tcp.close()


def test_the_browser_approves_a_tool_sees_the_answer_and_survives_a_dropped_connection(browser, proxy, relay):
    wait = WebDriverWait(browser, STEP_TIMEOUT)
    browser.get(f"http://127.0.0.1:{proxy.port}/")
    field = browser.find_element(By.ID, "message")
    field.clear()
    field.send_keys("sleep 3000 ms, then what is 17 * 23?")
    browser.find_element(By.ID, "send").click()

    # While sleep_ms runs in the rq worker, cut the browser's connections.
    wait.until(lambda b: "sleep_ms(" in b.find_element(By.ID, "tools").text)
    assert proxy.drop() >= 1

    approve = wait.until(lambda b: b.find_elements(By.CSS_SELECTOR, "button.approve"))[0]
    assert "multiply" in browser.find_element(By.ID, "approvals").text
    assert "sleep_ms -> slept 3000 ms" in browser.find_element(By.ID, "tools").text
    assert browser.execute_script("return window.agcorePage.opens") >= 2  # it reconnected
    approve.click()

    wait.until(lambda b: "17 x 23 = 391" in b.find_element(By.ID, "answer").text)
    wait.until(lambda b: b.find_element(By.ID, "status").text == "done")
    page = browser.execute_script("return window.agcorePage")
    expected = [entry_id for turn_id in page["turns"] for entry_id, _ in relay.read(turn_id, timeout=STEP_TIMEOUT)]
    assert len(page["turns"]) == 2
    assert page["ids"] == expected  # every event of both turns, once, in order
