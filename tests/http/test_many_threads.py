"""Two hundred threads on one provider: every answer intact, connections bounded by the concurrency.

Counted at the keep-alive server of ``tests/support/keepalive_server.py``
(which accepts and counts TCP connections) and on the client side (how many
streams were open at once, at most); never a time. The pool may open at most
one connection per stream open at the same moment, and never discards one
("Connection pool is full, discarding connection" is the warning urllib3
logs when more connections come back than it keeps).
"""

from __future__ import annotations

import logging
import threading
from typing import Dict, List

import pytest

from tests.http.test_connection_reuse import PROVIDERS, TEXT, ask, make_provider, text_of
from tests.support.keepalive_server import KeepAliveServer, Reply, Request
from tests.support.leaks import new_fds, open_fds

#: Client threads sharing one provider.
THREADS = 200
#: Streams each thread reads one after the other.
ROUNDS = 3
#: Bound on joining the client threads.
JOIN_TIMEOUT = 120.0


class _Peak:
    """Counts streams open at once on the client side; keeps the maximum."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._now = 0
        self.peak = 0

    def __enter__(self) -> None:
        with self._lock:
            self._now += 1
            self.peak = max(self.peak, self._now)

    def __exit__(self, *exc_info: object) -> None:
        with self._lock:
            self._now -= 1


def _user_text(request: Request) -> str:
    body = request.json
    # Chat Completions, Anthropic and Bedrock send "messages"; the Responses API sends "input" items;
    # Gemini sends "contents" made of "parts".
    if "contents" in body:
        return body["contents"][-1]["parts"][0]["text"]
    content = (body["messages"] if "messages" in body else body["input"])[-1]["content"]
    return content if isinstance(content, str) else content[0]["text"]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_two_hundred_threads_on_one_provider_get_their_own_answers_on_at_most_peak_connections(kind, caplog):
    caplog.set_level(logging.WARNING, logger="urllib3")
    results: Dict[int, List[str]] = {}
    failures: List[BaseException] = []
    start = threading.Barrier(THREADS)
    in_flight = _Peak()

    def respond(request: Request) -> Reply:
        return Reply(TEXT[kind](f"re: {_user_text(request)}"))

    with KeepAliveServer(respond, backlog=THREADS * 2) as server:
        provider = make_provider(kind, server.url)

        def client(n: int) -> None:
            try:
                start.wait(JOIN_TIMEOUT)
                answers = []
                for r in range(ROUNDS):
                    with in_flight:
                        answers.append(text_of(list(provider.chat_stream(ask(f"thread {n} round {r}")))))
                results[n] = answers
            except BaseException as exc:  # noqa: BLE001 - reported by the test thread
                failures.append(exc)

        workers = [threading.Thread(target=client, args=(n,), name=f"test-client-{n}") for n in range(THREADS)]
        try:
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.join(JOIN_TIMEOUT)
        finally:
            provider.close()
        assert not [w.name for w in workers if w.is_alive()]

    assert not failures, failures[:3]
    # Every answer intact and to its own question: no stream read another's bytes.
    assert results == {n: [f"re: thread {n} round {r}" for r in range(ROUNDS)] for n in range(THREADS)}
    assert len(server.requests) == THREADS * ROUNDS
    assert 1 <= server.connections <= in_flight.peak <= THREADS
    # Connections were reused: far fewer than one per stream.
    assert server.connections < THREADS * ROUNDS
    assert not [r.getMessage() for r in caplog.records if "pool is full" in r.getMessage()]


@pytest.mark.parametrize("kind", PROVIDERS)
def test_close_closes_pooled_connections_even_while_something_still_refers_to_the_pool(kind):
    fds_before = open_fds()
    with KeepAliveServer(lambda request: Reply(TEXT[kind]("Hello"))) as server:
        provider = make_provider(kind, server.url)
        assert text_of(list(provider.chat_stream(ask("one")))) == "Hello"
        # What a kept exception's traceback does: hold the pool (urllib3 2.x
        # closes a pool's sockets only when the pool object is collected).
        pools = provider.session.get_adapter(server.url).poolmanager.pools
        (key,) = pools.keys()
        pool = pools.get(key)
        assert pool.num_connections == 1
        provider.close()
    try:
        assert pool.pool is None  # closed, not merely forgotten
        # The server has closed its ends; the client's end is closed too.
        assert not new_fds(fds_before)
    finally:
        pool.close()
