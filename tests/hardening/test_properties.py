"""Property tests (hypothesis): parsers, accumulators, serialisation and permissions on generated input.

- The SSE parser yields the same events however a valid stream is cut into
  network chunks, down to one byte and through multi-byte characters; the
  events are those of a small reference model of the stream.
- ``PartialMessageResponse`` rebuilds any response from the events the mock
  provider streams for it.
- Every value type and stream event survives ``to_dict`` -> JSON -> ``from_dict``.
- ``PermissionChecker`` decides as a reference model of the seed's four rules.
- The JSON-RPC line parser never raises, whatever the line, and a real stdio
  ``McpClient`` keeps answering after a server wrote such lines.
"""

from __future__ import annotations

import base64
import json
import logging
import math
import sys
import threading
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from agcore_sync._http.sse import SseEvent
from agcore_sync.llm.events import (
    ApprovalRequired,
    ContentBlockEnd,
    ContentBlockStart,
    CostUpdate,
    Error,
    MessageComplete,
    MessageStart,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ToolApprovalRequest,
    ToolCallArgumentsDelta,
    ToolCallEnd,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.llm.mock import events_for
from agcore_sync.llm.partial import PartialMessageResponse
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.llm.types import (
    ContentBlock,
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ThinkingBlock,
    ToolChoice,
    ToolDef,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from agcore_sync.loop.cycle import CycleConfig
from agcore_sync.mcp import McpClient, StdioTransport
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.error import PermissionDeniedError
from agcore_sync.tools.permission import Permission, PermissionChecker, PermissionConfig
from agcore_sync.tools.registry import ToolRegistry
from tests.support.sse import parse, split_at

HERE = Path(__file__).resolve().parent
RAW_SERVER = str(HERE.parent / "mcp_servers" / "raw_server.py")
REPLAY_SERVER = str(HERE / "replay_server.py")

#: Generous per-call bound for the MCP round trips (a loaded CI machine).
MCP_TIMEOUT = 30.0

# The machine is shared and slow at times: no per-example deadline.
FAST = settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
SLOW = settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ============================================================================
# SSE: a generated stream, its expected events, and every way to cut it
# ============================================================================

_NO_EOL = st.characters(blacklist_characters="\r\n", blacklist_categories=("Cs",))
#: Field values: any characters but line ends (unicode included, multi-byte in UTF-8).
line_text = st.text(_NO_EOL, max_size=12)
#: Retry values: mostly digits, sometimes something a parser must ignore.
retry_value = st.one_of(
    st.text("0123456789", min_size=1, max_size=6), st.sampled_from(["", "1.5", "12a", "\u0661\u0662", " 7"])
)
#: Names that are not fields SSE knows (case matters: "Data" is unknown).
unknown_name = st.sampled_from(["foo", "Data", "ID", "retry2", "\u00e9vent", "data2"])

sse_line = st.one_of(
    st.tuples(st.just("data"), line_text),
    st.tuples(st.just("data_bare"), st.just("")),
    st.tuples(st.just("event"), line_text),
    st.tuples(st.just("id"), st.one_of(line_text, line_text.map(lambda s: s + "\0"))),
    st.tuples(st.just("retry"), retry_value),
    st.tuples(st.just("comment"), line_text),
    st.tuples(st.just("unknown"), st.tuples(unknown_name, line_text)),
    st.tuples(st.just("blank"), st.just("")),
)


def render_line(kind: str, value: Any) -> str:
    if kind == "data_bare":
        return "data"
    if kind == "comment":
        return ":" + value
    if kind == "blank":
        return ""
    if kind == "unknown":
        name, text = value
        return f"{name}: {text}"
    # One space after the colon is removed by the parser; the value keeps the rest.
    return f"{kind}: {value}"


def expected_events(lines: Sequence[Tuple[str, Any]]) -> List[SseEvent]:
    """The reference model: WHATWG dispatch rules, plus this parser's documented end-of-input rule."""
    events: List[SseEvent] = []
    data: List[str] = []
    event_type = ""
    retry: Optional[int] = None
    last_id = ""
    for kind, value in lines:
        if kind == "blank":
            if data:
                events.append(SseEvent(event_type or "message", "\n".join(data), last_id, retry))
            data, event_type, retry = [], "", None
        elif kind == "data":
            data.append(value)
        elif kind == "data_bare":
            data.append("")
        elif kind == "event":
            event_type = value
        elif kind == "id":
            if "\0" not in value:
                last_id = value
        elif kind == "retry":
            if value and all(c in "0123456789" for c in value):
                retry = int(value)
    if data:  # the documented difference: a pending event with data is dispatched at the end
        events.append(SseEvent(event_type or "message", "\n".join(data), last_id, retry))
    return events


@st.composite
def sse_streams(draw: Any) -> Tuple[bytes, List[SseEvent]]:
    """A valid stream (bytes) and the events it holds."""
    lines = draw(st.lists(sse_line, max_size=25))
    bom = draw(st.booleans())
    terminated = draw(st.booleans())
    parts: List[str] = ["\ufeff"] if bom else []
    previous_eol = ""
    for position, (kind, value) in enumerate(lines):
        text = render_line(kind, value)
        last = position == len(lines) - 1
        if last and not terminated:
            # An unterminated last line: the parser takes it as a line at the end.
            parts.append(text)
            break
        eol = draw(st.sampled_from(["\n", "\r", "\r\n"]))
        if previous_eol == "\r" and not text and eol == "\n":
            # CR then an empty line ended by LF would read as one CRLF: not the stream we mean.
            eol = "\r\n"
        parts.append(text + eol)
        previous_eol = eol
    body = "".join(parts).encode("utf-8")
    return body, expected_events(lines)


@FAST
@given(stream=sse_streams(), data=st.data())
def test_an_sse_stream_cut_anywhere_yields_the_events_of_the_reference_model(stream, data):
    body, expected = stream
    points = data.draw(st.lists(st.integers(0, len(body)), max_size=12), label="cut points")
    assert parse(body) == expected
    assert parse(*split_at(body, points)) == expected


@FAST
@given(stream=sse_streams())
def test_an_sse_stream_fed_one_byte_at_a_time_yields_the_same_events(stream):
    body, expected = stream
    assert parse(*[body[i:i + 1] for i in range(len(body))]) == expected


@FAST
@given(text=st.text(_NO_EOL, min_size=1, max_size=20).filter(lambda s: "\0" not in s and any(ord(c) > 0x7F for c in s)),
       data=st.data())
def test_multi_byte_characters_split_across_reads_arrive_whole(text, data):
    body = f"event: \u00fcber\ndata: {text}\nid: {text}\n\n".encode()
    # Cut strictly inside characters: offsets that are not UTF-8 sequence starts.
    inside = [i for i in range(1, len(body)) if body[i] & 0xC0 == 0x80]
    points = data.draw(st.lists(st.sampled_from(inside), min_size=1, max_size=8), label="cuts inside characters")
    assert parse(*split_at(body, points)) == [SseEvent("\u00fcber", text, text, None)]


# ============================================================================
# PartialMessageResponse: any response, streamed by the mock, rebuilt whole
# ============================================================================

json_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False, allow_infinity=False), st.text(max_size=10)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=8), inner, max_size=4)),
    max_leaves=12,
)
json_objects = st.dictionaries(st.text(max_size=10), json_values, max_size=5)


