"""The tiny app the background-turn tests run: a TurnRunner over the demo model and a few tools.

The worker subprocesses (``rq worker``, ``celery worker``) import it by name;
the in-process tests build runners with :func:`make_runner`. The demo model
(:class:`~agcore_sync.cli.demo.DemoProvider`) answers ``call TOOL {json}``
with that call, then phrases the tool's result, so a test scripts a turn
through its user text alone, across processes.

Environment of a worker: ``AGCORE_JOBS_REDIS_URL`` (the test's
redis-server), ``AGCORE_JOBS_LEASE_TTL`` (seconds, default 60).

Tools (besides the demo's ``add``, ``multiply``, ...):

- ``hold(name)``: waits until the test pushes to ``jobs-test:release:<name>``
  (at most :data:`HOLD_TIMEOUT`): a tool that is running for as long as the
  test needs, to cancel or kill a worker mid-tool.
- ``delete_file(path)``: needs approval, so a turn calling it pauses.
"""

from __future__ import annotations

import os
import threading
from typing import Optional

import redis

from agcore_sync import AgentSession, ToolRegistry, tool
from agcore_sync.cli.demo import DemoProvider, demo_tools
from agcore_sync.contrib.jobs import TurnJob, TurnRunner
from agcore_sync.contrib.redis import RedisEventRelay, RedisSessionStore

#: The longest a ``hold`` call waits for its release (seconds).
HOLD_TIMEOUT = 30

#: The prefix of every key the tests use.
PREFIX = "agcore:"


def release_key(name: str) -> str:
    """The list a test pushes to, to end ``hold(name)``."""
    return f"jobs-test:release:{name}"


def make_registry(client: redis.Redis) -> ToolRegistry:
    """A new registry: the demo tools, ``hold`` and ``delete_file``."""

    @tool
    def hold(name: str) -> str:
        """Wait until the test releases ``name``."""
        return "released" if client.blpop([release_key(name)], timeout=HOLD_TIMEOUT) else "timed out"

    @tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file (after a human approved it)."""
        return f"deleted {path}"

    registry = ToolRegistry()
    for each in [*demo_tools(), hold, delete_file]:
        registry.register(each)
    return registry


def make_runner(client: redis.Redis, *, lease_ttl: float = 60.0) -> TurnRunner:
    """A runner on ``client``: the Redis store and relay, the demo model, a new registry per job."""
    return TurnRunner(store=RedisSessionStore(client, prefix=PREFIX), relay=RedisEventRelay(client, prefix=PREFIX),
                      new_session=lambda: AgentSession(DemoProvider(), registry=make_registry(client)),
                      provider=DemoProvider, registry=lambda: make_registry(client), lease_ttl=lease_ttl)


_lock = threading.Lock()
_runner: Optional[TurnRunner] = None


def runner() -> TurnRunner:
    """The worker's runner, built on first use from the environment."""
    global _runner
    with _lock:
        if _runner is None:
            client = redis.Redis.from_url(os.environ["AGCORE_JOBS_REDIS_URL"])
            _runner = make_runner(client, lease_ttl=float(os.environ.get("AGCORE_JOBS_LEASE_TTL", "60")))
        return _runner


def run_turn(data: dict) -> None:
    """The RQ task: run one turn job."""
    runner().run(TurnJob.from_dict(data))
