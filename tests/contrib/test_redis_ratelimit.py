"""RedisRateLimitStore against a real redis-server: one budget for many clients and processes."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from agcore_sync import (
    Message,
    MessageRequest,
    MockProvider,
    RateLimit,
    RateLimitedProvider,
    RateLimitWaitExceeded,
    Usage,
)
from agcore_sync.contrib.redis import RedisRateLimitStore
from agcore_sync.llm.errors import RateLimitStoreError

redis = pytest.importorskip("redis")

ROOT = Path(__file__).resolve().parents[2]
REQUEST = MessageRequest(None, [Message.user("hi")])

#: Bound on the child processes of the cross-process test.
CHILD_TIMEOUT = 60.0


class FakeClock:
    def __init__(self) -> None:
        self.now = 1_000_000.0

    def __call__(self) -> float:
        return self.now


def unreachable():
    """A client of a port nothing listens on, without redis-py's own retries (the outage is at once)."""
    from redis.backoff import NoBackoff
    from redis.retry import Retry

    return redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=1, retry=Retry(NoBackoff(), 0))


def answers(n: int, usage: Usage = Usage(10, 5)):
    return MockProvider([MockProvider.text(f"a{i}", usage=usage, model="m") for i in range(n)], model="m")


def test_two_clients_share_one_budget(make_client):
    clock = FakeClock()
    first, second = make_client(), make_client()
    first.flushall()
    limit = RateLimit(requests_per_minute=10, max_wait=0)
    a = RateLimitedProvider(answers(10), limit, store=RedisRateLimitStore(first, clock=clock), key="shared")
    b = RateLimitedProvider(answers(10), limit, store=RedisRateLimitStore(second, clock=clock), key="shared")
    for provider in (a, b) * 5:
        provider.chat(REQUEST)
    with pytest.raises(RateLimitWaitExceeded) as caught:
        b.chat(REQUEST)
    assert caught.value.wait == pytest.approx(6.0)
    clock.now += 6.0
    a.chat(REQUEST)


