from __future__ import annotations

import json
import logging
import subprocess
import sys
import threading
from typing import Any, Callable, Dict, List, Optional

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agcore_sync.llm.types import ToolDef
from agcore_sync.tools import _validation
from agcore_sync.tools import registry as registry_module
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import (
    InvalidArgumentsError,
    PermissionDeniedError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
)
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig
from agcore_sync.tools.registry import ToolInvocation, ToolRegistry

#: Bound on every wait in these tests; reached only when something is broken.
WAIT = 10.0

ADD_SCHEMA = {
    "type": "object",
    "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
    "required": ["a", "b"],
    "additionalProperties": False,
}


class FnTool(BaseTool):
    """A tool around a function, counting its executions."""

    def __init__(self, name: str, fn: Callable[[Dict[str, Any]], Any], parameters=None, permissions=()):
        self.name = name
        self.description = f"the {name} tool"
        self.parameters = parameters if parameters is not None else {"type": "object"}
        self.required_permissions = permissions
        self.fn = fn
        self.calls = 0
        self.lock = threading.Lock()

    def execute(self, args):
        with self.lock:
            self.calls += 1
        return self.fn(args)


def add_tool(**kwargs) -> FnTool:
    return FnTool("add", lambda args: args["a"] + args["b"], ADD_SCHEMA, **kwargs)


def blocking_tool(name: str, release: threading.Event, started: Optional[threading.Event] = None) -> FnTool:
    def run(args):
        if started is not None:
            started.set()
        assert release.wait(WAIT)
        return "released"

    return FnTool(name, run)


def pool_threads() -> List[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("agcore-tool")]


def join_all(threads: List[threading.Thread]) -> None:
    for thread in threads:
        thread.join(WAIT)
    assert not [t.name for t in threads if t.is_alive()]


@pytest.fixture
def registry():
    with ToolRegistry() as reg:
        yield reg


# -- registration ---------------------------------------------------------------


def test_registered_tools_are_found_listed_and_described_in_order(registry):
    add, echo = add_tool(), FnTool("echo", lambda args: args)
    registry.register(add)
    registry.register_all([echo])
    assert registry.get("add") is add
    assert registry.get("nope") is None
    assert registry.list_tools() == ["add", "echo"]
    assert registry.definitions() == [
        ToolDef("add", "the add tool", ADD_SCHEMA),
        ToolDef("echo", "the echo tool", {"type": "object"}),
    ]


def test_registering_a_taken_name_raises_and_changes_nothing(registry):
    first = add_tool()
    registry.register(first)
    with pytest.raises(ToolError, match='"add" is already registered') as info:
        registry.register(add_tool())
    assert info.value.tool_name == "add"
    assert registry.get("add") is first


def test_register_all_registers_all_or_none(registry):
    with pytest.raises(ToolError, match='"x"'):
        registry.register_all([FnTool("w", str), FnTool("x", str), FnTool("x", str)])
    assert registry.list_tools() == []


def test_only_base_tools_with_real_permissions_can_be_registered(registry):
    with pytest.raises(TypeError):
        registry.register(lambda args: args)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        registry.register(FnTool("odd", str, permissions=(42,)))
    assert registry.list_tools() == []


def test_unregister_returns_the_tool_and_none_when_missing(registry):
    add = add_tool()
    registry.register(add)
    assert registry.unregister("add") is add
    assert registry.unregister("add") is None
    with pytest.raises(ToolNotFoundError):
        registry.invoke("add", {"a": 1, "b": 2})


# -- invoke ------------------------------------------------------------------------


def test_invoke_runs_the_tool_and_records_the_call(registry):
    registry.register(add_tool())
    inv = registry.invoke("add", {"a": 2, "b": 3}, tool_call_id="call_1")
    assert (inv.tool_name, inv.input, inv.output, inv.error, inv.tool_call_id) == (
        "add",
        {"a": 2, "b": 3},
        5,
        None,
        "call_1",
    )
    assert inv.ok and inv.result() == 5 and inv.content() == "5"
    assert inv.duration_s > 0


def test_without_a_timeout_invoke_runs_in_the_callers_thread(registry):
    registry.register(FnTool("where", lambda args: threading.current_thread().name))
    assert registry.invoke("where", {}).output == threading.current_thread().name
    assert registry.invoke_all([("where", {})])[0].output == threading.current_thread().name
    assert registry.invoke("where", {}, timeout=WAIT).output.startswith("agcore-tool")


