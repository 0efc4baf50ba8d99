"""RedisSessionStore against a real redis-server: the shared store contract, plus Redis specifics."""

from __future__ import annotations

import subprocess
import sys

import pytest

from agcore_sync import (
    AgentSession,
    MockProvider,
    SessionBusyError,
    SessionConflictError,
    SessionStoreError,
    StoredSession,
)
from agcore_sync.contrib.redis import SCHEMA_VERSION, RedisSessionStore
from tests.support.store_contract import StoreContract


@pytest.fixture
def store(redis_client):
    with RedisSessionStore(redis_client) as store:
        yield store


@pytest.fixture
def make_store(make_client, redis_client):
    def make(ttl=None):
        return RedisSessionStore(make_client(), ttl=ttl)

    return make


@pytest.fixture
def child_location(redis_server, redis_client):
    return "redis", redis_server.url


@pytest.fixture
def expire_lease(redis_client):
    return lambda session_id: redis_client.delete(f"agcore:session-lease:{{{session_id}}}")


class TestRedisStoreContract(StoreContract):
    pass


def test_keys_live_under_the_prefix_with_the_id_as_a_hash_tag(redis_client):
    store = RedisSessionStore(redis_client, prefix="app1:")
    store.save("chat-1", {"n": 1})
    with store.lease("chat-1", ttl=5):
        keys = sorted(k.decode() for k in redis_client.keys("*"))
    assert keys == ["app1:session-lease:{chat-1}", "app1:session-version:{chat-1}", "app1:session:{chat-1}"]
    assert RedisSessionStore(redis_client, prefix="app2:").load("chat-1") is None


def test_a_client_that_decodes_responses_works_the_same(make_client, redis_client):
    store = RedisSessionStore(make_client(decode_responses=True))
    assert store.save("chat-1", {"text": "héllo"}) == 1
    assert store.load("chat-1") == StoredSession({"text": "héllo"}, 1)
    assert store.save("chat-1", {"n": 2}, expected_version=1) == 2
    with store.lease("chat-1", ttl=5) as lease:
        assert lease.held


def test_a_resp3_client_works_the_same(make_client, redis_client):
    store = RedisSessionStore(make_client(protocol=3))
    assert store.save("chat-1", {"n": 1}) == 1
    assert store.load("chat-1") == StoredSession({"n": 1}, 1)


def test_the_ttl_is_set_on_the_session_and_not_on_its_version_counter(redis_client):
    store = RedisSessionStore(redis_client, ttl=120)
    store.save("chat-1", {"n": 1})
    assert 119_000 < redis_client.pttl("agcore:session:{chat-1}") <= 120_000
    assert redis_client.pttl("agcore:session-version:{chat-1}") == -1
    RedisSessionStore(redis_client).save("chat-1", {"n": 2}, expected_version=1)
    assert redis_client.pttl("agcore:session:{chat-1}") == -1  # a store without ttl keeps it


def test_a_corrupt_stored_session_is_a_store_error_naming_it_and_is_not_overwritten(redis_client):
    store = RedisSessionStore(redis_client)
    store.save("chat-1", {"n": 1})
    redis_client.hset("agcore:session:{chat-1}", "data", b"{\"n\": 1, trunc")
    with pytest.raises(SessionStoreError) as caught:
        store.load("chat-1")
    assert caught.value.session_id == "chat-1" and "corrupt" in str(caught.value)
    with pytest.raises(SessionStoreError, match="corrupt"):
        AgentSession.load(store, "chat-1", provider=MockProvider([]))
    redis_client.hdel("agcore:session:{chat-1}", "version")
    with pytest.raises(SessionStoreError, match="corrupt"):
        store.load("chat-1")
    assert redis_client.hget("agcore:session:{chat-1}", "data") == b"{\"n\": 1, trunc"


def test_a_save_whose_reply_was_lost_and_that_redis_py_sent_again_is_applied_once_and_succeeds(
        lossy_client, redis_client):
    proxy, client = lossy_client
    store = RedisSessionStore(client)
    store.save("warm-up", {"n": 0})  # the script is in the server now: a save is one EVALSHA
    proxy.lose_next_reply(b"session:{chat-1}")
    assert store.save("chat-1", {"n": 1}) == 1
    assert proxy.reply_lost.is_set()
    proxy.lose_next_reply(b"session:{chat-1}")
    assert store.save("chat-1", {"n": 2}, expected_version=1) == 2
    assert proxy.reply_lost.is_set()
    assert store.load("chat-1") == StoredSession({"n": 2}, 2)
    assert redis_client.get("agcore:session-version:{chat-1}") == b"2"  # each save counted once
    with pytest.raises(SessionConflictError):  # a real conflict is still one
        store.save("chat-1", {"n": 3}, expected_version=1)


