"""Answering one JSON-RPC message a client sent, whatever the transport.

:func:`serve` takes a parsed message and returns the response to send (or
None for notifications and responses). Every handler failure becomes the
JSON-RPC error the specification names; nothing raises out of ``serve``.
"""

from __future__ import annotations

import base64
import binascii
import json
from typing import Any, Callable, Dict, List, Optional

from agcore_sync import _instrument
from agcore_sync.mcp.server import _results
from agcore_sync.mcp.server._session import ServerSession, Sink
from agcore_sync.mcp.server.context import InputRequired, RequestContext, enter, leave
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.shared import protocol as proto
from agcore_sync.tools.error import McpError, PermissionDeniedError, ToolNotFoundError

# The server, typed Any: _server reaches this module through its transports,
# so importing it back, even for typing, would be a cycle.
McpServer = Any

__all__ = ["serve", "RESOURCE_NOT_FOUND", "SUPPORTED_VERSIONS"]

logger = _instrument.get_logger("agcore_sync.mcp.serving")

#: MCP's error code for a resource that does not exist.
RESOURCE_NOT_FOUND = -32002
#: The versions served: every version the client speaks.
SUPPORTED_VERSIONS = proto.KNOWN_VERSIONS

Handler = Callable[[Any, ServerSession, Dict[str, Any], RequestContext], Dict[str, Any]]


def serve(server: McpServer, session: ServerSession, message: Dict[str, Any], sink: Sink,
          closer: Optional[Callable[[], None]] = None) -> Optional[Dict[str, Any]]:
    """Handle one message from the client; return the response to send, or None."""
    if jsonrpc.is_response(message):
        session.resolve(message)
        return None
    method = message.get("method")
    if not isinstance(method, str):
        return jsonrpc.error_response(message.get("id"), jsonrpc.INVALID_REQUEST, "Invalid Request: no method")
    params = message.get("params")
    if params is not None and not isinstance(params, dict):
        if "id" in message:
            return jsonrpc.error_response(message["id"], jsonrpc.INVALID_PARAMS, "params must be an object")
        return None
    params = params or {}
    if "id" not in message:
        _notification(session, method, params)
        return None
    request_id = message["id"]
    if not isinstance(request_id, (str, int)) or isinstance(request_id, bool):
        return jsonrpc.error_response(None, jsonrpc.INVALID_REQUEST, "Invalid Request: id must be a string or number")
    handler = _HANDLERS.get(method)
    if handler is None:
        return jsonrpc.error_response(request_id, jsonrpc.METHOD_NOT_FOUND, f"Method not found: {method}")
    meta = params.get("_meta") if isinstance(params.get("_meta"), dict) else {}
    asked = meta.get(proto.PROTOCOL_VERSION_META_KEY)
    if asked is not None and asked not in SUPPORTED_VERSIONS:
        return jsonrpc.error_response(request_id, jsonrpc.UNSUPPORTED_PROTOCOL_VERSION,
                                      f"Unsupported protocol version: {asked}",
                                      {"supported": list(SUPPORTED_VERSIONS), "requested": asked})
    _adopt_modern(session, meta)
    cancel = session.begin(request_id)
    try:
        inputs = _known_inputs(params) if session.protocol_version == proto.MODERN_VERSION \
            and method == "tools/call" else None
    except McpError as exc:
        session.end(request_id)
        return jsonrpc.error_response(request_id, exc.code or jsonrpc.INVALID_PARAMS, str(exc))
    context = RequestContext(session, request_id, method, meta.get("progressToken"), sink, cancel, closer, inputs)
    token = enter(context)
    try:
        result = handler(server, session, params, context)
    except McpError as exc:
        return jsonrpc.error_response(request_id, exc.code or jsonrpc.INTERNAL_ERROR, str(exc), exc.data)
    except Exception as exc:  # noqa: BLE001 - a handler bug is the client's internal error, not a crash
        logger.warning("MCP %s failed: %s: %s", method, type(exc).__name__, exc, exc_info=True)
        text = "Internal error" if server.mask_errors else f"Internal error: {type(exc).__name__}: {exc}"
        return jsonrpc.error_response(request_id, jsonrpc.INTERNAL_ERROR, text)
    finally:
        leave(token)
        session.end(request_id)
    if cancel.is_set():
        return None  # the client cancelled: the specification says not to answer
    if session.protocol_version == proto.MODERN_VERSION:
        result = {**result, "_meta": {**result.get("_meta", {}), proto.SERVER_INFO_META_KEY: server.info}}
    return jsonrpc.result_response(request_id, result)


