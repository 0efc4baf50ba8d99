"""docs/examples/mcp_oauth_flask.py against the local authorization server and protected MCP server."""

from __future__ import annotations

import importlib.util
import pathlib
import sqlite3
from urllib.parse import urlsplit

import pytest

from agcore_sync import McpAuthError, headless_authorize
from tests.mcp_servers.oauth_server import OAuthWorld

_PATH = pathlib.Path(__file__).resolve().parents[2] / "docs" / "examples" / "mcp_oauth_flask.py"
_spec = importlib.util.spec_from_file_location("mcp_oauth_flask_example", _PATH)
example = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(example)


@pytest.fixture
def world():
    with OAuthWorld() as servers:
        yield servers


def _local(url: str) -> str:
    parts = urlsplit(url)
    return parts.path + ("?" + parts.query if parts.query else "")


def test_a_user_is_sent_to_the_authorization_server_and_back_then_sees_the_tools(world, tmp_path):
    database = str(tmp_path / "app.sqlite3")
    app = example.create_app(world.url, database)
    browser = app.test_client()

    first = browser.get("/tools")
    assert first.status_code == 302
    assert first.headers["Location"].startswith(f"{world.issuer}/authorize?")
    # The browser visits the authorization server, which sends it back to the app's route.
    back = headless_authorize(first.headers["Location"])
    assert back.startswith("http://localhost/oauth/callback?")
    done = browser.get(_local(back))
    assert done.status_code == 302 and done.headers["Location"].endswith("/tools")

    assert browser.get("/tools").get_json() == {"tools": ["echo"]}
    with sqlite3.connect(database) as db:
        kinds = sorted(row[0] for row in db.execute("SELECT kind FROM oauth"))
    assert kinds == ["clients", "tokens"]
    # An expired token is refreshed on the next visit, without sending the user away again.
    world.expire_tokens()
    assert browser.get("/tools").get_json() == {"tools": ["echo"]}
    assert len(world.authorizations) == 1


def test_a_callback_with_a_forged_state_stores_nothing(world, tmp_path):
    database = str(tmp_path / "app.sqlite3")
    app = example.create_app(world.url, database)
    browser = app.test_client()
    back = headless_authorize(browser.get("/tools").headers["Location"])
    app.testing = True  # let the McpAuthError reach the test
    with pytest.raises(McpAuthError) as caught:
        browser.get(_local(back.replace("state=", "state=forged")))
    assert caught.value.reason == "state_mismatch"
    with sqlite3.connect(database) as db:
        assert [row[0] for row in db.execute("SELECT kind FROM oauth")] == ["clients"]
