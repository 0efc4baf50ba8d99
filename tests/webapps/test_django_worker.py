"""The Django + Celery example (docs/examples/django_worker) under gunicorn, a ``celery worker`` and Redis.

The scenarios are in tests/webapps/scenarios.py (both apps have the same routes).
"""

from __future__ import annotations

import pytest

from tests.support.webapps import ROOT
from tests.webapps import scenarios


@pytest.fixture
def app(django_app, http):
    """The module's gunicorn; the test's HTTP session carries the CSRF token as the page does."""
    scenarios.with_csrf(http, django_app)
    return django_app


def test_the_page_uses_event_source_and_shows_tool_calls_approvals_and_the_answer(app, http):
    scenarios.the_page_shows_tools_approvals_and_the_answer(http, app)


def test_approval_across_two_http_requests_landing_on_different_gunicorn_workers(app, http, relay):
    scenarios.approval_crosses_two_gunicorn_workers(http, app, relay)


def test_a_client_disconnect_and_reconnect_with_last_event_id_mid_turn_loses_and_doubles_no_event(app, http, relay):
    scenarios.a_reconnect_with_last_event_id_mid_turn_gets_every_event_once(http, app, relay)


def test_a_client_that_leaves_a_quiet_stream_frees_its_gunicorn_worker(app, http, relay):
    scenarios.a_client_that_leaves_a_quiet_stream_frees_its_web_process(http, app, relay)


def test_cancel_from_the_web_side_stops_the_turn_in_the_job_worker(app, http, relay):
    scenarios.cancel_stops_the_turn_in_the_worker(http, app, relay)


def test_bad_requests_get_a_400_and_unknown_turns_a_404(app, http):
    scenarios.bad_requests_get_a_400_and_unknown_turns_a_404(http, app)


def test_a_post_without_the_csrf_token_is_refused(django_app):
    import requests

    with requests.Session() as bare:
        response = bare.post(f"{django_app.url}/turns", json={"message": "What is 2 + 3?"}, timeout=30)
    assert response.status_code == 403


def test_the_page_is_the_flask_example_s_page():
    examples = ROOT / "docs" / "examples"
    django_page, flask_page = (examples / name / "index.html" for name in ("django_worker", "flask_worker"))
    assert django_page.read_text() == flask_page.read_text()  # one page, two copies: they must not drift


def test_an_unknown_turn_is_a_404_and_an_id_of_another_turn_a_400_at_once(app, http, relay):
    scenarios.unknown_turns_and_ids_of_other_turns_are_refused_at_once(http, app, relay)


def test_approving_a_turn_twice_is_a_json_409_meant_for_a_browser(app, http, relay):
    scenarios.a_second_approval_is_a_plain_409(http, app, relay)


def test_with_redis_down_the_app_answers_a_json_503_naming_redis(django_app_without_redis, http):
    scenarios.with_csrf(http, django_app_without_redis)
    scenarios.redis_down_is_a_json_503_naming_redis(http, django_app_without_redis)