def test_processes_sharing_a_key_never_take_more_than_the_budget_together(redis_server, redis_client):
    code = """
import json, sys
import redis
from agcore_sync import Message, MessageRequest, MockProvider, RateLimit, RateLimitedProvider, RateLimitWaitExceeded
from agcore_sync.contrib.redis import RedisRateLimitStore
client = redis.Redis(port=int(sys.argv[1]))
inner = MockProvider([MockProvider.text("x", model="m") for _ in range(30)], model="m")
provider = RateLimitedProvider(inner, RateLimit(requests_per_minute=25, max_wait=0),
                               store=RedisRateLimitStore(client), key="procs")
granted = 0
for _ in range(30):
    try:
        provider.chat(MessageRequest(None, [Message.user("hi")]))
        granted += 1
    except RateLimitWaitExceeded:
        pass
client.close()
print(json.dumps(granted))
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")])}
    children = [subprocess.Popen([sys.executable, "-c", code, str(redis_server.port)], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True, env=env) for _ in range(4)]
    granted = []
    for child in children:
        out, err = child.communicate(timeout=CHILD_TIMEOUT)
        assert child.returncode == 0, err
        granted.append(json.loads(out.strip().splitlines()[-1]))
    # 25 a minute, a full minute at once; the children run for well under a second (a refill of <1 request).
    assert 25 <= sum(granted) <= 26


def test_one_acquire_is_one_evalsha_round_trip(redis_client, monkeypatch):
    store = RedisRateLimitStore(redis_client)
    provider = RateLimitedProvider(answers(3), RateLimit(requests_per_minute=100), store=store, key="trips")
    provider.chat(REQUEST)  # loads the script (EVALSHA, NOSCRIPT, EVAL) once
    sent = []
    execute = redis_client.execute_command

    def counted(*args, **kwargs):
        sent.append(args[0])
        return execute(*args, **kwargs)

    monkeypatch.setattr(redis_client, "execute_command", counted)
    provider.chat(REQUEST)
    provider.chat(REQUEST)
    assert sent == ["EVALSHA", "EVALSHA"]


def test_tokens_are_corrected_to_the_usage_in_redis(redis_client):
    clock = FakeClock()
    store = RedisRateLimitStore(redis_client, clock=clock)
    provider = RateLimitedProvider(answers(1, Usage(300, 200)), RateLimit(tokens_per_minute=10_000), store=store,
                                   key="tok")
    provider.chat(REQUEST)
    level = float(redis_client.hget("agcore:ratelimit:{tok}", "k"))
    assert level == pytest.approx(10_000 - 500)


def test_tighten_lowers_and_never_raises_the_shared_bucket(redis_client):
    clock = FakeClock()
    store = RedisRateLimitStore(redis_client, prefix="t:", clock=clock)
    limit = RateLimit(requests_per_minute=60)
    store.tighten("k", limit, "requests", 5.0)
    assert float(redis_client.hget("t:ratelimit:{k}", "r")) == 5.0
    store.tighten("k", limit, "requests", 50.0)
    assert float(redis_client.hget("t:ratelimit:{k}", "r")) == 5.0


def test_a_concurrency_slot_is_shared_and_a_crashed_holders_slot_frees_after_its_lease(redis_client):
    clock = FakeClock()
    limit = RateLimit(max_concurrent=1, max_wait=0)
    store = RedisRateLimitStore(redis_client, clock=clock, slot_ttl=30.0)
    holder = RateLimitedProvider(answers(1), limit, store=store, key="slot")
    other = RateLimitedProvider(answers(2), limit, store=RedisRateLimitStore(redis_client, clock=clock), key="slot")
    stream = holder.chat_stream(REQUEST)
    next(stream)
    with pytest.raises(RateLimitWaitExceeded, match="concurrency slot"):
        other.chat(REQUEST)
    stream.close()
    other.chat(REQUEST)
    # A holder that never gives its slot back (a crash): the lease ends it.
    assert store.acquire("slot", limit, 0, "crashed-holder") == 0.0
    with pytest.raises(RateLimitWaitExceeded):
        other.chat(REQUEST)
    clock.now += 31.0
    other.chat(REQUEST)


def test_a_redis_outage_is_a_typed_retryable_error_and_nothing_is_sent(make_client):
    client = unreachable()
    inner = answers(1)
    provider = RateLimitedProvider(inner, RateLimit(requests_per_minute=10), store=RedisRateLimitStore(client))
    try:
        with pytest.raises(RateLimitStoreError, match="fail_open=True") as caught:
            provider.chat(REQUEST)
    finally:
        client.close()
    assert caught.value.retryable and inner.requests == []


def test_fail_open_lets_requests_through_during_an_outage_and_logs_it(caplog):
    client = unreachable()
    provider = RateLimitedProvider(answers(1), RateLimit(requests_per_minute=10, tokens_per_minute=1000),
                                   store=RedisRateLimitStore(client, fail_open=True))
    try:
        with caplog.at_level(logging.WARNING, logger="agcore_sync.contrib.redis"):
            assert provider.chat(REQUEST).message.text == "a0"
    finally:
        client.close()
    assert any("unmetered" in r.getMessage() for r in caplog.records)


@pytest.mark.parametrize("kwargs, error", [({"client": "redis://localhost"}, TypeError),
                                           ({"prefix": 5}, TypeError), ({"slot_ttl": 0}, ValueError)])
def test_bad_arguments_are_refused(redis_client, kwargs, error):
    with pytest.raises(error):
        RedisRateLimitStore(**{"client": redis_client, **kwargs})


@pytest.mark.parametrize("options", [{"decode_responses": True}, {"protocol": 3}])
def test_the_store_works_with_decoded_replies_and_resp3(make_client, options):
    client = make_client(**options)
    client.flushall()
    store = RedisRateLimitStore(client, clock=FakeClock())
    limit = RateLimit(requests_per_minute=1, max_concurrent=1)
    assert store.acquire("k", limit, 0, "a") == 0.0
    assert store.acquire("k", limit, 0, "b") == pytest.approx(60.0)
    store.settle("k", limit, 0, "a")
    assert store.acquire("k", RateLimit(max_concurrent=1), 0, "c") == 0.0
    assert store.acquire("k", RateLimit(max_concurrent=1), 0, "d") == float("inf")
