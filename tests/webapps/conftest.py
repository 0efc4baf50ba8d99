"""Fixtures of the example web apps' tests: real redis-server, job workers and gunicorn.

One redis-server for the whole of tests/webapps (a free port of 127.0.0.1);
each test module starts its app's processes once (gunicorn with two worker
processes, the job workers) and stops and reaps them at its end. No
fakeredis, no mocks: the tests talk HTTP to gunicorn.
"""

from __future__ import annotations

import pytest

from tests.support.redis_server import SKIP_REASON, RedisServer, redis_server_path

for _module, _extra in (("redis", "redis"), ("gunicorn", "test"), ("agcore_sync.contrib.jobs", "jobs")):
    pytest.importorskip(_module, reason=f"{_module} is not importable: pip install -e '.[test]'")


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server child for the web app tests, stopped and reaped at the end of the session."""
    if redis_server_path() is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def log_dir(tmp_path_factory):
    """The module's directory for the children's logs (and SQLite files)."""
    return tmp_path_factory.mktemp("webapp")