def _not_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return True
    return False


#: Tool arguments the model sent that were not JSON: kept as the raw string.
raw_arguments = st.text(min_size=1, max_size=30).filter(lambda s: s.strip() != "" and _not_json(s))
short_ids = st.text(st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)

text_blocks = st.builds(TextBlock, st.text(max_size=40))
thinking_blocks = st.builds(
    ThinkingBlock, st.text(max_size=40), st.none() | st.text(max_size=20), st.none() | st.text(max_size=20)
)
tool_use_blocks = st.builds(ToolUseBlock, short_ids, short_ids, json_objects | raw_arguments)
usages = st.builds(
    Usage, *(st.integers(0, 10**9) for _ in range(4))
)


@st.composite
def assistant_responses(draw: Any, unique_tool_ids: bool = True) -> MessageResponse:
    blocks = draw(st.lists(st.one_of(text_blocks, thinking_blocks, tool_use_blocks), max_size=6))
    if unique_tool_ids:
        ids = [b.id for b in blocks if isinstance(b, ToolUseBlock)]
        assume(len(ids) == len(set(ids)))
    return MessageResponse(
        draw(st.text(max_size=20)),
        draw(st.text(max_size=20)),
        Message(Role.ASSISTANT, blocks),
        draw(st.sampled_from(list(StopReason))),
        draw(usages),
    )