def test_an_unknown_tool_raises_from_invoke_and_is_an_error_in_invoke_all(registry):
    with pytest.raises(ToolNotFoundError, match='"nope"') as info:
        registry.invoke("nope", {})
    assert info.value.recoverable is True
    [inv] = registry.invoke_all([("c1", "nope", {"q": 1})])
    assert isinstance(inv.error, ToolNotFoundError)
    assert (inv.tool_name, inv.input, inv.tool_call_id) == ("nope", {"q": 1}, "c1")
    assert inv.content().startswith('Error in tool "nope": ')


def test_a_denied_call_never_reaches_validation_or_execute():
    shell = FnTool("bash", lambda args: "ran", ADD_SCHEMA, permissions=(Permission.SHELL,))
    with ToolRegistry(PermissionChecker()) as registry:
        registry.register(shell)
        with pytest.raises(PermissionDeniedError, match='"bash"'):
            registry.invoke("bash", "not even a dict")
        [inv] = registry.invoke_all([("bash", {"a": 1, "b": 2})])
        assert isinstance(inv.error, PermissionDeniedError)
        assert '"shell"' in inv.content()
    assert shell.calls == 0


def test_invalid_arguments_never_reach_execute_and_the_message_gives_path_and_reason(registry):
    add = add_tool()
    registry.register(add)
    inv = registry.invoke("add", {"a": 1, "b": "two"})
    assert isinstance(inv.error, InvalidArgumentsError)
    assert inv.error.recoverable is True
    assert str(inv.error) == "invalid arguments for tool \"add\" at $.b: 'two' is not of type 'integer'"
    missing = registry.invoke("add", {"a": 1})
    assert "at $: 'b' is a required property" in str(missing.error)
    extra = registry.invoke("add", {"a": 1, "b": 2, "c": 3})
    assert isinstance(extra.error, InvalidArgumentsError)
    assert add.calls == 0


@pytest.mark.parametrize("args", ['{"a": 1, "b": 2}', [1, 2], None, 5])
def test_arguments_that_are_not_an_object_are_invalid_and_never_coerced(registry, args):
    add = add_tool()
    registry.register(add)
    inv = registry.invoke("add", args)
    assert isinstance(inv.error, InvalidArgumentsError)
    assert "must be a JSON object" in str(inv.error)
    assert inv.input is args
    assert add.calls == 0


def test_the_registry_accepts_a_permission_once_configured():
    tool = FnTool("fetch", lambda args: "page", permissions=("network",))
    registry = ToolRegistry()
    with registry:
        registry.register(tool)
        assert registry.permission_checker is None
        assert registry.invoke("fetch", {}).ok
        assert registry.with_permission_checker(PermissionChecker(PermissionConfig(allowed=[]))) is registry
        assert registry.invoke("fetch", {}).ok
        registry.with_permission_checker(PermissionChecker(PermissionConfig(denied=["network"])))
        with pytest.raises(PermissionDeniedError):
            registry.invoke("fetch", {})


def test_a_tool_error_from_execute_is_kept_with_its_flag_and_gets_the_tool_name(registry):
    raised = ToolError("no such city", recoverable=False)

    def fail(args):
        raise raised

    registry.register(FnTool("weather", fail))
    inv = registry.invoke("weather", {})
    assert inv.error is raised
    assert raised.tool_name == "weather"
    assert raised.recoverable is False
    assert inv.content() == 'Error in tool "weather": no such city'
    with pytest.raises(ToolError) as info:
        inv.result()
    assert info.value is raised


def test_any_other_exception_becomes_a_tool_execution_error_with_the_cause_chained(registry):
    cause = ZeroDivisionError("division by zero")

    def fail(args):
        raise cause

    registry.register(FnTool("divide", fail))
    inv = registry.invoke("divide", {})
    assert isinstance(inv.error, ToolExecutionError)
    assert inv.error.__cause__ is cause
    assert inv.error.tool_name == "divide"
    assert inv.error.recoverable is True
    assert "ZeroDivisionError: division by zero" in inv.content()


# -- results and content() -----------------------------------------------------------


def test_content_is_json_for_structures_and_the_string_itself_for_text(registry):
    registry.register(FnTool("echo", lambda args: args["value"]))
    assert registry.invoke("echo", {"value": {"city": "北京", "temp": 22}}).content() == '{"city": "北京", "temp": 22}'
    assert registry.invoke("echo", {"value": [1, "é"]}).content() == '[1, "é"]'
    assert registry.invoke("echo", {"value": 'he said "hi"'}).content() == 'he said "hi"'
    assert registry.invoke("echo", {"value": None}).content() == "null"


