"""The built-in demo model and demo tools behind ``agcore-sync demo`` and ``chat``.

:class:`DemoProvider` is a scripted demo model: a :class:`MockProvider`
whose every answer is computed by one deterministic function of the
request. It is a demo model, not a fake of any real one: it understands a
handful of phrasings (arithmetic, word counts, the time, ``sleep N ms``,
``call TOOL {json}``), asks for the matching tools, and once the tool results
are in, answers with them. It needs no key and no network, and its streams
are the exact event sequences a real provider sends, so what a newcomer sees
is what they will see with a real model.

The demo tools are plain :func:`~agcore_sync.tools.function.tool` functions.
``sleep_ms`` waits on a :class:`TurnInterrupt` Event (with a timeout), so the
command line can cut it short when the user presses Ctrl-C.
"""

from __future__ import annotations

import datetime
import json
import math
import re
from typing import Any, Callable, Dict, Iterator, List, Optional, Sequence, Tuple, Union

from agcore_sync.cli.interrupt import TurnInterrupt
from agcore_sync.cli.providers import provider_options
from agcore_sync.llm.cost import Pricing
from agcore_sync.llm.events import StreamEvent
from agcore_sync.llm.media import ImageBlock
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import (
    Message,
    MessageRequest,
    MessageResponse,
    Role,
    ToolChoice,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
)
from agcore_sync.tools.base import BaseTool
from agcore_sync.tools.function import tool

__all__ = [
    "DEMO_MODEL",
    "DEMO_PRICING",
    "DEMO_QUESTION",
    "MAX_SLEEP_MS",
    "DemoProvider",
    "TurnInterrupt",
    "demo_tools",
]

#: The model name the demo model reports.
DEMO_MODEL = "agcore-demo"

#: The demo model is free: a price of zero, so ``cost_usd`` is 0.0, not None.
DEMO_PRICING: Dict[str, Pricing] = {DEMO_MODEL: Pricing(0.0, 0.0)}

#: The question ``agcore-sync demo`` asks.
DEMO_QUESTION = 'What is 17 * 23, and how many words are in "the quick brown fox jumps over the lazy dog"?'

#: The longest ``sleep_ms`` waits, below the cycle's default tool timeout (30 s).
MAX_SLEEP_MS = 20_000

_HELP = (
    "I am the scripted demo model of agcore_sync, not a real language model. I understand: "
    "arithmetic such as 17 * 23 or 2 + 3; word counts of quoted text, as in: count the words in "
    '"to be or not to be"; the time in UTC; sleep 500 ms; and call TOOL {"arg": value} for any tool. '
    f"Connect a real model with {provider_options()}."
)

_NUMBER = r"-?\d+(?:\.\d+)?"
_ARITHMETIC = re.compile(rf"({_NUMBER})\s*(\*|x|×|times|\+|plus)\s*({_NUMBER})", re.IGNORECASE)
_QUOTED = re.compile(r'"([^"]+)"')
_SLEEP = re.compile(r"\b(?:sleep|wait)\s+(\d+)\s*ms\b", re.IGNORECASE)
_TIME = re.compile(r"\btime\b", re.IGNORECASE)
_CALL = re.compile(r"^\s*call\s+([A-Za-z0-9_-]+)\s*(.*)$", re.IGNORECASE | re.DOTALL)

Call = Tuple[str, Dict[str, Any]]


def demo_tools(interrupt: Optional[TurnInterrupt] = None) -> List[BaseTool]:
    """Build the demo tools: add, multiply, word_count, utc_now and sleep_ms.

    Args:
        interrupt: what ``sleep_ms`` waits on (a private one if None).

    Returns:
        New tool objects, ready for ``ToolRegistry.register_all``.
    """
    waits = interrupt if interrupt is not None else TurnInterrupt()

    @tool
    def add(a: float, b: float) -> float:
        """Add two numbers.

        Args:
            a: the first term.
            b: the second term.
        """
        return _tidy(a + b)

    @tool
    def multiply(a: float, b: float) -> float:
        """Multiply two numbers.

        Args:
            a: the first factor.
            b: the second factor.
        """
        return _tidy(a * b)

    @tool
    def word_count(text: str) -> int:
        """Count the words (runs of non-space characters) in a text.

        Args:
            text: the text to count.
        """
        return len(text.split())

    @tool
    def utc_now() -> str:
        """Return the current date and time in UTC, ISO 8601, to the second."""
        return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0).isoformat()

    @tool
    def sleep_ms(ms: int) -> str:
        """Wait, then say how long: a demo tool for watching a slow tool and cancelling it.

        Args:
            ms: how long to wait, in milliseconds (at most 20000).
        """
        wanted = max(0, min(int(ms), MAX_SLEEP_MS))
        if waits.current().wait(wanted / 1000):
            return f"interrupted before {wanted} ms had passed"
        return f"slept {wanted} ms"

    return [add, multiply, word_count, utc_now, sleep_ms]


