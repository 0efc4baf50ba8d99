"""Fixtures of the Redis tests: one real redis-server per test session, a clean client per test.

No fakeredis: the server is Debian's redis-server (``bash tests/redis/install.sh``),
started on 127.0.0.1 and a free port by :class:`tests.support.redis_server.RedisServer`.
Without it, or without the ``redis`` package, these tests skip and say why.
"""

from __future__ import annotations

import pytest

from tests.support.redis_server import SKIP_REASON, RedisServer, redis_server_path

redis = pytest.importorskip("redis", reason="the redis package is not installed: pip install -e '.[test]'")


@pytest.fixture(scope="session")
def redis_server():
    """A redis-server child for the whole test session, stopped and reaped at its end."""
    if redis_server_path() is None:
        pytest.skip(SKIP_REASON)
    server = RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def make_client(redis_server):
    """``make_client(**kwargs)`` -> a ``redis.Redis`` on the test server; all are closed after the test."""
    clients = []

    def make(**kwargs):
        clients.append(redis.Redis(host="127.0.0.1", port=redis_server.port, **kwargs))
        return clients[-1]

    yield make
    for client in clients:
        client.close()
        client.connection_pool.disconnect()


@pytest.fixture
def redis_client(make_client):
    """A client on an empty database."""
    client = make_client()
    client.flushall()
    return client


@pytest.fixture
def lossy_client(redis_server):
    """``(proxy, client)``: a client that reaches the server through a :class:`TcpProxy` that can lose a reply.

    The client retries a command whose connection dropped (three times, no
    backoff), as redis-py's default retry does, so ``proxy.lose_next_reply``
    makes it send the same command twice: the server runs it twice.
    """
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    from tests.support.tcp_proxy import TcpProxy

    proxy = TcpProxy(redis_server.port)
    client = redis.Redis(host="127.0.0.1", port=proxy.port, retry=Retry(NoBackoff(), 3),
                         retry_on_error=[redis.ConnectionError])
    yield proxy, client
    client.close()
    client.connection_pool.disconnect()
    proxy.close()
