"""The agent both sides share: the model, the tools, a new session, the store and the relay.

The web processes and the job workers import this module, so they agree on
the Redis keys and on the tools a stored session may call. With
``OPENAI_API_KEY`` set the model is OpenAI's (``OPENAI_MODEL``, default
``gpt-4o-mini``); without it, the built-in scripted demo model of
agcore_sync, which calls the demo tools as a real model would and needs no
network. ``multiply`` waits for a human's approval, so the page shows its
Approve and Deny buttons: ask "What is 17 * 23?".
"""

from __future__ import annotations

import functools
import os

import redis

from agcore_sync import AgentSession, FunctionTool, LlmProvider, OpenAIProvider, ToolRegistry
from agcore_sync.cli.demo import DemoProvider, demo_tools
from agcore_sync.contrib.jobs import TurnRunner
from agcore_sync.contrib.redis import RedisEventRelay, RedisSessionStore

#: Where Redis is: sessions, the turns' event streams and the job queue.
REDIS_URL = os.environ.get("REDIS_URL", "redis://127.0.0.1:6379/0")

#: The tools whose every call waits for a human.
NEEDS_APPROVAL = {"multiply"}

#: Seconds a worker holds a session's lease without renewing it (a killed worker blocks it this long at most).
LEASE_TTL = 30.0


def provider() -> LlmProvider:
    """The model: OpenAI when OPENAI_API_KEY is set, else the scripted demo model."""
    if os.environ.get("OPENAI_API_KEY"):
        return OpenAIProvider(model=os.environ.get("OPENAI_MODEL", "gpt-4o-mini"))
    return DemoProvider()


def registry() -> ToolRegistry:
    """The tools: the demo tools, with ``multiply`` behind an approval."""
    tools = []
    for demo in demo_tools():
        if demo.name in NEEDS_APPROVAL:
            demo = FunctionTool(demo.func, name=demo.name, description=demo.description, requires_approval=True)
        tools.append(demo)
    tools_registry = ToolRegistry()
    tools_registry.register_all(tools)
    return tools_registry


def new_session() -> AgentSession:
    """A new conversation's session."""
    return AgentSession(provider(), registry=registry(),
                        system_prompt="You are a helpful assistant. Use the tools for arithmetic.")


@functools.cache
def client() -> redis.Redis:
    """This process's Redis client (one per process; its pool is shared by the threads)."""
    return redis.Redis.from_url(REDIS_URL)


@functools.cache
def relay() -> RedisEventRelay:
    """The turns' event streams."""
    return RedisEventRelay(client())


@functools.cache
def runner() -> TurnRunner:
    """Runs a turn in a job worker; the web side cancels through it."""
    return TurnRunner(store=RedisSessionStore(client()), relay=relay(), new_session=new_session,
                      provider=provider, registry=registry, lease_ttl=LEASE_TTL)
