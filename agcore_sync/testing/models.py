"""TestModel and FunctionModel: providers for tests that need no cassette and no network.

Both answer like a real provider: ``chat`` returns a
:class:`~agcore_sync.MessageResponse`, and ``chat_stream`` yields the event
sequence :class:`~agcore_sync.MockProvider` streams for that response
(:func:`~agcore_sync.llm.mock.events_for`: ``MessageStart``, each block's
start, deltas and end, ``CostUpdate``, ``MessageComplete``). They are
stateless between requests (each answer is a function of the request), so
one instance may serve many threads and sessions.

:class:`TestModel`'s rule, per request:

1. The function tools offered (every tool but the structured-output tool
   ``final_result``) that ``call_tools`` and ``tool_choice`` allow, and that
   no assistant message since the last user message has called yet, are
   called, all in one response (parallel calls), with arguments made from
   each tool's JSON Schema (valid against it; the same for the same
   ``seed``, tool and schema).
2. Else, if the request offers ``final_result`` (``output_mode="tool"``),
   it is called with a schema-valid answer.
3. Else the answer is text: a schema-valid JSON object when the request
   asks for native structured output (``MessageRequest.output``), else
   ``text``. (The ``"prompted"`` output mode puts the schema in the system
   prompt's prose, which this model does not read: give such a test a
   :class:`FunctionModel`.)

.. versionadded:: 0.2
"""

from __future__ import annotations

import json
import random
from typing import Any, Callable, Iterator, List, Sequence, Tuple, Union

from agcore_sync.llm.cost import PricingArg, cost_usd
from agcore_sync.llm.errors import LlmError
from agcore_sync.llm.events import StreamEvent
from agcore_sync.llm.mock import events_for
from agcore_sync.llm.output import OUTPUT_TOOL_NAME
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import (
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    StopReason,
    TextBlock,
    ToolChoice,
    ToolDef,
    ToolUseBlock,
    Usage,
)
from agcore_sync.testing._schema_values import SchemaValueError, value_for

__all__ = ["TestModel", "FunctionModel"]