@pytest.mark.parametrize(
    "value, named",
    [(b"\x89PNG", "bytes"), (object(), "object"), ({"nested": [b"x"]}, "bytes")],
    ids=["bytes", "object", "nested-bytes"],
)
def test_a_result_that_is_not_json_serialisable_is_an_error_not_a_crash(registry, value, named):
    registry.register(FnTool("odd", lambda args: value))
    inv = registry.invoke("odd", {})
    assert isinstance(inv.error, ToolExecutionError)
    assert inv.output is None
    assert "not JSON-serialisable" in str(inv.error) and named in str(inv.error)
    assert inv.content().startswith('Error in tool "odd": ')
    [batched] = registry.invoke_all([("odd", {}), ("odd", {})], timeout=WAIT)[:1]
    assert isinstance(batched.error, ToolExecutionError)


def test_content_of_a_hand_made_invocation_with_bytes_raises_a_clear_error():
    with pytest.raises(ToolExecutionError, match='"img".*not JSON-serialisable.*bytes'):
        ToolInvocation("img", {}, output=b"\x00").content()


def test_an_invocation_defaults_to_a_successful_empty_call():
    inv = ToolInvocation("t", {"x": 1})
    assert (inv.output, inv.error, inv.tool_call_id, inv.duration_s, inv.ok) == (None, None, None, 0.0, True)
    failed = ToolInvocation("t", {}, error=ToolError("bad"))
    assert not failed.ok
    assert failed.content() == 'Error in tool "t": bad'


# -- validators ---------------------------------------------------------------------------


def test_a_validator_is_compiled_once_per_registered_tool(registry, monkeypatch):
    compiled = []
    real = _validation.compile_validator

    def counting(name, schema):
        compiled.append(name)
        return real(name, schema)

    monkeypatch.setattr(_validation, "compile_validator", counting)
    add = add_tool()
    registry.register(add)
    for args in ({"a": 1, "b": 2}, {"a": "x"}, {"a": 3, "b": 4}):
        registry.invoke("add", args)
    registry.invoke_all([("add", {"a": 1, "b": 1})] * 3, timeout=WAIT)
    assert compiled == ["add"]
    registry.unregister("add")
    registry.register(add)
    assert registry.invoke("add", {"a": 1, "b": 2}).ok
    assert compiled == ["add", "add"]


def test_a_tool_with_an_invalid_schema_fails_unrecoverably_without_running(registry):
    tool = FnTool("broken", str, {"type": "object", "properties": {"a": {"type": 12}}})
    registry.register(tool)
    inv = registry.invoke("broken", {})
    assert isinstance(inv.error, ToolError)
    assert inv.error.recoverable is False
    assert "invalid parameters schema" in str(inv.error)
    assert tool.calls == 0


# Values on the edges of JSON Schema's types: bool is not an integer, 1.0 is.
TRICKY = st.sampled_from([True, False, 0, 1, -7, 1.0, 1.5, float("inf"), "", "1", None, [], {}, [1], {"a": 1}])
JSON_VALUES = st.one_of(
    TRICKY,
    TRICKY,
    st.integers() | st.floats(allow_nan=False) | st.text(max_size=3),
    st.lists(TRICKY, max_size=2) | st.dictionaries(st.text(max_size=2), TRICKY, max_size=2),
)
TYPES = ["string", "integer", "number", "boolean", "null", "array", "object"]
PROPERTY_SCHEMAS = st.one_of(
    st.sampled_from(TYPES).map(lambda t: {"type": t, "description": "d"}),
    st.lists(st.sampled_from(TYPES), min_size=1, max_size=3, unique=True).map(lambda ts: {"type": ts}),
    st.sampled_from([{}, {"enum": [0, 1]}, {"type": "array", "items": {"type": "integer"}}]),
)


@st.composite
def schemas_and_arguments(draw):
    names = draw(st.lists(st.sampled_from("abcd"), max_size=4, unique=True))
    properties = {name: draw(PROPERTY_SCHEMAS) for name in names}
    schema: Dict[str, Any] = {"type": "object", "properties": properties}
    schema["required"] = draw(st.lists(st.sampled_from(names), unique=True)) if names else []
    extra = draw(st.sampled_from([None, True, False]))
    if extra is not None:
        schema["additionalProperties"] = extra
    arguments = draw(st.dictionaries(st.sampled_from([*names, "e"]), JSON_VALUES, max_size=5))
    return schema, arguments


