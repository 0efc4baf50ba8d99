"""The job worker side of bench_relay.py: a TurnRunner whose provider stamps every text delta.

``rq worker --path benchmarks`` imports it as ``_relay_app``. Environment:
``BENCH_REDIS_URL``, ``BENCH_EVENTS`` (text deltas per turn), ``BENCH_PACE``
(deltas per second, 0: as fast as possible).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Iterator, Optional

import redis

from agcore_sync import AgentSession, MessageRequest, MockProvider, StreamEvent, TextDelta
from agcore_sync.contrib.jobs import TurnJob, TurnRunner
from agcore_sync.contrib.redis import RedisEventRelay, RedisSessionStore
from agcore_sync.llm.mock import MockStream, events_for


def stamped_provider(n_events: int, pace: float = 0.0) -> MockProvider:
    """A provider whose one answer streams ``n_events`` text deltas, each the CLOCK_MONOTONIC ns it was made.

    ``pace``: deltas per second, as a model's tokens arrive (0: as fast as possible).
    """

    def events(request: MessageRequest) -> Iterator[StreamEvent]:
        tick = threading.Event()  # never set: its wait() paces the deltas
        for event in events_for(MockProvider.text("done")):
            if isinstance(event, TextDelta):
                start = time.monotonic()
                for i in range(n_events):
                    if pace:
                        tick.wait(max(0.0, start + i / pace - time.monotonic()))
                    yield TextDelta(str(time.monotonic_ns()))
            else:
                yield event

    return MockProvider([MockStream(events)])


def make_runner(client: redis.Redis, n_events: int, pace: float = 0.0) -> TurnRunner:
    return TurnRunner(store=RedisSessionStore(client, prefix="bench:"), relay=RedisEventRelay(client, prefix="bench:"),
                      new_session=lambda: AgentSession(stamped_provider(n_events, pace)),
                      provider=lambda: stamped_provider(n_events, pace))


_lock = threading.Lock()
_runner: Optional[TurnRunner] = None


def run_turn(data: dict) -> None:
    """The RQ task."""
    global _runner
    with _lock:
        if _runner is None:
            _runner = make_runner(redis.Redis.from_url(os.environ["BENCH_REDIS_URL"]), int(os.environ["BENCH_EVENTS"]),
                                  float(os.environ.get("BENCH_PACE", "0")))
    _runner.run(TurnJob.from_dict(data))