@FAST
@given(response=assistant_responses())
def test_the_events_of_any_mock_response_rebuild_that_response(response):
    events = list(events_for(response, cost=None))
    assert isinstance(events[-1], MessageComplete) and events[-1].full_response == response
    partial = PartialMessageResponse()
    # Without the final MessageComplete, so the response is really rebuilt from the pieces.
    for event in events[:-1]:
        assert partial.apply(event), f"event not used: {event!r}"
    partial.stop_reason = response.stop_reason
    assert partial.finalize() == response


@FAST
@given(response=assistant_responses())
def test_a_rebuilt_response_without_a_stop_reason_infers_tool_use_from_its_calls(response):
    partial = PartialMessageResponse()
    for event in list(events_for(response))[:-1]:
        partial.apply(event)
    rebuilt = partial.finalize()
    assert rebuilt.message == response.message
    assert rebuilt.stop_reason is (StopReason.TOOL_USE if response.message.tool_uses else StopReason.STOP)


@FAST
@given(response=assistant_responses(unique_tool_ids=False))
def test_tool_calls_that_share_an_id_still_keep_their_own_arguments(response):
    # Some OpenAI-compatible servers give every call the same id (or none).
    partial = PartialMessageResponse()
    for event in list(events_for(response))[:-1]:
        partial.apply(event)
    assert partial.message == response.message


@FAST
@given(response=assistant_responses(), noise=st.lists(st.sampled_from([
    ToolExecutionStarted("t", "c", "{}"),
    ToolExecutionCompleted("t", "c", "ok", False, 0.1),
]), max_size=3))
def test_tool_execution_events_between_responses_are_ignored_by_the_accumulator(response, noise):
    partial = PartialMessageResponse()
    for event in [*noise, *list(events_for(response))[:-1], *noise]:
        assert partial.apply(event)
    partial.stop_reason = response.stop_reason
    assert partial.finalize() == response


# ============================================================================
# to_dict / JSON / from_dict round trips
# ============================================================================

finite_floats = st.floats(allow_nan=False, allow_infinity=False)
tool_result_blocks = st.builds(ToolResultBlock, short_ids, st.text(max_size=30), st.booleans())
any_block = st.one_of(text_blocks, thinking_blocks, tool_use_blocks, tool_result_blocks)
messages = st.builds(Message, st.sampled_from(list(Role)), st.lists(any_block, max_size=4))
tool_defs = st.builds(ToolDef, short_ids, st.text(max_size=30), json_objects)
tool_choices = st.one_of(st.sampled_from(["auto", "none", "required"]), st.builds(ToolChoice, short_ids))
requests_ = st.builds(
    MessageRequest,
    st.none() | st.text(max_size=20),
    st.lists(messages, max_size=3),
    system=st.none() | st.text(max_size=30),
    tools=st.lists(tool_defs, max_size=3),
    tool_choice=tool_choices,
    max_tokens=st.none() | st.integers(1, 10**6),
    temperature=st.none() | st.floats(0, 2, allow_nan=False),
    stop=st.none() | st.lists(st.text(max_size=5), max_size=3),
)
responses_ = st.builds(
    MessageResponse, st.text(max_size=20), st.text(max_size=20), messages, st.sampled_from(list(StopReason)), usages
)
retry_configs = st.builds(
    RetryConfig,
    max_retries=st.integers(0, 10),
    initial_backoff=st.floats(0, 100, allow_nan=False),
    max_backoff=st.floats(0, 1000, allow_nan=False),
    multiplier=st.floats(1, 10, allow_nan=False),
    jitter=st.booleans(),
)
cycle_configs = st.builds(
    CycleConfig,
    model=st.none() | st.text(max_size=10),
    max_tokens=st.none() | st.integers(1, 10**6),
    temperature=st.none() | st.floats(0, 2, allow_nan=False),
    max_turns=st.none() | st.integers(1, 100),
    retry=st.none() | retry_configs,
    max_tool_turns=st.none() | st.integers(1, 100),
    tool_timeout_secs=st.none() | st.floats(0.001, 1000, allow_nan=False),
    max_tool_result_bytes=st.none() | st.integers(1, 10**7),
    max_repeated_tool_calls=st.none() | st.integers(1, 10),
    output_mode=st.sampled_from(["native", "tool", "prompted"]),
    output_retries=st.integers(0, 5),
    prompt_cache=st.booleans(),
    reasoning_effort=st.none() | st.sampled_from(["low", "medium", "high"]),
    extra_body=st.none() | st.dictionaries(st.text(max_size=8), st.integers(), max_size=3),
)

