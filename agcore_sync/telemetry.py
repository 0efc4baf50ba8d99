"""OpenTelemetry instrumentation: GenAI spans and metrics for turns, provider calls, tools and MCP.

:func:`instrument` installs an observer on the library's switch module
(:mod:`agcore_sync._instrument`); :func:`uninstrument` removes it. Until
:func:`instrument` is called nothing imports opentelemetry, and the seams
in the loops cost a ``None`` check. It needs the optional ``otel`` extra
(``pip install 'agcore_sync[otel]'``: ``opentelemetry-api`` and
``opentelemetry-semantic-conventions``); the SDK, exporters and collectors
are the application's choice.

The spans follow the OpenTelemetry GenAI semantic conventions (attribute
names from the ``opentelemetry-semantic-conventions`` package):

- ``invoke_agent``: one per :class:`~agcore_sync.AgentSession` turn, a child
  of the span current where the turn was started (a Flask request span);
- ``chat {model}``: one per provider call (a call's retries are events on
  it), a direct child of the turn span, also when the call runs in a
  stream's worker thread;
- ``execute_tool {name}``: one per tool call the registry runs, a direct
  child of the turn span although the tool runs in a pool thread;
- ``{mcp.method.name} {target}``: one client span per MCP request (MCP
  semantic conventions), whose trace context goes to the server in
  ``params._meta`` (``traceparent``).

Message and tool-argument content is recorded only with
``capture_content=True``. Metrics: the ``gen_ai.client.token.usage`` and
``gen_ai.client.operation.duration`` histograms, one record per provider
call.
"""

from __future__ import annotations

import json
import threading
import time
import urllib.parse
from typing import Any, Dict, List, Optional

from agcore_sync import _instrument
from agcore_sync.llm.types import Message, MessageRequest, MessageResponse, TextBlock, ToolResultBlock, ToolUseBlock

__all__ = ["instrument", "uninstrument", "is_instrumented"]

#: Advisory bucket boundaries the GenAI conventions give for the two histograms.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)

#: The ``error.type`` of a span cut short because its stream was closed.
CANCELLED = "cancelled"

_lock = threading.Lock()

_MISSING = ("agcore_sync.telemetry needs the optional 'otel' extra (opentelemetry-api and "
            "opentelemetry-semantic-conventions): pip install 'agcore_sync[otel]'")


def instrument(tracer_provider: Any = None, meter_provider: Any = None, capture_content: bool = False) -> None:
    """Start emitting spans and metrics for every turn, provider call, tool call and MCP request.

    Calling it again replaces the earlier settings.

    Args:
        tracer_provider: an OpenTelemetry ``TracerProvider`` (None: the global one).
        meter_provider: an OpenTelemetry ``MeterProvider`` (None: the global one).
        capture_content: also record messages, system instructions, tool
            arguments and tool results on the spans (they may hold personal
            data; off by default).

    Raises:
        ImportError: the ``otel`` extra is not installed (the message names it).

    .. versionadded:: 0.2
    """
    try:
        observer = _OtelObserver(tracer_provider, meter_provider, capture_content)
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    with _lock:
        _instrument.install(observer)


def uninstrument() -> None:
    """Stop emitting spans and metrics (spans already started still end).

    .. versionadded:: 0.2
    """
    with _lock:
        _instrument.install(None)


def is_instrumented() -> bool:
    """Return True while :func:`instrument` is in effect.

    .. versionadded:: 0.2
    """
    return isinstance(_instrument.observer, _OtelObserver)


def _provider_name(provider: Any) -> str:
    """Return the ``gen_ai.provider.name`` of a provider (wrappers such as RetryProvider unwrapped)."""
    while getattr(provider, "inner", None) is not None:
        provider = provider.inner
    name = getattr(provider, "telemetry_name", None)  # the semantic-conventions value, e.g. "aws.bedrock"
    if isinstance(name, str) and name:
        return name
    name = getattr(provider, "provider_name", None)
    if isinstance(name, str) and name != "provider":
        return name.lower()
    cls = type(provider).__name__
    return (cls[:-len("Provider")] if cls.endswith("Provider") and cls != "Provider" else cls).lower()


