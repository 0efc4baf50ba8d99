from __future__ import annotations

import pickle

import pytest

from agcore_sync.errors import AgcoreError
from agcore_sync.tools.error import (
    InvalidArgumentsError,
    McpConnectionError,
    McpError,
    McpNotInitializedError,
    McpTimeoutError,
    PermissionDeniedError,
    ToolError,
    ToolExecutionError,
    ToolNotFoundError,
    ToolTimeoutError,
)

DEFAULTS = {
    ToolError: True,
    ToolNotFoundError: True,
    ToolExecutionError: True,
    InvalidArgumentsError: True,
    PermissionDeniedError: True,
    McpError: True,
    ToolTimeoutError: False,
    McpNotInitializedError: False,
    McpTimeoutError: False,
    McpConnectionError: False,
}


def roundtrip(error: ToolError) -> ToolError:
    return pickle.loads(pickle.dumps(error))


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_each_tool_error_has_its_class_default_of_recoverable(cls):
    assert cls("boom").recoverable is DEFAULTS[cls]
    assert cls("boom", "t", None).recoverable is DEFAULTS[cls]


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_an_instance_may_override_the_class_default(cls):
    flipped = not DEFAULTS[cls]
    error = cls("boom", "t", flipped)
    assert error.recoverable is flipped
    assert cls("other").recoverable is DEFAULTS[cls]


@pytest.mark.parametrize("cls", list(DEFAULTS), ids=lambda c: c.__name__)
def test_each_tool_error_pickles_with_message_tool_name_and_overridden_flag(cls):
    error = cls('tool "add" failed', tool_name="add", recoverable=not DEFAULTS[cls])
    copy = roundtrip(error)
    assert type(copy) is cls
    assert str(copy) == 'tool "add" failed'
    assert copy.message == 'tool "add" failed'
    assert copy.tool_name == "add"
    assert copy.recoverable is (not DEFAULTS[cls])


@pytest.mark.parametrize("cls", [McpError, McpNotInitializedError, McpTimeoutError], ids=lambda c: c.__name__)
def test_mcp_errors_pickle_with_code_and_data(cls):
    copy = roundtrip(cls("bad request", "search", code=-32602, data={"field": ["q"]}))
    assert (copy.code, copy.data, copy.tool_name) == (-32602, {"field": ["q"]}, "search")
    assert copy.recoverable is DEFAULTS[cls]


def test_a_connection_error_pickles_with_exit_code_and_stderr_tail():
    error = McpConnectionError("server exited", code=None, data=None, exit_code=3, stderr_tail="Traceback\nBoom")
    copy = roundtrip(error)
    assert (copy.exit_code, copy.stderr_tail, copy.code, copy.recoverable) == (3, "Traceback\nBoom", None, False)


def test_the_tree_is_as_documented():
    for cls in DEFAULTS:
        assert issubclass(cls, ToolError)
        assert issubclass(cls, AgcoreError)
    for cls in (McpNotInitializedError, McpTimeoutError, McpConnectionError):
        assert issubclass(cls, McpError)
    assert not issubclass(McpTimeoutError, ToolTimeoutError)


def test_tool_name_may_be_filled_in_after_construction_and_survives_pickling():
    error = ToolError("no such city")
    assert error.tool_name is None
    error.tool_name = "weather"
    assert roundtrip(error).tool_name == "weather"