def _finite(arguments):
    try:
        json.dumps(arguments, allow_nan=False)
    except ValueError:
        return False
    return True


@settings(max_examples=300, deadline=None)
@given(schemas_and_arguments())
def test_the_registry_accepts_exactly_the_arguments_jsonschema_accepts(case):
    from jsonschema import Draft202012Validator

    schema, arguments = case
    with ToolRegistry() as registry:
        registry.register(FnTool("t", lambda args: "ok", schema))
        inv = registry.invoke("t", arguments)
    # Infinity is no JSON value: refused whatever the schema (DESIGN "Round 5 / Trust").
    expected = Draft202012Validator(schema).is_valid(arguments) and _finite(arguments)
    assert inv.ok is expected, inv.error
    if not expected:
        assert isinstance(inv.error, InvalidArgumentsError)


def test_every_type_keyword_accepts_exactly_the_values_jsonschema_accepts(registry):
    from jsonschema import Draft202012Validator

    values = [True, False, 0, 1, -7, 2**70, 1.0, -2.0, 1.5, float("inf"), "", "1", None, [], [1], {}, {"a": 1}]
    kinds = [*TYPES, ["integer", "null"], ["number", "string"], ["boolean", "array", "object"]]
    mismatches = []
    for i, kind in enumerate(kinds):
        schema = {"type": "object", "properties": {"v": {"type": kind}}, "required": ["v"]}
        registry.register(FnTool(f"t{i}", lambda args: "ok", schema))
        for value in values:
            # Infinity is no JSON value: refused whatever the schema (DESIGN "Round 5 / Trust").
            expected = Draft202012Validator(schema).is_valid({"v": value}) and value != float("inf")
            if registry.invoke(f"t{i}", {"v": value}).ok != expected:
                mismatches.append((kind, value))
    assert mismatches == []


def test_importing_the_registry_does_not_import_jsonschema():
    code = "import sys, agcore_sync.tools.registry; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True)
    assert out.stdout.strip() == "False"


# -- invoke_all -------------------------------------------------------------------------


@pytest.mark.parametrize("timeout", [None, WAIT])
def test_invoke_all_runs_calls_in_parallel(timeout):
    n = 4
    barrier = threading.Barrier(n, timeout=WAIT)  # broken (an error) unless all n calls run at once

    def meet(args):
        barrier.wait()
        return args["i"]

    tool = FnTool("meet", meet)
    with ToolRegistry(max_workers=n) as registry:
        registry.register(tool)
        results = registry.invoke_all([("meet", {"i": i}) for i in range(n)], timeout=timeout)
    assert [inv.error for inv in results] == [None] * n
    assert [inv.output for inv in results] == list(range(n))


@pytest.mark.parametrize("timeout", [None, WAIT])
def test_invoke_all_keeps_call_order_when_calls_finish_in_reverse(timeout):
    n = 4
    turns = [threading.Event() for _ in range(n)]
    turns[-1].set()

    def step(args):
        i = args["i"]
        assert turns[i].wait(WAIT)
        if i:
            turns[i - 1].set()  # the previous call may finish only after this one
        return i

    finished: List[int] = []
    with ToolRegistry(max_workers=n) as registry:
        registry.register(FnTool("step", step))
        calls = [(f"id{i}", "step", {"i": i}) for i in range(n)]
        results = registry.invoke_all(calls, timeout=timeout, on_complete=lambda pos, inv: finished.append(pos))
    assert [(inv.tool_call_id, inv.output) for inv in results] == [(f"id{i}", i) for i in range(n)]
    assert finished == list(reversed(range(n)))


def test_invoke_all_never_raises_for_a_calls_failure():
    def fail(args):
        raise RuntimeError("tool bug")

    checker = PermissionChecker(PermissionConfig(allowed=[], denied=["shell"]))
    with ToolRegistry(checker) as registry:
        registry.register_all([add_tool(), FnTool("fail", fail), FnTool("bash", str, permissions=("shell",))])
        results = registry.invoke_all(
            [("add", {"a": 1, "b": 1}), ("nope", {}), ("bash", {}), ("add", "{}"), ("fail", {})]
        )
    assert results[0].output == 2
    assert [type(inv.error) for inv in results[1:]] == [
        ToolNotFoundError,
        PermissionDeniedError,
        InvalidArgumentsError,
        ToolExecutionError,
    ]