def _usage(request: MessageRequest, answer: str) -> Usage:
    """Estimate usage as compaction does: characters / 4 (at least 1 token each way)."""
    return Usage(max(1, len(json.dumps(request.to_dict())) // 4), max(1, len(answer) // 4))


def _called_this_turn(messages: Sequence[Message]) -> List[str]:
    """Return the names of the tools called since the last user message."""
    names: List[str] = []
    for message in reversed(messages):
        if message.role is Role.USER:
            break
        names += [call.name for call in message.tool_uses]
    return names


def _stream(provider: Union[TestModel, FunctionModel], request: MessageRequest) -> Iterator[StreamEvent]:
    """Yield the events of ``provider.chat(request)``; a failure comes from the iterator, as from a real stream."""
    response = provider.chat(request)
    yield from events_for(response, cost_usd(response.usage, response.model, provider.pricing))


class TestModel(LlmProvider):
    """A provider that calls every tool once with schema-made arguments, then answers.

    See the module docstring for the rule of each answer.

    Args:
        call_tools: ``"all"`` (every function tool offered), ``"none"``, or
            the names of the tools to call.
        text: the final answer's text (without structured output).
        seed: the seed of the generated arguments and answers.
        pricing: prices for ``CostUpdate.cost_usd`` (None: the built-in
            table, which does not know ``"test-model"``: no cost).
        model: the model name the responses report.

    Raises:
        ValueError: ``call_tools`` is neither ``"all"``, ``"none"`` nor a
            sequence of names.

    Example::

        session = AgentSession(TestModel(), registry=registry)
        session.submit_turn("go")  # each tool runs once, then the answer is "done"

    .. versionadded:: 0.2
    """

    __test__ = False  # not a pytest test class, whatever its name

    def __init__(self, *, call_tools: Union[str, Sequence[str]] = "all", text: str = "done", seed: int = 0,
                 pricing: PricingArg = None, model: str = "test-model") -> None:
        if isinstance(call_tools, str):
            if call_tools not in ("all", "none"):
                raise ValueError(f"TestModel: call_tools must be 'all', 'none' or a list of tool names, "
                                 f"not {call_tools!r}")
            self.call_tools: Union[str, Tuple[str, ...]] = call_tools
        else:
            names = tuple(call_tools)
            if not all(isinstance(name, str) for name in names):
                raise ValueError("TestModel: call_tools must be 'all', 'none' or a list of tool names")
            self.call_tools = names
        self.text = text
        self.seed = seed
        self.pricing = pricing
        self.model = model

    def __repr__(self) -> str:
        return f"TestModel(call_tools={self.call_tools!r}, text={self.text!r}, seed={self.seed!r})"

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Return this request's answer (see the module docstring)."""
        to_call = self._tools_to_call(request)
        output_tool = next((t for t in request.tools if t.name == OUTPUT_TOOL_NAME), None)
        if not to_call and output_tool is not None and request.tool_choice != "none":
            to_call = [output_tool]
        number = len(request.messages)
        if to_call:
            calls = [ToolUseBlock(f"test_call_{number}_{i}", tool.name, self._value(tool.name, tool.parameters))
                     for i, tool in enumerate(to_call)]
            answer = json.dumps([call.input for call in calls])
            return MessageResponse(f"test-{number}", self.model, Message(Role.ASSISTANT, calls),
                                   StopReason.TOOL_USE, _usage(request, answer))
        text = self.text
        if request.output is not None:
            text = json.dumps(self._value("output", request.output.json_schema))
        return MessageResponse(f"test-{number}", self.model, Message(Role.ASSISTANT, (TextBlock(text),)),
                               StopReason.STOP, _usage(request, text))

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Yield the events a real provider sends for this request's answer."""
        return _stream(self, request)

    def _tools_to_call(self, request: MessageRequest) -> List[ToolDef]:
        if self.call_tools == "none" or request.tool_choice == "none":
            return []
        tools = [t for t in request.tools if t.name != OUTPUT_TOOL_NAME]
        if isinstance(request.tool_choice, ToolChoice):
            tools = [t for t in tools if t.name == request.tool_choice.name]
        if self.call_tools != "all":
            tools = [t for t in tools if t.name in self.call_tools]
        called = set(_called_this_turn(request.messages))
        return [t for t in tools if t.name not in called]

    def _value(self, name: str, schema: Any) -> Any:
        rng = random.Random(f"{self.seed}/{name}/{json.dumps(schema, sort_keys=True)}")
        try:
            return value_for(schema, rng)
        except SchemaValueError as exc:
            raise LlmError(f"TestModel cannot make a value for {name!r} valid against its JSON Schema: {exc}; "
                           "answer this request with FunctionModel instead") from None


#: What a FunctionModel's function returns: a whole response, or the text of one.
FunctionResult = Union[MessageResponse, str]


class FunctionModel(LlmProvider):
    """A provider whose answers come from a function of the conversation.

    Args:
        fn: called as ``fn(messages, request)`` (``messages`` is
            ``request.messages``); returns a
            :class:`~agcore_sync.MessageResponse`, or a str: a text answer
            (stop reason ``stop``, usage estimated as characters / 4).
            An exception it raises propagates (an
            :class:`~agcore_sync.LlmError` is what a real provider raises).
        pricing: prices for ``CostUpdate.cost_usd``.
        model: the model name of text answers.

    Raises:
        TypeError: ``fn`` is not callable.

    Example::

        def answer(messages, request):
            return f"you said {messages[-1].text!r}"

        provider = FunctionModel(answer)

    .. versionadded:: 0.2
    """

    def __init__(self, fn: Callable[[Sequence[Message], MessageRequest], FunctionResult], *,
                 pricing: PricingArg = None, model: str = "function-model") -> None:
        if not callable(fn):
            raise TypeError(f"FunctionModel: fn must be callable as fn(messages, request), got {type(fn).__name__}")
        self.fn = fn
        self.pricing = pricing
        self.model = model

    def __repr__(self) -> str:
        return f"FunctionModel({getattr(self.fn, '__name__', self.fn)!r})"

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Return ``fn(request.messages, request)`` as a response."""
        result = self.fn(request.messages, request)
        if isinstance(result, MessageResponse):
            return result
        if isinstance(result, str):
            return MessageResponse(f"function-{len(request.messages)}", self.model, Message.assistant(result),
                                   StopReason.STOP, _usage(request, result))
        raise TypeError(f"FunctionModel: {getattr(self.fn, '__name__', 'fn')} returned {type(result).__name__}; "
                        "it must return a MessageResponse or a str")

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Yield the events a real provider sends for ``fn``'s answer (``fn`` runs at the first ``next``)."""
        return _stream(self, request)