def _tidy(value: float) -> Union[int, float]:
    """Return ``value`` as an int when it is a whole number."""
    return int(value) if float(value).is_integer() else value


class DemoProvider(MockProvider):
    """The built-in scripted demo model (deterministic; not a fake of a real model).

    Every request is answered by :meth:`respond`, streamed exactly as
    :class:`MockProvider` streams, so tool calls, text deltas, usage and
    cost events arrive as from a real provider. Usage is an estimate (a
    token per four characters); the price is zero.

    Args:
        model: the model name it reports.
    """

    def __init__(self, model: str = DEMO_MODEL) -> None:
        super().__init__((), pricing=DEMO_PRICING, model=model)

    def chat(self, request: MessageRequest) -> MessageResponse:
        """Answer ``request`` (see :meth:`respond`)."""
        self.add(self.respond)
        return super().chat(request)

    def chat_stream(self, request: MessageRequest) -> Iterator[StreamEvent]:
        """Stream the answer to ``request`` (see :meth:`respond`)."""
        self.add(self.respond)
        return super().chat_stream(request)

    def respond(self, request: MessageRequest) -> MessageResponse:
        """Decide the answer from the request's messages.

        - After tool results: a text answer built from them.
        - After a user message naming something the offered tools can do:
          a short text and the tool calls.
        - After a user message with images: a text saying it cannot see them.
        - Otherwise: a text saying what the demo model understands.

        When the request asks for structured output (``output=``: the
        native schema or the ``"tool"`` mode's output tool), the final
        answer is an object in that schema, filled from the tool results.
        """
        offered = {definition.name for definition in request.tools}
        messages = list(request.messages)
        results = _trailing_results(messages)
        if results:
            text = _answer_from_results(messages, results)
            return self._answer(request, text, results)
        question = messages[-1].text if messages and messages[-1].role == Role.USER else ""
        calls = [call for call in _calls_for(question) if call[0] in offered]
        if calls:
            response = MockProvider.tool_calls(*calls, text="Let me use my tools for that.", model=self.model)
            return _with_usage(response, request)
        images = [b for b in messages[-1].content if isinstance(b, ImageBlock)] if messages else []
        if images:
            kinds = ", ".join(b.media_type or "an image URL" for b in images)
            return self._answer(request, f"I got {len(images)} image(s) ({kinds}), but I am the scripted demo "
                                         "model and cannot see them. Connect a real model to describe them.", [])
        return self._answer(request, _HELP, [])

    def _answer(self, request: MessageRequest, text: str, results: Sequence[ToolResultBlock]) -> MessageResponse:
        """Answer with ``text``, or, when the request asks for structured output, with an object in its schema.

        The object is filled from the tool results: numbers from the
        numeric results in order, strings with ``text``.
        """
        schema, tool_name = _asked_schema(request)
        if schema is None:
            return self._text(request, text)
        numbers = [_number(r.text) for r in results if re.fullmatch(_NUMBER, r.text.strip())]
        value = _fill(schema, schema, numbers or [0], text, [0])
        if tool_name is not None:
            call = ToolUseBlock("call_demo_output", tool_name, value)
            return _with_usage(MockProvider.tool_calls(call, model=self.model), request)
        return self._text(request, json.dumps(value))

    def _text(self, request: MessageRequest, text: str) -> MessageResponse:
        return _with_usage(MockProvider.text(text, model=self.model), request)


#: The ``"tool"`` output mode's tool (``agcore_sync.llm.output.OUTPUT_TOOL_NAME``).
_OUTPUT_TOOL_NAME = "final_result"


def _asked_schema(request: MessageRequest) -> Tuple[Optional[Dict[str, Any]], Optional[str]]:
    """Return the JSON Schema the request asks the answer to follow, and the output tool's name in tool mode."""
    if request.output is not None:
        return request.output.json_schema, None
    if isinstance(request.tool_choice, ToolChoice) or request.tool_choice == "required":
        for definition in request.tools:
            if definition.name == _OUTPUT_TOOL_NAME:
                return definition.parameters, definition.name
    return None, None