opt_text = st.none() | st.text(max_size=15)
events = st.one_of(
    st.builds(MessageStart, st.text(max_size=15), st.text(max_size=15)),
    st.builds(ContentBlockStart, st.integers(0, 100), st.sampled_from(["text", "tool_use", "thinking"]),
              opt_text, opt_text, opt_text),
    st.builds(TextDelta, st.text(max_size=30)),
    st.builds(ThinkingDelta, st.text(max_size=30), opt_text),
    st.builds(ToolCallArgumentsDelta, st.integers(0, 100), short_ids, st.text(max_size=30)),
    st.builds(ToolCallEnd, short_ids, short_ids, st.text(max_size=30)),
    st.builds(ContentBlockEnd, st.integers(0, 100)),
    st.builds(CostUpdate, usages, st.none() | st.floats(0, 1e6, allow_nan=False)),
    st.builds(MessageComplete, responses_),
    st.builds(ToolExecutionStarted, short_ids, short_ids, st.text(max_size=30)),
    st.builds(ToolExecutionCompleted, short_ids, short_ids, st.text(max_size=200), st.booleans(), finite_floats),
    st.builds(Error, st.text(max_size=30), st.none() | st.builds(ValueError, st.text(max_size=10))),
    st.builds(ApprovalRequired, st.lists(st.builds(
        ToolApprovalRequest, short_ids, short_ids,
        st.dictionaries(st.text(max_size=8), st.none() | st.booleans() | st.integers() | st.text(max_size=10),
                        max_size=3)), max_size=3)),
)


def through_json(data: Any) -> Any:
    return json.loads(json.dumps(data))


@FAST
@given(value=st.one_of(any_block, messages, tool_defs, st.builds(ToolChoice, short_ids), usages, requests_,
                       responses_, retry_configs, cycle_configs))
def test_every_value_type_round_trips_through_json(value):
    restored = type(value).from_dict(through_json(value.to_dict()))
    assert restored == value
    assert type(restored) is type(value)


@FAST
@given(block=any_block)
def test_content_blocks_round_trip_through_the_base_class_dispatch(block):
    assert ContentBlock.from_dict(through_json(block.to_dict())) == block


@FAST
@given(event=events)
def test_every_stream_event_round_trips_through_json(event):
    data = event.to_dict()
    assert data["type"] == event.type
    restored = StreamEvent.from_dict(through_json(data))
    assert type(restored) is type(event)
    assert restored == event
    assert type(event).from_dict(through_json(data)) == event


# ============================================================================
# Permissions against a reference model of the seed's four rules
# ============================================================================

UNIVERSE = ["read", "write", "delete", "network", "shell", "file_system", "db:migrate", "mail:send"]
names = st.sampled_from(UNIVERSE)


def model_allows(allowed: set, denied: set, allow_unspecified: bool, declared: List[str]) -> bool:
    """The seed's rules, written out independently of the library."""
    if not declared:
        return allow_unspecified  # our rule for tools that declare nothing
    for p in declared:
        if p in denied:  # rule 1
            return False
        if p in allowed:  # rule 2
            continue
        if allowed:  # rule 3: a non-empty allowed list is a whitelist
            return False
        if not allow_unspecified:  # rule 4
            return False
    return True


def as_permission_likes(values: List[str], objects: List[bool]) -> List[Any]:
    return [Permission.custom(v) if as_object else v for v, as_object in zip(values, objects)]


@FAST
@given(allowed=st.lists(names, max_size=5), denied=st.lists(names, max_size=5), allow_unspecified=st.booleans(),
       declared=st.lists(names, max_size=5), data=st.data())
def test_the_permission_checker_decides_as_the_reference_model(allowed, denied, allow_unspecified, declared, data):
    mix = st.lists(st.booleans(), min_size=8, max_size=8)
    config = PermissionConfig(
        allowed=as_permission_likes(allowed, data.draw(mix)),
        denied=as_permission_likes(denied, data.draw(mix)),
        allow_unspecified=allow_unspecified,
    )
    checker = PermissionChecker(config)
    expected = model_allows(set(allowed), set(denied), allow_unspecified, declared)
    declared_likes = as_permission_likes(declared, data.draw(mix))
    assert checker.is_allowed(declared_likes) is expected
    if expected:
        checker.check("the_tool", declared_likes)
    else:
        with pytest.raises(PermissionDeniedError) as info:
            checker.check("the_tool", declared_likes)
        assert info.value.tool_name == "the_tool"
        assert "the_tool" in str(info.value)