def _notification(session: ServerSession, method: str, params: Dict[str, Any]) -> None:
    if method == "notifications/initialized":
        session.initialized = True
    elif method == "notifications/cancelled":
        session.cancel(params.get("requestId"))


def _adopt_modern(session: ServerSession, meta: Dict[str, Any]) -> None:
    """2026-07-28: each request names its version and the client's capabilities in ``_meta``."""
    if meta.get(proto.PROTOCOL_VERSION_META_KEY) == proto.MODERN_VERSION:
        session.protocol_version = proto.MODERN_VERSION
        session.client_capabilities = proto.object_or_empty(meta.get(proto.CLIENT_CAPABILITIES_META_KEY))
        session.client_info = proto.object_or_empty(meta.get(proto.CLIENT_INFO_META_KEY))


def _bad(message: str) -> McpError:
    return McpError(message, code=jsonrpc.INVALID_PARAMS)


# -- lifecycle -------------------------------------------------------------------------


def _initialize(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    asked = params.get("protocolVersion")
    version = asked if asked in proto.HANDSHAKE_VERSIONS else proto.LATEST_HANDSHAKE_VERSION
    session.protocol_version = version
    session.client_capabilities = proto.object_or_empty(params.get("capabilities"))
    session.client_info = proto.object_or_empty(params.get("clientInfo"))
    result: Dict[str, Any] = {"protocolVersion": version, "capabilities": server.capabilities(),
                              "serverInfo": server.info}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _discover(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    result: Dict[str, Any] = {"supportedVersions": list(SUPPORTED_VERSIONS), "capabilities": server.capabilities(),
                              "serverInfo": server.info}
    if server.instructions:
        result["instructions"] = server.instructions
    return result


def _ping(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    return {}


def _set_level(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    level = params.get("level")
    if level not in proto.LOG_LEVELS:
        raise _bad(f"unknown log level {level!r}")
    session.log_level = level
    return {}


# -- pagination ------------------------------------------------------------------------


def _page(server: McpServer, params: Dict[str, Any], items: List[Dict[str, Any]], key: str) -> Dict[str, Any]:
    cursor = params.get("cursor")
    start = 0
    if cursor is not None:
        try:
            start = int(base64.urlsafe_b64decode(str(cursor).encode("ascii")).decode("ascii"))
        except (ValueError, binascii.Error, UnicodeError):
            raise _bad(f"invalid cursor {cursor!r}") from None
        if start < 0 or start > len(items):
            raise _bad(f"invalid cursor {cursor!r}")
    end = start + server.page_size
    result: Dict[str, Any] = {key: items[start:end]}
    if end < len(items):
        result["nextCursor"] = base64.urlsafe_b64encode(str(end).encode("ascii")).decode("ascii")
    return result


# -- tools -----------------------------------------------------------------------------


def _list_tools(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    return _page(server, params, server.tool_listing(), "tools")


def _call_tool(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    name = params.get("name")
    if not isinstance(name, str):
        raise _bad("tools/call needs a tool name")
    arguments = params.get("arguments")
    arguments = {} if arguments is None else arguments
    try:
        invocation = server.registry.invoke(name, arguments, timeout=server.tool_timeout)
    except ToolNotFoundError:
        raise _bad(f"Unknown tool: {name}") from None
    except PermissionDeniedError as exc:
        return _results.error_result(f'Error in tool "{name}": {exc}')
    if isinstance(invocation.error, InputRequired):
        needed = invocation.error
        return {"resultType": "input_required", "inputRequests": {needed.key: needed.request},
                "requestState": _encode_state(needed.known)}
    if invocation.error is not None:
        if server.mask_errors:
            return _results.error_result(f'Error in tool "{name}"')
        return _results.error_result(invocation.content())
    try:
        return _results.call_result(invocation.output, server.output_plan(name))
    except Exception as exc:  # noqa: BLE001 - an answer that cannot be sent is the tool's error
        return _results.error_result(f'Error in tool "{name}": {exc}')


def _known_inputs(params: Dict[str, Any]) -> Dict[str, Any]:
    """2026-07-28: the answers of earlier rounds (``requestState``) and of this one (``inputResponses``)."""
    known: Dict[str, Any] = {}
    state = params.get("requestState")
    if isinstance(state, str):
        try:
            decoded = json.loads(base64.urlsafe_b64decode(state.encode("ascii")))
        except (ValueError, binascii.Error, UnicodeError):
            raise _bad("invalid requestState") from None
        if isinstance(decoded, dict):
            known.update(decoded)
    responses = params.get("inputResponses")
    if isinstance(responses, dict):
        known.update(responses)
    return known


def _encode_state(known: Dict[str, Any]) -> str:
    return base64.urlsafe_b64encode(json.dumps(known, separators=(",", ":")).encode("utf-8")).decode("ascii")


# -- resources -------------------------------------------------------------------------


def _list_resources(server: McpServer, session: ServerSession, params: Dict[str, Any],
                    _: RequestContext) -> Dict[str, Any]:
    items = [r.listing() for r in server.resource_defs() if not r.is_template]
    return _page(server, params, items, "resources")


def _list_templates(server: McpServer, session: ServerSession, params: Dict[str, Any],
                    _: RequestContext) -> Dict[str, Any]:
    items = [r.listing() for r in server.resource_defs() if r.is_template]
    return _page(server, params, items, "resourceTemplates")


def _read_resource(server: McpServer, session: ServerSession, params: Dict[str, Any],
                   _: RequestContext) -> Dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise _bad("resources/read needs a uri")
    for resource in server.resource_defs():
        variables = resource.match(uri)
        if variables is not None:
            try:
                value = resource.func(**variables)
            except LookupError:  # a template's function that finds nothing for these variables
                break
            return {"contents": _results.resource_contents(uri, value, resource.mime_type)}
    raise McpError(f"Resource not found: {uri}", code=RESOURCE_NOT_FOUND, data={"uri": uri})


def _subscribe(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise _bad("resources/subscribe needs a uri")
    session.subscriptions.add(uri)
    return {}


def _unsubscribe(server: McpServer, session: ServerSession, params: Dict[str, Any],
                 _: RequestContext) -> Dict[str, Any]:
    session.subscriptions.discard(params.get("uri"))  # type: ignore[arg-type]
    return {}


# -- prompts and completion ----------------------------------------------------------------


def _list_prompts(server: McpServer, session: ServerSession, params: Dict[str, Any],
                  _: RequestContext) -> Dict[str, Any]:
    return _page(server, params, [p.listing() for p in server.prompt_defs()], "prompts")


def _get_prompt(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    name = params.get("name")
    prompt = server.prompt_def(name) if isinstance(name, str) else None
    if prompt is None:
        raise _bad(f"Unknown prompt: {name}")
    arguments = params.get("arguments") or {}
    if not isinstance(arguments, dict) or not all(isinstance(v, str) for v in arguments.values()):
        raise _bad(f"prompt {name!r}: arguments must be an object of strings")
    missing, unknown = prompt.missing(arguments), prompt.unknown(arguments)
    if missing or unknown:
        raise _bad(f"prompt {name!r}: " + "; ".join(
            part for part in (missing and f"missing required arguments {', '.join(missing)}",
                              unknown and f"unknown arguments {', '.join(unknown)}") if part))
    result: Dict[str, Any] = {"messages": _results.prompt_messages(prompt.func(**arguments))}
    if prompt.description:
        result["description"] = prompt.description
    return result


def _complete(server: McpServer, session: ServerSession, params: Dict[str, Any], _: RequestContext) -> Dict[str, Any]:
    ref, argument = params.get("ref"), params.get("argument")
    if not isinstance(ref, dict) or not isinstance(argument, dict) or not isinstance(argument.get("name"), str):
        raise _bad("completion/complete needs a ref and an argument name")
    values: List[str] = []
    if server.completer is not None:
        context = params.get("context")
        arguments = context.get("arguments") if isinstance(context, dict) else None
        values = [str(v) for v in (server.completer(ref, argument["name"], str(argument.get("value", "")),
                                                    arguments) or [])]
    return {"completion": {"values": values[:100], "total": len(values), "hasMore": len(values) > 100}}


_HANDLERS: Dict[str, Handler] = {
    "initialize": _initialize,
    "server/discover": _discover,
    "ping": _ping,
    "logging/setLevel": _set_level,
    "tools/list": _list_tools,
    "tools/call": _call_tool,
    "resources/list": _list_resources,
    "resources/templates/list": _list_templates,
    "resources/read": _read_resource,
    "resources/subscribe": _subscribe,
    "resources/unsubscribe": _unsubscribe,
    "prompts/list": _list_prompts,
    "prompts/get": _get_prompt,
    "completion/complete": _complete,
}