def _fill(schema: Dict[str, Any], root: Dict[str, Any], numbers: List[Union[int, float]], text: str,
          used: List[int]) -> Any:
    """Return a value in ``schema``: numbers taken from ``numbers`` in turn, strings ``text``."""
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#"):
        target: Any = root
        for part in ref[1:].strip("/").split("/"):
            if part:
                target = target[part]
        return _fill(target, root, numbers, text, used)
    if "const" in schema:
        return schema["const"]
    if schema.get("enum"):
        return schema["enum"][0]
    for key in ("anyOf", "oneOf", "allOf"):
        branches = [b for b in schema.get(key, ()) if b.get("type") != "null"]
        if branches:
            return _fill(branches[0], root, numbers, text, used)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = next((k for k in kind if k != "null"), "null")
    if kind == "object":
        properties = schema.get("properties", {})
        return {name: _fill(sub, root, numbers, text, used) for name, sub in properties.items()}
    if kind == "array":
        return [_fill(schema.get("items", {}), root, numbers, text, used)
                for _ in range(max(1, schema.get("minItems", 1)))]
    if kind in ("integer", "number"):
        value = numbers[used[0] % len(numbers)]
        used[0] += 1
        return int(value) if kind == "integer" else value
    if kind == "string":
        return text
    if kind == "boolean":
        return True
    return None


def _with_usage(response: MessageResponse, request: MessageRequest) -> MessageResponse:
    """Attach an estimated usage: a token per four characters in and out."""
    prompt = math.ceil(len(json.dumps(request.to_dict())) / 4)
    completion = math.ceil(len(json.dumps(response.message.to_dict())) / 4)
    return MessageResponse(response.id, response.model, response.message, response.stop_reason,
                           Usage(prompt, max(1, completion)))


def _calls_for(question: str) -> List[Call]:
    """Return the tool calls that answer ``question``, in order of appearance."""
    explicit = _CALL.match(question)
    if explicit:
        raw = explicit.group(2).strip()
        try:
            arguments = json.loads(raw) if raw else {}
        except ValueError:
            return []
        return [(explicit.group(1), arguments)] if isinstance(arguments, dict) else []
    found: List[Tuple[int, Call]] = []
    for match in _ARITHMETIC.finditer(question):
        name = "add" if match.group(2).lower() in ("+", "plus") else "multiply"
        found.append((match.start(), (name, {"a": _number(match.group(1)), "b": _number(match.group(3))})))
    if "word" in question.lower():
        for match in _QUOTED.finditer(question):
            found.append((match.start(), ("word_count", {"text": match.group(1)})))
    for match in _SLEEP.finditer(question):
        found.append((match.start(), ("sleep_ms", {"ms": int(match.group(1))})))
    time_match = _TIME.search(question)
    if time_match:
        found.append((time_match.start(), ("utc_now", {})))
    return [call for _, call in sorted(found, key=lambda item: item[0])]


def _number(text: str) -> Union[int, float]:
    return _tidy(float(text))


def _trailing_results(messages: Sequence[Message]) -> List[ToolResultBlock]:
    """Return the tool results at the end of the history (empty if the last message is no result)."""
    results: List[ToolResultBlock] = []
    for message in reversed(messages):
        blocks = [block for block in message.content if isinstance(block, ToolResultBlock)]
        if message.role not in (Role.TOOL, Role.USER) or not blocks:
            break
        results[:0] = blocks
    return results


def _answer_from_results(messages: Sequence[Message], results: Sequence[ToolResultBlock]) -> str:
    """Phrase an answer from the tool results and the calls that produced them."""
    calls: Dict[str, ToolUseBlock] = {}
    for message in messages:
        if message.role == Role.ASSISTANT:
            for use in message.tool_uses:
                calls[use.id] = use
    sentences = []
    for result in results:
        use = calls.get(result.tool_use_id)
        name = use.name if use is not None else "a tool"
        arguments = use.input if use is not None and isinstance(use.input, dict) else {}
        if result.is_error:
            sentences.append(f"The tool {name} failed: {result.text}")
        else:
            sentences.append(_PHRASES.get(name, _generic_phrase)(arguments, result.text, name))
    return " ".join(sentences)


def _generic_phrase(arguments: Dict[str, Any], result: str, name: str) -> str:
    return f"The tool {name} answered: {result}"


_PHRASES: Dict[str, Callable[[Dict[str, Any], str, str], str]] = {
    "add": lambda a, r, _: f"{a.get('a')} + {a.get('b')} = {r}.",
    "multiply": lambda a, r, _: f"{a.get('a')} x {a.get('b')} = {r}.",
    "word_count": lambda a, r, _: f"\"{a.get('text')}\" has {r} words.",
    "utc_now": lambda a, r, _: f"It is {r} (UTC).",
    "sleep_ms": lambda a, r, _: f"The sleep_ms tool says: {r}.",
}