@FAST
@given(declared=st.lists(names, max_size=4))
def test_the_default_config_is_the_seeds_allow_read_and_network_deny_delete_and_shell(declared):
    expected = model_allows({"read", "network"}, {"delete", "shell"}, True, declared)
    assert PermissionChecker().is_allowed(declared) is expected
    assert PermissionChecker(PermissionConfig()).is_allowed(declared) is expected


class _Recorder(BaseTool):
    description = "records that it ran"

    def __init__(self, permissions: Sequence[str]) -> None:
        self.name = "recorder"
        self.required_permissions = tuple(permissions)
        self.ran = 0

    def execute(self, args: Dict[str, Any]) -> Any:
        self.ran += 1
        return "ran"


@SLOW
@given(allowed=st.lists(names, max_size=4), denied=st.lists(names, max_size=4), allow_unspecified=st.booleans(),
       declared=st.lists(names, max_size=4))
def test_a_registry_runs_a_tool_exactly_when_the_reference_model_allows_it(allowed, denied, allow_unspecified,
                                                                          declared):
    tool = _Recorder(declared)
    checker = PermissionChecker(PermissionConfig(allowed, denied, allow_unspecified))
    expected = model_allows(set(allowed), set(denied), allow_unspecified, declared)
    with ToolRegistry(checker) as registry:
        registry.register(tool)
        if expected:
            assert registry.invoke("recorder", {}).result() == "ran"
        else:
            with pytest.raises(PermissionDeniedError):
                registry.invoke("recorder", {})
        [batched] = registry.invoke_all([("recorder", {})])
    assert batched.ok is expected
    assert tool.ran == (2 if expected else 0), "a denied tool's execute must never be called"


# ============================================================================
# The JSON-RPC line reader: never raises, keeps going
# ============================================================================

VALID = [
    jsonrpc.result_response(7, {"content": [{"type": "text", "text": "\u00e9t\u00e9 \U0001F600"}]}),
    jsonrpc.request(8, "tools/call", {"name": "echo", "arguments": {"text": "x"}}),
    jsonrpc.notification("notifications/message", {"level": "info", "data": "hello"}),
    jsonrpc.error_response(9, jsonrpc.METHOD_NOT_FOUND, "nope"),
]

#: Lines no parser should choke on, whatever its recursion or integer limits.
PATHOLOGICAL = [
    b"[" * 100_000 + b"]" * 100_000,
    b"[" * 100_000,
    b'{"a":' * 100_000,
    b'{"jsonrpc": "2.0", "id": 1, "result": ' + b"[" * 100_000 + b"]" * 100_000 + b"}",
    b"1e999999",
    b'{"jsonrpc": "2.0", "method": "m", "params": {"n": 1e999999}}',
    b"-1e999999",
    b"9" * 5000,
    b"1" + b"0" * 5000,  # 10**5000, written out
    b'{"jsonrpc": "2.0", "id": ' + b"1" * 5000 + b', "result": {}}',
    b"0." + b"1" * 100_000,
    b"\xff\xfe not utf-8 \xc3\x28",
    b'{"jsonrpc": "2.0", "method": "x\xe2\x82"}',
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf" + jsonrpc.encode(VALID[0]),
    b"\x00" * 100,
    b"",
    b"\n",
    b"\r\n",
    b"null",
    b"[]",
    b"[1, 2, 3]",
    b'{"jsonrpc": "1.0", "id": 1, "result": {}}',
    b'"jsonrpc"',
    b'{"jsonrpc": "2.0", "id": 1, "result": {"trunc',
]


def assert_well_formed(result: Any) -> None:
    if isinstance(result, jsonrpc.ParseFailure):
        assert isinstance(result.reason, str) and result.reason
        assert len(result.preview) <= 203  # 200 characters and "..."
    elif isinstance(result, list):
        assert result and all(isinstance(m, dict) and m.get("jsonrpc") == "2.0" for m in result)
    else:
        assert isinstance(result, dict) and result.get("jsonrpc") == "2.0"


@pytest.mark.parametrize("line", PATHOLOGICAL, ids=lambda b: repr(b[:24]))
def test_pathological_lines_give_a_parse_failure_or_a_message_never_an_exception(line):
    assert_well_formed(jsonrpc.parse_line(line))
    assert_well_formed(jsonrpc.parse_line(line.decode("utf-8", "surrogateescape")))


