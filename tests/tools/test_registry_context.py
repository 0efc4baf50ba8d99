"""The registry runs every tool in a copy of the caller's contextvars context, taken at submission."""

from __future__ import annotations

import contextvars
import threading

import pytest

from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

#: Bound on every wait for something that must happen.
WAIT = 5.0

request_id: contextvars.ContextVar[str] = contextvars.ContextVar("request_id", default="unset")


@tool
def whoami() -> str:
    """Return the request id the tool sees, and the thread it runs on."""
    return f"{request_id.get()}@{threading.current_thread().name}"


@tool
def overwrite() -> str:
    """Set the request id inside the tool; return what it was."""
    seen = request_id.get()
    request_id.set("set-by-tool")
    return seen


@pytest.fixture
def registry():
    with ToolRegistry() as reg:
        reg.register_all([whoami, overwrite])
        yield reg


def in_context(value, fn, *args, **kwargs):
    """Run ``fn`` in a fresh context where request_id is ``value`` (as a web framework would per request)."""

    def run():
        request_id.set(value)
        return fn(*args, **kwargs)

    return contextvars.Context().run(run)


def test_a_tool_run_inline_by_invoke_sees_the_callers_context_variable(registry):
    result = in_context("req-1", registry.invoke, "whoami", {})
    assert result.output == f"req-1@{threading.current_thread().name}"


def test_a_tool_run_on_the_pool_by_invoke_sees_the_callers_context_variable(registry):
    result = in_context("req-2", registry.invoke, "whoami", {}, timeout=WAIT)
    value, thread = result.output.split("@")
    assert value == "req-2" and thread.startswith("agcore-tool-")


def test_every_call_of_invoke_all_sees_the_context_of_its_own_batch_on_reused_workers(registry):
    calls = [("whoami", {})] * 4
    first = in_context("batch-a", registry.invoke_all, calls, timeout=WAIT)
    second = in_context("batch-b", registry.invoke_all, calls, timeout=WAIT)
    assert [inv.output.split("@")[0] for inv in first] == ["batch-a"] * 4
    assert [inv.output.split("@")[0] for inv in second] == ["batch-b"] * 4
    assert any(inv.output.split("@")[1].startswith("agcore-tool-") for inv in second)


def test_invoke_all_without_a_timeout_gives_the_inline_and_the_pooled_calls_the_callers_context(registry):
    results = in_context("no-deadline", registry.invoke_all, [("whoami", {})] * 3)
    assert {inv.output.split("@")[0] for inv in results} == {"no-deadline"}


def test_on_complete_sees_the_callers_context_in_whichever_thread_settles_the_call(registry):
    seen = []
    results = in_context("req-3", registry.invoke_all, [("whoami", {})] * 3, timeout=WAIT,
                         on_complete=lambda position, inv: seen.append(request_id.get()))
    assert all(inv.ok for inv in results)
    assert seen == ["req-3"] * 3


@pytest.mark.parametrize("timeout", [None, WAIT], ids=["inline", "pool"])
def test_a_tool_that_sets_the_variable_does_not_change_the_callers_value(registry, timeout):
    def call_then_read():
        results = registry.invoke_all([("overwrite", {}), ("overwrite", {})], timeout=timeout)
        return [inv.output for inv in results], request_id.get()

    outputs, after = in_context("mine", call_then_read)
    assert outputs == ["mine", "mine"]
    assert after == "mine"
    one, after_one = in_context("mine", lambda: (registry.invoke("overwrite", {}).output, request_id.get()))
    assert (one, after_one) == ("mine", "mine")