def test_invoke_all_reports_each_call_exactly_once_to_on_complete(registry):
    registry.register(add_tool())
    seen: Dict[int, ToolInvocation] = {}
    lock = threading.Lock()

    def on_complete(position, inv):
        with lock:
            assert position not in seen
            seen[position] = inv

    results = registry.invoke_all(
        [("add", {"a": 1, "b": 2}), ("nope", {}), ("add", {"a": "x"}), ("add", {"a": 2, "b": 2})],
        timeout=WAIT,
        on_complete=on_complete,
    )
    assert [seen[i] for i in range(4)] == results


def test_an_on_complete_that_raises_is_logged_and_ignored(registry, caplog):
    registry.register(add_tool())

    def on_complete(position, inv):
        raise RuntimeError("callback bug")

    with caplog.at_level(logging.ERROR, logger="agcore_sync.tools.registry"):
        [inv] = registry.invoke_all([("add", {"a": 1, "b": 2})], on_complete=on_complete)
    assert inv.output == 3
    assert "on_complete" in caplog.text


def test_invoke_all_rejects_a_malformed_call(registry):
    with pytest.raises(ValueError, match="tool_call_id, name, args"):
        registry.invoke_all([("add",)])
    assert registry.invoke_all([]) == []


# -- timeouts and close ------------------------------------------------------------------


def test_a_tool_past_its_timeout_becomes_an_unrecoverable_timeout_error():
    release, started = threading.Event(), threading.Event()
    registry = ToolRegistry()
    registry.register_all([blocking_tool("hang", release, started), add_tool()])
    try:
        assert registry.invoke("add", {"a": 1, "b": 1}, timeout=WAIT).ok  # a worker is up and idle
        inv = registry.invoke("hang", {}, tool_call_id="c9", timeout=0.2)
        assert isinstance(inv.error, ToolTimeoutError)
        assert inv.error.recoverable is False
        assert inv.error.tool_name == "hang"
        assert inv.tool_call_id == "c9"
        assert "0.2 s" in str(inv.error) and "abandoned" in str(inv.error)
        assert inv.duration_s >= 0.2
        assert started.wait(WAIT)
        threads = pool_threads()
        assert threads
    finally:
        release.set()
        registry.close()
    join_all(threads)


def test_one_deadline_covers_the_batch_including_queued_calls():
    release, started = threading.Event(), threading.Event()
    hang = blocking_tool("hang", release, started)
    queued = FnTool("queued", lambda args: "ran")
    with ToolRegistry(max_workers=1) as registry:
        registry.register_all([hang, queued, add_tool()])
        results = registry.invoke_all([("hang", {}), ("queued", {}), ("nope", {})], timeout=0.1)
        threads = pool_threads()
        release.set()
    join_all(threads)
    assert [type(inv.error) for inv in results] == [ToolTimeoutError, ToolTimeoutError, ToolNotFoundError]
    assert "could not start" in str(results[1].error)
    assert queued.calls == 0  # cancelled while queued: it never runs, even after the worker is free


def test_a_call_finishing_before_the_deadline_keeps_its_result(registry):
    release = threading.Event()
    registry.register_all([blocking_tool("hang", release), add_tool()])
    try:
        fast, slow = registry.invoke_all([("add", {"a": 1, "b": 2}), ("hang", {})], timeout=0.1)
    finally:
        release.set()
    assert fast.output == 3
    assert isinstance(slow.error, ToolTimeoutError)


def test_close_returns_promptly_while_a_tool_is_stuck(monkeypatch, caplog):
    monkeypatch.setattr(registry_module, "CLOSE_TIMEOUT_SECS", 0.05)
    release, started, finished = threading.Event(), threading.Event(), threading.Event()

    def stuck(args):
        started.set()
        assert release.wait(WAIT)
        finished.set()

    registry = ToolRegistry()
    registry.register(FnTool("stuck", stuck))
    caller = threading.Thread(target=lambda: registry.invoke("stuck", {}, timeout=WAIT))
    caller.start()
    assert started.wait(WAIT)
    threads = pool_threads()
    closer = threading.Thread(target=registry.close)
    with caplog.at_level(logging.WARNING, logger="agcore_sync.tools.registry"):
        closer.start()
        closer.join(WAIT)
    try:
        assert not closer.is_alive()
        assert not finished.is_set()  # close() returned while the tool was still running
        assert "stuck" in caplog.text and "abandoned" in caplog.text
    finally:
        release.set()
    assert finished.wait(WAIT)
    join_all(threads + [caller, closer])


