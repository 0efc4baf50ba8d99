"""Answering ``sampling/createMessage`` with any :class:`~agcore_sync.llm.provider.LlmProvider`.

:func:`sampling_handler_for` builds the ``sampling_handler`` an
:class:`~agcore_sync.mcp.client.session.McpClient` takes. Per request:

1. ``approve(params)``, when given, decides first (human approval): False
   refuses with the JSON-RPC error -1 the protocol names for a user's
   rejection, and the provider is never called.
2. ``modelPreferences`` go to ``model_for(preferences)``, which names the
   model (None: the provider's own). Without it, the first ``hints`` name
   the provider takes is not guessed at: the provider's model is used.
3. ``systemPrompt`` becomes the system prompt; ``includeContext``
   (``thisServer``/``allServers``) adds ``context(include)``'s text to it
   when a ``context`` function is given, else is ignored (the protocol
   lets a client ignore it).
4. ``messages`` become :class:`~agcore_sync.llm.types.Message` values (text,
   images as :class:`~agcore_sync.llm.media.ImageBlock`, audio as a text
   marker); ``maxTokens``, ``stopSequences`` and ``temperature`` go into the
   request as they are.
5. The answer is the response's text as one ``text`` block, its model, and
   its stop reason (``endTurn``, ``maxTokens``, ``toolUse``).

The handler runs on the client's worker thread; a provider error becomes
the JSON-RPC error answer (its message only, never a key).

.. versionadded:: 0.1.0
"""

from __future__ import annotations

from typing import Any, Callable, Dict, List, Mapping, Optional

from agcore_sync import _instrument
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.types import Message, MessageRequest, StopReason
from agcore_sync.mcp.errors import McpError
from agcore_sync.mcp.shared.content import mcp_message

__all__ = ["sampling_handler_for", "USER_REJECTED"]

logger = _instrument.get_logger("agcore_sync.mcp")

#: JSON-RPC error code the MCP specification gives a user's refusal of a sampling request.
USER_REJECTED = -1

_STOP = {StopReason.STOP: "endTurn", StopReason.LENGTH: "maxTokens", StopReason.TOOL_USE: "toolUse"}


def sampling_handler_for(
    provider: LlmProvider,
    *,
    model_for: Optional[Callable[[Mapping[str, Any]], Optional[str]]] = None,
    approve: Optional[Callable[[Mapping[str, Any]], bool]] = None,
    context: Optional[Callable[[str], Optional[str]]] = None,
    max_tokens: Optional[int] = None,
) -> Callable[[Dict[str, Any]], Dict[str, Any]]:
    """Return a ``sampling_handler`` that answers with ``provider`` (see the module docstring).

    Args:
        provider: the provider that writes the answers.
        model_for: ``model_for(model_preferences)`` returns the model name
            to use (``hints``, ``costPriority``, ``speedPriority``,
            ``intelligencePriority`` as the server sent them, ``{}`` if
            none), or None for the provider's own model.
        approve: ``approve(params)`` returns True to answer, False to refuse
            (the server gets error -1, "rejected by the user").
        context: ``context(include_context)`` returns text to add to the
            system prompt for ``thisServer`` / ``allServers``, or None.
        max_tokens: an upper bound on the server's ``maxTokens`` (None: the
            server's value as it is).

    Example:
        >>> from agcore_sync import MockProvider
        >>> handler = sampling_handler_for(MockProvider([MockProvider.text("4")]))
        >>> handler({"messages": [{"role": "user", "content": {"type": "text", "text": "2+2?"}}],
        ...          "maxTokens": 10})["content"]
        {'type': 'text', 'text': '4'}

    Raises:
        TypeError: ``provider`` is not an ``LlmProvider``, or a callback is not callable.
    """
    if not isinstance(provider, LlmProvider):
        raise TypeError(f"provider must be an LlmProvider, not {type(provider).__name__}")
    for name, value in (("model_for", model_for), ("approve", approve), ("context", context)):
        if value is not None and not callable(value):
            raise TypeError(f"{name} must be callable, not {type(value).__name__}")

    def handle(params: Dict[str, Any]) -> Dict[str, Any]:
        if approve is not None and not approve(params):
            raise McpError("Sampling request rejected by the user", code=USER_REJECTED)
        request = _request(params, model_for, context, max_tokens)
        response = provider.chat(request)
        return {
            "role": "assistant",
            "content": {"type": "text", "text": response.message.text},
            "model": response.model,
            "stopReason": _STOP.get(response.stop_reason, "endTurn"),
        }

    return handle


def _request(
    params: Mapping[str, Any],
    model_for: Optional[Callable[[Mapping[str, Any]], Optional[str]]],
    context: Optional[Callable[[str], Optional[str]]],
    cap: Optional[int],
) -> MessageRequest:
    raw = params.get("messages")
    messages: List[Message] = [mcp_message(m) for m in (raw if isinstance(raw, list) else ()) if isinstance(m, Mapping)]
    if not messages:
        raise McpError("sampling/createMessage needs at least one message", code=-32602)
    preferences = params.get("modelPreferences")
    model = model_for(preferences if isinstance(preferences, Mapping) else {}) if model_for is not None else None
    system = params.get("systemPrompt") if isinstance(params.get("systemPrompt"), str) else None
    include = params.get("includeContext")
    if include in ("thisServer", "allServers"):
        extra = context(include) if context is not None else None
        if extra:
            system = f"{system}\n\n{extra}" if system else extra
        elif context is None:
            logger.debug("sampling asked for includeContext=%s; no context function given, ignored", include)
    wanted = params.get("maxTokens")
    max_tokens = wanted if isinstance(wanted, int) and not isinstance(wanted, bool) and wanted > 0 else None
    if cap is not None:
        max_tokens = cap if max_tokens is None else min(max_tokens, cap)
    stop = params.get("stopSequences")
    temperature = params.get("temperature")
    if not isinstance(temperature, (int, float)) or isinstance(temperature, bool):
        temperature = None
    return MessageRequest(
        model,
        messages,
        system=system,
        max_tokens=max_tokens,
        temperature=temperature,
        stop=[s for s in stop if isinstance(s, str)] if isinstance(stop, list) and stop else None,
    )