def _part(block: Any) -> Dict[str, Any]:
    if isinstance(block, TextBlock):
        return {"type": "text", "content": block.text}
    if isinstance(block, ToolUseBlock):
        return {"type": "tool_call", "id": block.id, "name": block.name, "arguments": block.input}
    if isinstance(block, ToolResultBlock):
        content = block.content if isinstance(block.content, str) else [_part(b) for b in block.content]
        return {"type": "tool_call_response", "id": block.tool_use_id, "response": content}
    return {"type": getattr(block, "type", type(block).__name__)}


def _messages_json(messages: Any) -> str:
    return json.dumps([{"role": m.role.value, "parts": [_part(b) for b in m.content]} for m in messages],
                      ensure_ascii=False, default=str)


def _output_json(message: Message, finish_reason: str) -> str:
    return json.dumps([{"role": message.role.value, "parts": [_part(b) for b in message.content],
                        "finish_reason": finish_reason}], ensure_ascii=False, default=str)


class _Span:
    """An OpenTelemetry span and what its metrics need."""

    __slots__ = ("span", "kind", "start", "metric_attributes", "usage")

    def __init__(self, span: Any, kind: str, metric_attributes: Optional[Dict[str, Any]] = None) -> None:
        self.span = span
        self.kind = kind
        self.start = time.perf_counter()
        self.metric_attributes = metric_attributes
        self.usage: Any = None


