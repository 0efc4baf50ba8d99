"""Log records the library emits during a turn carry its turn, request and tool-call ids."""

from __future__ import annotations

import json
import logging

import pytest

from agcore_sync import _instrument
from agcore_sync.agent.session import AgentSession
from agcore_sync.llm.errors import ServerError
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.loop.cycle import CycleConfig, LlmCycle
from agcore_sync.tools.function import tool
from agcore_sync.tools.registry import ToolRegistry

FIELDS = ("agcore_turn_id", "agcore_request_id", "agcore_tool_call_id")
RETRY_FAST = CycleConfig(retry=RetryConfig(initial_backoff=0.0, jitter=False))


class Collect(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.fixture
def records():
    handler = Collect()
    root = logging.getLogger("agcore_sync")
    level = root.level
    root.setLevel(logging.DEBUG)
    root.addHandler(handler)
    yield handler.records
    root.removeHandler(handler)
    root.setLevel(level)


#: A library logger a tool writes to, to see what a record in a tool thread carries.
tool_log = _instrument.get_logger("agcore_sync.tests.tool")


@tool
def lookup(key: str) -> str:
    """Look a key up."""
    tool_log.info("looking up %s", key)
    return key.upper()


def fields(record):
    return tuple(getattr(record, name) for name in FIELDS)


@pytest.mark.parametrize("stream", [False, True], ids=["submit_turn", "submit_turn_stream"])
def test_records_of_a_turn_carry_its_turn_request_and_tool_call_ids(records, stream):
    provider = MockProvider([ServerError("busy", status_code=503),
                             MockProvider.tool_calls(("call_1", "lookup", {"key": "a"}),
                                                     ("call_2", "lookup", {"key": "b"})),
                             MockProvider.text("A, B")])
    with ToolRegistry() as registry:
        registry.register(lookup)
        session = AgentSession(provider, RETRY_FAST, registry=registry)
        if stream:
            list(session.submit_turn_stream("look a and b up"))
        else:
            session.submit_turn("look a and b up")
    retry = next(r for r in records if r.name == "agcore_sync.llm.retry")
    tools = sorted((r for r in records if r.name == "agcore_sync.tests.tool"), key=lambda r: r.agcore_tool_call_id)
    turn_id, request_id, tool_call_id = fields(retry)
    assert turn_id and request_id and tool_call_id is None
    assert [r.agcore_tool_call_id for r in tools] == ["call_1", "call_2"]
    assert {r.agcore_turn_id for r in tools} == {turn_id}
    # The tools run between provider calls: no request id.
    assert {r.agcore_request_id for r in tools} == {None}
    assert all(r.threadName.startswith("agcore-tool-") for r in tools)


def test_every_turn_and_every_request_gets_its_own_id(records):
    provider = MockProvider([ServerError("busy", status_code=503), MockProvider.text("1"),
                             ServerError("busy", status_code=503), ServerError("busy", status_code=503),
                             MockProvider.text("2")])
    session = AgentSession(provider, RETRY_FAST)
    session.submit_turn("one")
    session.submit_turn("two")
    retries = [r for r in records if r.name == "agcore_sync.llm.retry"]
    assert len(retries) == 3
    assert retries[0].agcore_turn_id != retries[1].agcore_turn_id == retries[2].agcore_turn_id
    # Retries of one provider call share its request id.
    assert retries[0].agcore_request_id != retries[1].agcore_request_id == retries[2].agcore_request_id


def test_a_tool_loop_outside_a_session_has_a_turn_id_too(records):
    cycle = LlmCycle(MockProvider([ServerError("busy", status_code=503), MockProvider.text("hi")]), RETRY_FAST)
    cycle.submit_with_tools("hello", ToolRegistry())
    (retry,) = [r for r in records if r.name == "agcore_sync.llm.retry"]
    assert retry.agcore_turn_id and retry.agcore_request_id


def test_records_outside_a_turn_carry_none_and_extra_wins(records):
    tool_log.info("outside")
    tool_log.info("explicit", extra={"agcore_turn_id": "mine"})
    assert fields(records[0]) == (None, None, None)
    assert fields(records[1]) == ("mine", None, None)


def test_the_fields_reach_a_json_formatter(records):
    class JsonFormatter(logging.Formatter):
        def format(self, record):
            return json.dumps({"message": record.getMessage(), **{name: getattr(record, name) for name in FIELDS}})

    session = AgentSession(MockProvider([ServerError("busy", status_code=503), MockProvider.text("1")]), RETRY_FAST)
    session.submit_turn("one")
    line = json.loads(JsonFormatter().format(next(r for r in records if r.name == "agcore_sync.llm.retry")))
    assert set(line) == {"message", *FIELDS}
    assert line["message"].startswith("retry 1/3")
    assert line["agcore_turn_id"] and line["agcore_request_id"] and line["agcore_turn_id"] != line["agcore_request_id"]


def test_every_library_logger_has_the_filter():
    import agcore_sync.agent.session  # noqa: F401 - import the modules that make loggers
    import agcore_sync.mcp  # noqa: F401

    names = [n for n in logging.Logger.manager.loggerDict if n.startswith("agcore_sync.") and
             isinstance(logging.Logger.manager.loggerDict[n], logging.Logger) and not n.startswith("agcore_sync.tests")
             and not n.startswith("agcore_sync.mcp.server")]
    assert names
    missing = [n for n in names if not any(isinstance(f, _instrument.LogFields) for f in logging.getLogger(n).filters)]
    assert missing == []
