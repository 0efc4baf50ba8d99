"""What a tool, resource or prompt function running under :class:`McpServer` may ask of its client.

:func:`request_context` returns the :class:`RequestContext` of the request
being served on the calling thread (a :mod:`contextvars` value, so it
follows the call into the tool registry). Through it a function logs to the
client, reports progress, asks the client's model (sampling) or its user
(elicitation), and sees whether the client cancelled the request.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import contextvars
from typing import TYPE_CHECKING, Any, Dict, List, Optional, Sequence, Union

import attrs

from agcore_sync.llm.types import Message, MessageResponse, Role, StopReason, TextBlock
from agcore_sync.mcp.shared.content import mcp_message
from agcore_sync.mcp.shared.protocol import LOG_LEVELS
from agcore_sync.tools.error import McpError, ToolError

if TYPE_CHECKING:  # pragma: no cover
    from agcore_sync.mcp.server._session import ServerSession

__all__ = ["RequestContext", "ElicitResult", "request_context", "InputRequired"]

_CURRENT: contextvars.ContextVar[Optional[RequestContext]] = contextvars.ContextVar(
    "agcore_mcp_request_context", default=None)

_STOP = {"endTurn": StopReason.STOP, "maxTokens": StopReason.LENGTH, "toolUse": StopReason.TOOL_USE,
         "stopSequence": StopReason.STOP}


class InputRequired(ToolError):
    """Raised inside a 2026-07-28 tool call that needs an answer from the client it does not have yet.

    The server answers the call with an ``input_required`` result naming the
    request; the client answers it and calls again with the answers (and the
    earlier ones in ``requestState``), and the tool runs again from the start.

    Attributes:
        key: the request's key in ``inputRequests``.
        request: ``{"method", "params"}``.
        known: every answer the call had.
    """

    default_recoverable = False

    def __init__(self, key: str, request: Dict[str, Any], known: Dict[str, Any]) -> None:
        super().__init__(f"the tool needs {request['method']} from the client")
        self.key = key
        self.request = request
        self.known = known


@attrs.frozen
class ElicitResult:
    """The client's answer to :meth:`RequestContext.elicit`.

    Attributes:
        action: ``"accept"``, ``"decline"`` or ``"cancel"``.
        content: the values the user gave (with the schema's defaults for
            those left out), or None unless accepted.

    .. versionadded:: 0.1.0
    """

    action: str
    content: Optional[Dict[str, Any]] = None


class RequestContext:
    """One request being served: its id, its session, and the ways back to the client.

    Made by the server for each request; read it with :func:`request_context`.
    Every method may be called from any thread while the request runs.

    Attributes:
        request_id: the JSON-RPC id of the request.
        method: the request's method (``tools/call``, ...).
        progress_token: the client's ``_meta.progressToken``, or None.

    .. versionadded:: 0.1.0
    """

    __slots__ = ("request_id", "method", "progress_token", "_session", "_sink", "_cancel", "_closer", "_inputs",
                 "_asked")

    def __init__(self, session: ServerSession, request_id: Any, method: str, progress_token: Any,
                 sink: Any, cancel: Any, closer: Any = None, inputs: Optional[Dict[str, Any]] = None) -> None:
        self.request_id = request_id
        self.method = method
        self.progress_token = progress_token
        self._session = session
        self._sink = sink
        self._cancel = cancel
        self._closer = closer
        # 2026-07-28: the client's answers so far, by key (None: ask over the session instead).
        self._inputs = inputs
        self._asked = 0

    @property
    def cancelled(self) -> bool:
        """True once the client cancelled this request (``notifications/cancelled``) or went away."""
        return self._cancel.is_set()

    @property
    def client_capabilities(self) -> Dict[str, Any]:
        """The capabilities the client declared."""
        return self._session.client_capabilities

    def log(self, level: str, data: Any, *, logger: Optional[str] = None) -> None:
        """Send a ``notifications/message`` log entry, if ``level`` reaches the client's ``logging/setLevel``.

        Args:
            level: an MCP level (``debug``, ``info``, ``notice``, ``warning``, ``error``, ...).
            data: any JSON value.
            logger: the logger's name, shown by the client.

        Raises:
            ValueError: ``level`` is not an MCP log level.
        """
        if level not in LOG_LEVELS:
            raise ValueError(f"request_context().log: unknown level {level!r}; use one of {', '.join(LOG_LEVELS)}")
        if not self._session.wants_log(level):
            return
        params: Dict[str, Any] = {"level": level, "data": data}
        if logger is not None:
            params["logger"] = logger
        self._sink({"jsonrpc": "2.0", "method": "notifications/message", "params": params})

    def progress(self, progress: float, total: Optional[float] = None, message: Optional[str] = None) -> None:
        """Send ``notifications/progress``; does nothing when the client gave no progress token."""
        if self.progress_token is None:
            return
        params: Dict[str, Any] = {"progressToken": self.progress_token, "progress": progress}
        if total is not None:
            params["total"] = total
        if message is not None:
            params["message"] = message
        self._sink({"jsonrpc": "2.0", "method": "notifications/progress", "params": params})

    def sample(self, messages: Union[str, Sequence[Message]], *, max_tokens: int,
               system_prompt: Optional[str] = None, temperature: Optional[float] = None,
               timeout: Optional[float] = None) -> MessageResponse:
        """Ask the client's model (``sampling/createMessage``) and wait for its answer.

        Args:
            messages: a str (one user message) or :class:`~agcore_sync.llm.types.Message` values
                (text and images).
            max_tokens: the most tokens the answer may hold.
            system_prompt: the system prompt, if any.
            temperature: the sampling temperature, if any.
            timeout: seconds to wait (None: the server's ``request_timeout``).

        Returns:
            The client's answer as a ``MessageResponse``.

        Raises:
            McpError: the client has no sampling capability, refused, or did
                not answer in time, or the request was cancelled.
        """
        if self._inputs is None:
            self._session.check_can_ask("sampling/createMessage")
        if "sampling" not in self._session.client_capabilities:
            raise McpError("the client does not support sampling (no sampling capability)", code=-32601)
        items = [Message.user(messages)] if isinstance(messages, str) else list(messages)
        params: Dict[str, Any] = {"messages": [_wire_message(m) for m in items], "maxTokens": max_tokens}
        if system_prompt is not None:
            params["systemPrompt"] = system_prompt
        if temperature is not None:
            params["temperature"] = temperature
        result = self._ask("sampling/createMessage", params, timeout)
        message = mcp_message({"role": "assistant", "content": result.get("content", {})})
        return MessageResponse(
            id=str(self.request_id), model=str(result.get("model", "")), message=message,
            stop_reason=_STOP.get(result.get("stopReason"), StopReason.STOP))

    def elicit(self, message: str, schema: Dict[str, Any], *, timeout: Optional[float] = None) -> ElicitResult:
        """Ask the client's user for values (``elicitation/create``, form mode) and wait.

        Args:
            message: what to ask.
            schema: a flat JSON Schema object (``properties`` of strings,
                numbers, booleans and enums, ``default`` values, ``required``).
            timeout: seconds to wait (None: the server's ``request_timeout``).

        Returns:
            The answer; accepted content has the schema's defaults filled in.

        Raises:
            McpError: the client has no elicitation capability or did not answer.
        """
        if self._inputs is None:
            self._session.check_can_ask("elicitation/create")
        if "elicitation" not in self._session.client_capabilities:
            raise McpError("the client does not support elicitation (no elicitation capability)", code=-32601)
        params = {"message": message, "requestedSchema": schema}
        result = self._ask("elicitation/create", params, timeout)
        action = result.get("action")
        if action not in ("accept", "decline", "cancel"):
            raise McpError(f"the client answered elicitation/create with action {action!r}", code=-32602)
        content = result.get("content") if action == "accept" else None
        if action == "accept":
            filled = dict(content) if isinstance(content, dict) else {}
            for name, spec in (schema.get("properties") or {}).items():
                if name not in filled and isinstance(spec, dict) and "default" in spec:
                    filled[name] = spec["default"]
            content = filled
        return ElicitResult(action, content)

    def _ask(self, method: str, params: Dict[str, Any], timeout: Optional[float]) -> Dict[str, Any]:
        if self._inputs is None:
            return self._session.ask(method, params, self._sink, self._cancel, timeout)
        self._asked += 1
        key = f"{method}#{self._asked}"
        answer = self._inputs.get(key)
        if isinstance(answer, dict):
            return answer
        raise InputRequired(key, {"method": method, "params": params}, dict(self._inputs))

    def close_stream(self) -> None:
        """End the HTTP answer's SSE stream now; the client resumes it with ``Last-Event-ID``.

        What the request sends later (its result included) waits for that
        resumption. Over stdio, or for a JSON answer, nothing happens.
        """
        if self._closer is not None:
            self._closer()


def _wire_message(message: Message) -> Dict[str, Any]:
    blocks: List[Dict[str, Any]] = []
    for block in message.content:
        if isinstance(block, TextBlock):
            blocks.append({"type": "text", "text": block.text})
        elif getattr(block, "type", None) == "image" and getattr(block, "data", None):
            blocks.append({"type": "image", "data": block.data, "mimeType": block.media_type})
    role = "assistant" if message.role is Role.ASSISTANT else "user"
    content: Any = blocks[0] if len(blocks) == 1 else blocks
    return {"role": role, "content": content}


def request_context() -> RequestContext:
    """Return the context of the MCP request being served on this thread.

    Raises:
        LookupError: called outside a request served by an ``McpServer``.

    .. versionadded:: 0.1.0
    """
    current = _CURRENT.get()
    if current is None:
        raise LookupError("request_context() is only available while an McpServer serves a request")
    return current


def enter(context: RequestContext) -> contextvars.Token:
    """Make ``context`` the current request's (for the dispatcher); return the token for :func:`leave`."""
    return _CURRENT.set(context)


def leave(token: contextvars.Token) -> None:
    """Restore the context :func:`enter` replaced."""
    _CURRENT.reset(token)