def test_numbers_too_big_or_too_deep_are_parse_failures_and_infinity_is_a_value():
    assert isinstance(jsonrpc.parse_line(b"[" * 100_000 + b"]" * 100_000), jsonrpc.ParseFailure)
    assert isinstance(jsonrpc.parse_line(b"1" + b"0" * 5000), jsonrpc.ParseFailure)  # 10**5000: not a message
    message = jsonrpc.parse_line(b'{"jsonrpc": "2.0", "method": "m", "params": {"n": 1e999999}}')
    assert isinstance(message, dict) and math.isinf(message["params"]["n"])


@st.composite
def truncated_messages(draw: Any) -> bytes:
    line = jsonrpc.encode(draw(st.sampled_from(VALID)))
    return line[: draw(st.integers(0, len(line) - 2))]


garbage_lines = st.one_of(
    st.binary(max_size=300),
    st.text(max_size=300).map(lambda s: s.encode("utf-8", "surrogatepass")),
    truncated_messages(),
    json_values.map(lambda v: json.dumps(v).encode()),
    st.sampled_from(PATHOLOGICAL),
)


@FAST
@given(lines=st.lists(garbage_lines, max_size=8), valid=st.lists(st.sampled_from(VALID), min_size=1, max_size=4))
def test_the_json_rpc_reader_never_raises_and_still_parses_valid_lines_after_garbage(lines, valid):
    for line in lines:
        assert_well_formed(jsonrpc.parse_line(line))
    for message in valid:
        assert jsonrpc.parse_line(jsonrpc.encode(message)) == message
        assert jsonrpc.parse_line(jsonrpc.encode(message).decode("utf-8")) == message


# -- through a real stdio McpClient --------------------------------------------


def test_a_real_client_keeps_answering_after_the_raw_servers_garbage_again_and_again(caplog):
    caplog.set_level(logging.WARNING, logger="agcore_sync.mcp")
    transport = StdioTransport(sys.executable, [RAW_SERVER])
    with McpClient("raw", transport, timeout=MCP_TIMEOUT) as client:
        for round_number in range(10):
            assert client.call_tool("garbage").text == "after garbage"
            text = f"round {round_number} \u00e9"
            assert client.call_tool("echo", {"text": text}).text == text
        reader = [t for t in threading.enumerate() if t.name.startswith("agcore-mcp-stdout")]
        assert reader and all(t.is_alive() for t in reader)
    skipped = [r for r in caplog.records if "not JSON-RPC" in r.getMessage()]
    assert len(skipped) == 70  # seven bad lines per round, every one logged and skipped
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], "no handler may have failed"


#: JSON-RPC-shaped lines with wrong members. Ids never collide with the client's
#: own small integer ids: a stray answer to a call in flight is a different test.
odd_ids = st.one_of(
    st.none(), st.booleans(), st.floats(allow_nan=False), st.text(max_size=8), st.integers(10**12, 10**15),
    st.lists(st.integers(), max_size=3), st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
)
odd_messages = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0")},
    optional={
        "id": odd_ids,
        "method": st.one_of(st.sampled_from(["ping", "roots/list", "elicitation/create", "sampling/createMessage",
                                             "notifications/message", "notifications/progress",
                                             "notifications/tools/list_changed", "notifications/cancelled",
                                             "no/such"]), json_values),
        "params": json_values,
        "result": json_values,
        "error": json_values,
    },
)
client_garbage = st.one_of(
    garbage_lines,
    odd_messages.map(lambda m: json.dumps(m).encode()),
    st.lists(odd_messages, min_size=1, max_size=3).map(lambda ms: json.dumps(ms).encode()),
).map(lambda line: line.replace(b"\n", b" "))


def test_a_real_client_survives_generated_garbage_from_its_server_and_answers_every_call(caplog):
    caplog.set_level(logging.ERROR, logger="agcore_sync.mcp")
    transport = StdioTransport(sys.executable, [REPLAY_SERVER])
    with McpClient("replay", transport, timeout=MCP_TIMEOUT) as client:

        @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
        @given(lines=st.lists(client_garbage, max_size=6))
        def the_next_call_is_answered(lines):
            encoded = [base64.b64encode(line).decode("ascii") for line in lines]
            assert client.call_tool("emit", {"lines": encoded}).text == f"emitted {len(lines)}"

        the_next_call_is_answered()
        assert client.call_tool("emit", {"lines": []}).text == "emitted 0"
        assert [t.name for t in client.list_tools()] == ["emit"]
    assert not [r for r in caplog.records if r.levelno >= logging.ERROR], [r.getMessage() for r in caplog.records]
