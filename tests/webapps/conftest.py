"""Fixtures of the example web apps' tests: real redis-server, job workers and gunicorn.

One redis-server for the whole of tests/webapps (a free port of 127.0.0.1);
each test module that uses an app starts its processes once (gunicorn with
two sync worker processes, the job workers) and stops and reaps them at
its end. A sync worker serves one request at a time, which lets a test pin
one of them with an open event stream and so decide which process serves
the next request. No fakeredis, no mocks: the tests talk HTTP to gunicorn.
"""

from __future__ import annotations

import sys

import pytest
import requests

from tests.support.redis_server import SKIP_REASON, RedisServer, redis_server_path
from tests.support.webapps import ROOT, Gunicorn, Service, child_env

EXAMPLES = ROOT / "docs" / "examples"


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server child for the web app tests, stopped and reaped at the end of the session."""
    for module in ("redis", "gunicorn", "agcore_sync.contrib.jobs"):
        pytest.importorskip(module, reason=f"{module} is not importable: pip install -e '.[test]'")
    if redis_server_path() is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """The module's directory for the children's logs (and SQLite files)."""
    return tmp_path_factory.mktemp("webapp")


def _run(services):
    try:
        yield services[0]
    finally:
        for service in services:
            service.stop()


@pytest.fixture(scope="module")
def flask_app(redis_server, log_dir):
    """docs/examples/flask_worker: gunicorn (2 workers) and two ``rq worker`` processes; yields gunicorn."""
    pytest.importorskip("rq", reason="rq is not installed: pip install -e '.[test]'")
    pytest.importorskip("flask", reason="flask is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "flask_worker"
    env = child_env(redis_server.url, cwd, SSE_HEARTBEAT_S="1")
    workers = [Service(f"rq-{n}", [sys.executable, "-m", "rq.cli", "worker", "--url", redis_server.url,
                                   "--name", f"flask-example-{n}", "turns"], cwd=cwd, env=env, log_dir=log_dir)
               for n in (1, 2)]
    yield from _run([Gunicorn("app:create_app()", workers=2, cwd=cwd, env=env, log_dir=log_dir), *workers])


@pytest.fixture(scope="module")
def django_app(redis_server, log_dir):
    """docs/examples/django_worker: gunicorn (2 workers) and a ``celery worker``; yields gunicorn."""
    pytest.importorskip("django", reason="django is not installed: pip install -e '.[test]'")
    pytest.importorskip("celery", reason="celery is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "django_worker"
    env = child_env(redis_server.url, cwd, SSE_HEARTBEAT_S="1", DJANGO_DB_PATH=str(log_dir / "django.sqlite3"))
    worker = Service("celery", [sys.executable, "-m", "celery", "-A", "turns", "worker", "--pool", "threads",
                                "--concurrency", "2", "--loglevel", "info", "--without-gossip", "--without-mingle",
                                "--without-heartbeat"], cwd=cwd, env=env, log_dir=log_dir)
    yield from _run([Gunicorn("site_app.wsgi:application", workers=2, cwd=cwd, env=env, log_dir=log_dir), worker])


def _own_dir(log_dir, name):
    path = log_dir / name
    path.mkdir(exist_ok=True)
    return path


def _dead_redis_url() -> str:
    """A redis:// URL of a port of 127.0.0.1 where nothing listens."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"redis://127.0.0.1:{sock.getsockname()[1]}/0"


@pytest.fixture(scope="module")
def flask_app_without_redis(redis_server, log_dir):
    """docs/examples/flask_worker under gunicorn (1 worker) whose REDIS_URL reaches nothing."""
    pytest.importorskip("flask", reason="flask is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "flask_worker"
    yield from _run([Gunicorn("app:create_app()", workers=1, cwd=cwd, env=child_env(_dead_redis_url(), cwd),
                              log_dir=_own_dir(log_dir, "no-redis"))])


@pytest.fixture(scope="module")
def django_app_without_redis(redis_server, log_dir):
    """docs/examples/django_worker under gunicorn (1 worker) whose REDIS_URL reaches nothing."""
    pytest.importorskip("django", reason="django is not installed: pip install -e '.[test]'")
    cwd = EXAMPLES / "django_worker"
    env = child_env(_dead_redis_url(), cwd, DJANGO_DB_PATH=str(log_dir / "django-no-redis.sqlite3"))
    yield from _run([Gunicorn("site_app.wsgi:application", workers=1, cwd=cwd, env=env,
                              log_dir=_own_dir(log_dir, "no-redis"))])


@pytest.fixture
def http():
    """A requests session, closed after the test."""
    with requests.Session() as session:
        yield session


@pytest.fixture
def relay(redis_server):
    """A relay on the test Redis (the test's own view of the turns' streams)."""
    import redis

    from agcore_sync.contrib.redis import RedisEventRelay

    client = redis.Redis.from_url(redis_server.url)
    yield RedisEventRelay(client)
    client.close()
    client.connection_pool.disconnect()