def test_close_lets_running_tools_finish_within_its_bound_and_joins_the_workers():
    release, started = threading.Event(), threading.Event()
    registry = ToolRegistry()
    registry.register(blocking_tool("slow", release, started))
    results: List[ToolInvocation] = []
    caller = threading.Thread(target=lambda: results.extend(registry.invoke_all([("slow", {})], timeout=WAIT)))
    caller.start()
    assert started.wait(WAIT)
    threads = pool_threads()
    release.set()
    registry.close()
    assert not [t for t in threads if t.is_alive()]  # close() joined them: nothing was stuck
    join_all([caller])
    assert results[0].output == "released"


def test_a_closed_registry_refuses_to_be_used():
    registry = ToolRegistry()
    registry.register(add_tool())
    registry.close()
    registry.close()  # idempotent
    for use in (
        lambda: registry.invoke("add", {"a": 1, "b": 2}),
        lambda: registry.invoke("add", {"a": 1, "b": 2}, timeout=1),
        lambda: registry.invoke_all([("add", {"a": 1, "b": 2})]),
        lambda: registry.register(FnTool("other", str)),
    ):
        with pytest.raises(ToolError, match="closed") as info:
            use()
        assert info.value.recoverable is False


def test_leaving_the_with_block_closes_the_registry():
    with ToolRegistry() as registry:
        registry.register(add_tool())
        registry.invoke_all([("add", {"a": 1, "b": 2})] * 2, timeout=WAIT)
        threads = pool_threads()
    with pytest.raises(ToolError, match="closed"):
        registry.invoke("add", {"a": 1, "b": 2})
    assert threads and not [t for t in threads if t.is_alive()]


# -- concurrency --------------------------------------------------------------------------


def test_register_and_unregister_may_race_with_invocations_from_several_threads():
    rounds, invokers = 300, 4
    flip = FnTool("flip", lambda args: "ok", {"type": "object", "properties": {"n": {"type": "integer"}}})
    registry = ToolRegistry(max_workers=4)
    registry.register(add_tool())
    unexpected: List[BaseException] = []
    outcomes: List[str] = []
    start = threading.Barrier(invokers + 1, timeout=WAIT)

    def invoke_many(k):
        start.wait()
        for i in range(rounds):
            try:
                inv = registry.invoke("flip", {"n": i}, timeout=WAIT if i % 2 else None)
                outcomes.append("ok" if inv.ok else repr(inv.error))
                assert registry.invoke_all([("flip", {"n": i}), ("add", {"a": k, "b": i})])[1].output == k + i
            except ToolNotFoundError:
                outcomes.append("missing")
            except BaseException as exc:  # noqa: BLE001 - anything else is a bug
                unexpected.append(exc)

    def flip_flop():
        start.wait()
        for _ in range(rounds):
            registry.register(flip)
            registry.unregister("flip")

    threads = [threading.Thread(target=invoke_many, args=(k,)) for k in range(invokers)]
    threads.append(threading.Thread(target=flip_flop))
    for thread in threads:
        thread.start()
    join_all(threads)
    registry.close()
    assert unexpected == []
    assert set(outcomes) <= {"ok", "missing"}
    assert len(outcomes) == rounds * invokers
    assert registry.list_tools() == ["add"]


def test_a_tool_that_never_returns_does_not_keep_the_interpreter_from_exiting():
    import subprocess
    import sys
    import textwrap

    script = textwrap.dedent('''
        import threading
        from agcore_sync import BaseTool, ToolRegistry

        class Stuck(BaseTool):
            name = "stuck"
            description = "never returns"
            parameters = {"type": "object", "properties": {}}

            def execute(self, args):
                threading.Event().wait()

        registry = ToolRegistry()
        registry.register(Stuck())
        result = registry.invoke("stuck", {}, timeout=0.1)
        print(type(result.error).__name__, flush=True)
    ''')
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "ToolTimeoutError"


def test_pool_workers_are_named_daemons_and_close_joins_them():
    import threading

    from agcore_sync import BaseTool, ToolRegistry

    class Echo(BaseTool):
        name = "echo"
        description = "echo"
        parameters = {"type": "object", "properties": {}}

        def execute(self, args):
            return threading.current_thread().name

    registry = ToolRegistry()
    registry.register(Echo())
    names = [inv.output for inv in registry.invoke_all([("echo", {})] * 4, timeout=10)]
    workers = [t for t in threading.enumerate() if t.name.startswith("agcore-tool-")]
    assert workers and all(t.daemon for t in workers)
    assert any(name.startswith("agcore-tool-") for name in names)
    registry.close()
    assert not any(t.is_alive() for t in workers)