class _OtelObserver(_instrument.Observer):
    """Turns the library's seams into OpenTelemetry spans and metric records."""

    def __init__(self, tracer_provider: Any, meter_provider: Any, capture_content: bool) -> None:
        from opentelemetry import context, metrics, propagate, trace
        from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
        from opentelemetry.semconv._incubating.attributes import mcp_attributes as mcp
        from opentelemetry.semconv._incubating.attributes import network_attributes as network
        from opentelemetry.semconv._incubating.attributes import rpc_attributes as rpc
        from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
        from opentelemetry.semconv.attributes import error_attributes, server_attributes

        from agcore_sync._version import __version__

        self._context, self._trace, self._propagate = context, trace, propagate
        self._g, self._mcp, self._network, self._rpc = gen_ai, mcp, network, rpc
        self._error_type = error_attributes.ERROR_TYPE
        self._server = server_attributes
        self._capture = capture_content
        self._tracer = trace.get_tracer("agcore_sync", __version__, tracer_provider=tracer_provider)
        meter = metrics.get_meter("agcore_sync", __version__, meter_provider=meter_provider)
        self._token_usage = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE, unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=list(TOKEN_BUCKETS))
        self._duration = meter.create_histogram(
            gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION, unit="s", description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=list(DURATION_BUCKETS))

    # -- starting spans ---------------------------------------------------------

    def start_turn(self, session: Any) -> _Span:
        g = self._g
        provider = session.provider
        attributes = {
            g.GEN_AI_OPERATION_NAME: g.GenAiOperationNameValues.INVOKE_AGENT.value,
            g.GEN_AI_PROVIDER_NAME: _provider_name(provider),
        }
        model = session.config.model or getattr(provider, "model", None)
        if model:
            attributes[g.GEN_AI_REQUEST_MODEL] = model
        if self._capture and session.system_prompt:
            attributes[g.GEN_AI_SYSTEM_INSTRUCTIONS] = json.dumps(
                [{"type": "text", "content": session.system_prompt}], ensure_ascii=False)
        span = self._tracer.start_span(g.GenAiOperationNameValues.INVOKE_AGENT.value,
                                       kind=self._trace.SpanKind.INTERNAL, attributes=attributes)
        return _Span(span, "turn")

    def start_chat(self, request: MessageRequest, provider: Any, *, stream: bool) -> _Span:
        g = self._g
        model = request.model or getattr(provider, "model", None)
        operation = g.GenAiOperationNameValues.CHAT.value
        metric_attributes: Dict[str, Any] = {g.GEN_AI_OPERATION_NAME: operation,
                                             g.GEN_AI_PROVIDER_NAME: _provider_name(provider)}
        if model:
            metric_attributes[g.GEN_AI_REQUEST_MODEL] = model
        attributes = dict(metric_attributes)
        if request.max_tokens is not None:
            attributes[g.GEN_AI_REQUEST_MAX_TOKENS] = request.max_tokens
        if request.temperature is not None:
            attributes[g.GEN_AI_REQUEST_TEMPERATURE] = request.temperature
        if self._capture:
            attributes[g.GEN_AI_INPUT_MESSAGES] = _messages_json(request.messages)
            if request.system:
                attributes[g.GEN_AI_SYSTEM_INSTRUCTIONS] = json.dumps(
                    [{"type": "text", "content": request.system}], ensure_ascii=False)
        name = f"{operation} {model}" if model else operation
        span = self._tracer.start_span(name, kind=self._trace.SpanKind.CLIENT, attributes=attributes)
        return _Span(span, "chat", metric_attributes)

    def start_tool(self, name: str, tool_call_id: Optional[str], arguments: Any, tool: Any) -> _Span:
        g = self._g
        operation = g.GenAiOperationNameValues.EXECUTE_TOOL.value
        attributes: Dict[str, Any] = {g.GEN_AI_OPERATION_NAME: operation, g.GEN_AI_TOOL_NAME: name,
                                      g.GEN_AI_TOOL_TYPE: "function"}
        if tool_call_id:
            attributes[g.GEN_AI_TOOL_CALL_ID] = tool_call_id
        description = getattr(tool, "description", None)
        if description:
            attributes[g.GEN_AI_TOOL_DESCRIPTION] = description
        if self._capture:
            attributes[g.GEN_AI_TOOL_CALL_ARGUMENTS] = json.dumps(arguments, ensure_ascii=False, default=str)
        span = self._tracer.start_span(f"{operation} {name}", kind=self._trace.SpanKind.INTERNAL,
                                       attributes=attributes)
        return _Span(span, "tool")

    def start_mcp(self, method: str, params: Optional[Dict[str, Any]], *, server: str,
                  tool_name: Optional[str], transport: Any) -> _Span:
        g, mcp = self._g, self._mcp
        attributes: Dict[str, Any] = {mcp.MCP_METHOD_NAME: method}
        target = None
        if method == "tools/call" and tool_name:
            target = tool_name
            attributes[g.GEN_AI_TOOL_NAME] = tool_name
            attributes[g.GEN_AI_OPERATION_NAME] = g.GenAiOperationNameValues.EXECUTE_TOOL.value
        elif params and isinstance(params.get("name"), str):
            target = params["name"]
            if method == "prompts/get":
                attributes[g.GEN_AI_PROMPT_NAME] = target
        elif params and isinstance(params.get("uri"), str):
            attributes[mcp.MCP_RESOURCE_URI] = params["uri"]
        session_id = getattr(transport, "session_id", None)
        if session_id:
            attributes[mcp.MCP_SESSION_ID] = session_id
        version = getattr(transport, "protocol_version", None)
        if version:
            attributes[mcp.MCP_PROTOCOL_VERSION] = version
        url = getattr(transport, "url", None)
        if isinstance(url, str):
            attributes[self._network.NETWORK_TRANSPORT] = "tcp"
            attributes.update(self._server_attributes(url))
        else:
            attributes[self._network.NETWORK_TRANSPORT] = "pipe"
        name = f"{method} {target}" if target else method
        span = self._tracer.start_span(name, kind=self._trace.SpanKind.CLIENT, attributes=attributes)
        return _Span(span, "mcp")

    # -- current span -----------------------------------------------------------

    def activate(self, span: _Span) -> Any:
        return self._context.attach(self._trace.set_span_in_context(span.span))

    def deactivate(self, token: Any) -> None:
        self._context.detach(token)

    def event(self, name: str, attributes: Dict[str, Any]) -> None:
        self._trace.get_current_span().add_event(name, attributes)

    def set_server(self, url: str) -> None:
        self._trace.get_current_span().set_attributes(self._server_attributes(url))

    def provider_answered(self, provider: Any, index: int) -> None:
        self._trace.get_current_span().set_attributes({self._g.GEN_AI_PROVIDER_NAME: _provider_name(provider),
                                                       "agcore.fallback.index": index})

    def _server_attributes(self, url: str) -> Dict[str, Any]:
        parts = urllib.parse.urlsplit(url)
        attributes: Dict[str, Any] = {}
        if parts.hostname:
            attributes[self._server.SERVER_ADDRESS] = parts.hostname
            attributes[self._server.SERVER_PORT] = parts.port or (443 if parts.scheme == "https" else 80)
        return attributes

    def trace_meta(self, span: _Span) -> Dict[str, str]:
        carrier: Dict[str, str] = {}
        self._propagate.inject(carrier, context=self._trace.set_span_in_context(span.span))
        return carrier

    # -- results and ends -------------------------------------------------------

    def record(self, span: _Span, value: Any) -> None:
        if span.kind == "chat" and isinstance(value, MessageResponse):
            self._record_response(span, value)
        elif span.kind == "tool":
            self._record_invocation(span, value)
        elif span.kind == "turn":
            usage = getattr(value, "usage", None)
            if usage is not None:
                g = self._g
                span.span.set_attributes({g.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
                                          g.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens})
        elif span.kind == "mcp" and isinstance(value, dict) and value.get("isError") is True:
            span.span.set_attribute(self._error_type, "tool_error")
            span.span.set_status(self._trace.StatusCode.ERROR, "the tool reported an error")

    def _record_response(self, span: _Span, response: MessageResponse) -> None:
        g = self._g
        reason = response.stop_reason.value
        attributes: Dict[str, Any] = {g.GEN_AI_RESPONSE_FINISH_REASONS: (reason,),
                                      g.GEN_AI_USAGE_INPUT_TOKENS: response.usage.prompt_tokens,
                                      g.GEN_AI_USAGE_OUTPUT_TOKENS: response.usage.completion_tokens}
        if response.model:
            attributes[g.GEN_AI_RESPONSE_MODEL] = response.model
            span.metric_attributes[g.GEN_AI_RESPONSE_MODEL] = response.model  # type: ignore[index]
        if response.id:
            attributes[g.GEN_AI_RESPONSE_ID] = response.id
        if self._capture:
            attributes[g.GEN_AI_OUTPUT_MESSAGES] = _output_json(response.message, reason)
        span.span.set_attributes(attributes)
        span.usage = response.usage

    def _record_invocation(self, span: _Span, invocation: Any) -> None:
        error = getattr(invocation, "error", None)
        if error is not None:
            span.span.set_attribute(self._error_type, type(error).__name__)
            span.span.set_status(self._trace.StatusCode.ERROR, str(error)[:500])
        elif self._capture:
            span.span.set_attribute(self._g.GEN_AI_TOOL_CALL_RESULT, invocation.content())

    def finish(self, span: _Span, error: Optional[BaseException], cancelled: bool) -> None:
        otel = span.span
        error_type = None
        if error is not None:
            code = getattr(error, "code", None)
            error_type = str(code) if span.kind == "mcp" and isinstance(code, int) else type(error).__name__
            if span.kind == "mcp" and isinstance(code, int):
                otel.set_attribute(self._rpc.RPC_RESPONSE_STATUS_CODE, str(code))
            otel.set_attribute(self._error_type, error_type)
            otel.record_exception(error)
            otel.set_status(self._trace.StatusCode.ERROR, f"{type(error).__name__}: {error}"[:500])
        elif cancelled:
            error_type = CANCELLED
            otel.set_attribute(self._error_type, CANCELLED)
            otel.set_status(self._trace.StatusCode.ERROR, "the stream was closed before the work ended")
        if span.kind == "chat":
            self._record_metrics(span, error_type)
        otel.end()

    def _record_metrics(self, span: _Span, error_type: Optional[str]) -> None:
        g = self._g
        attributes = dict(span.metric_attributes or {})
        if error_type is not None:
            attributes[self._error_type] = error_type
        self._duration.record(time.perf_counter() - span.start, attributes)
        usage = span.usage
        if usage is None:
            return
        counts: List[Any] = [(g.GenAiTokenTypeValues.INPUT.value, usage.prompt_tokens),
                             (g.GenAiTokenTypeValues.OUTPUT.value, usage.completion_tokens)]
        for token_type, count in counts:
            self._token_usage.record(count, {**attributes, g.GEN_AI_TOKEN_TYPE: token_type})