def test_a_lease_whose_reply_was_lost_and_that_redis_py_sent_again_is_held(lossy_client, redis_client):
    proxy, client = lossy_client
    store = RedisSessionStore(client)
    with store.lease("warm-up", ttl=5):
        pass
    proxy.lose_next_reply(b"session-lease:{chat-1}")
    with store.lease("chat-1", ttl=5) as lease:
        assert proxy.reply_lost.is_set() and lease.held
        with pytest.raises(SessionBusyError):
            with RedisSessionStore(redis_client).lease("chat-1", ttl=5):
                pass
    assert redis_client.exists("agcore:session-lease:{chat-1}") == 0


@pytest.mark.parametrize("field, value", [("version", "abc"), ("version", "1.5"), ("version", "0"),
                                          ("version", "١"), ("version", None), ("schema", "x"), ("schema", None),
                                          ("data", '{"n": 1, trunc'), ("data", "[1, 2]"), ("data", None)])
def test_a_corrupt_version_or_data_is_a_store_error_on_load_and_on_save_and_delete_removes_it(
        redis_client, field, value):
    store = RedisSessionStore(redis_client)
    store.save("chat-1", {"n": 1})
    key = "agcore:session:{chat-1}"
    if value is None:
        redis_client.hdel(key, field)
    else:
        redis_client.hset(key, field, value)
    before = redis_client.hgetall(key)
    for call in (lambda: store.load("chat-1"), lambda: store.save("chat-1", {"n": 2}, expected_version=1),
                 lambda: store.save("chat-1", {"n": 2}),
                 lambda: AgentSession.load(store, "chat-1", provider=MockProvider([]))):
        with pytest.raises(SessionStoreError, match="corrupt") as caught:
            call()
        assert caught.value.session_id == "chat-1" and "store.delete('chat-1')" in str(caught.value)
    assert redis_client.hgetall(key) == before  # never overwritten
    assert store.delete("chat-1") is True
    assert store.load("chat-1") is None
    assert store.save("chat-1", {"n": 3}) == 2  # versions still never repeat


def test_a_session_of_a_newer_schema_is_refused_and_not_overwritten(redis_client):
    store = RedisSessionStore(redis_client)
    store.save("chat-1", {"n": 1})
    redis_client.hset("agcore:session:{chat-1}", "schema", SCHEMA_VERSION + 1)
    with pytest.raises(SessionStoreError, match="newer"):
        store.load("chat-1")
    with pytest.raises(SessionStoreError, match="not overwritten"):
        store.save("chat-1", {"n": 2}, expected_version=1)
    assert redis_client.hget("agcore:session:{chat-1}", "data") == b'{"n":1}'


def test_a_key_of_another_type_under_the_prefix_is_a_store_error(redis_client):
    redis_client.set("agcore:session:{chat-1}", "someone else's string")
    store = RedisSessionStore(redis_client)
    for call in (lambda: store.load("chat-1"), lambda: store.save("chat-1", {"n": 1})):
        with pytest.raises(SessionStoreError, match="another type") as caught:
            call()
        assert caught.value.session_id == "chat-1"
    assert redis_client.get("agcore:session:{chat-1}") == b"someone else's string"


def test_a_server_that_is_gone_is_a_store_error_with_the_cause_chained(make_client):
    import socket

    with socket.socket() as sock:  # a port with nothing listening
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    import redis

    client = redis.Redis(host="127.0.0.1", port=port, socket_connect_timeout=2)
    try:
        store = RedisSessionStore(client)
        with pytest.raises(SessionStoreError, match="cannot load session 'chat-1'") as caught:
            store.load("chat-1")
        assert isinstance(caught.value.__cause__, redis.ConnectionError)
        with pytest.raises(SessionStoreError, match="cannot take the lease"):
            store.lease("chat-1", ttl=5).__enter__()
    finally:
        client.close()


def test_constructor_arguments_are_checked(redis_client):
    with pytest.raises(TypeError, match="redis.Redis"):
        RedisSessionStore("redis://localhost")
    with pytest.raises(TypeError, match="prefix"):
        RedisSessionStore(redis_client, prefix=None)
    with pytest.raises(ValueError, match="ttl"):
        RedisSessionStore(redis_client, ttl=0)


def test_importing_the_package_never_imports_redis_and_a_missing_redis_names_the_extra():
    code = ("import sys, agcore_sync, agcore_sync.contrib\n"
            "from agcore_sync import SqliteSessionStore, AgentSession\n"
            "assert 'redis' not in sys.modules, 'redis was imported'\n"
            "sys.modules['redis'] = None  # as if it were not installed\n"
            "try:\n"
            "    import agcore_sync.contrib.redis\n"
            "except ImportError as exc:\n"
            "    print(exc)\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert "pip install 'agcore_sync[redis]'" in out
