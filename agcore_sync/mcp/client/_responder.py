"""Answering the server: its requests, its notifications, its 2026-07-28 input requests.

:class:`ServerResponder` is owned by :class:`~agcore_sync.mcp.client.session.McpClient`.
The transport's reader hands it every server request and notification
(except ``tools/list_changed``, which the client handles in wire order);
it runs them on one worker thread, ``agcore-mcp-worker-<n>``, started when
first needed, so user handlers never run on (and never block) the reader.
The same worker runs the client's restarts of a crashed server
(:meth:`ServerResponder.run`), in queue order with the server's messages.
The worker is a daemon, so a forgotten client never blocks interpreter
exit; the client's ``close()`` stops and joins it through :meth:`close`.

Context: each server message is handled (the user's handlers called, the
server's log records emitted) in a fresh copy of the ``contextvars`` context
given to :meth:`ServerResponder.use_context`, which the client takes on the
thread that calls ``connect()``. A fresh copy per message, so a variable one
handler sets is not seen by the next; the restart jobs are the client's own
work and run outside it.
"""

from __future__ import annotations

import contextvars
import itertools
import logging
import queue
import threading
from typing import Any, Callable, Dict, List, Optional

from agcore_sync import _instrument
from agcore_sync.mcp.errors import McpError, McpNotInitializedError
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.shared import protocol as proto

__all__ = [
    "ServerResponder", "WORKER_JOIN_TIMEOUT", "WORKER_POLL_INTERVAL", "SERVER_LOGGER",
    "ElicitationHandler", "SamplingHandler", "ProgressHandler",
]

#: ``elicitation_handler(params) -> result``: gets the ``elicitation/create``
#: params, returns ``{"action": "accept" | "decline" | "cancel", "content": {...}}``.
ElicitationHandler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: ``sampling_handler(params) -> result``: gets the ``sampling/createMessage``
#: params, returns a ``CreateMessageResult`` dict (role, content, model, ...).
SamplingHandler = Callable[[Dict[str, Any]], Dict[str, Any]]
#: ``on_progress(params)``: gets each ``notifications/progress`` params dict.
ProgressHandler = Callable[[Dict[str, Any]], None]

logger = _instrument.get_logger("agcore_sync.mcp")
#: Parent of the loggers server log messages go to: one child per server,
#: named after it (dots replaced by ``_``).
SERVER_LOGGER = "agcore_sync.mcp.server"

#: Bound on joining the worker in close(); a user handler still running
#: after it is logged and left (the thread is a daemon).
WORKER_JOIN_TIMEOUT = 5.0
#: How often the idle worker wakes to check that the client is still open.
WORKER_POLL_INTERVAL = 0.5
#: Most ``input_required`` rounds one 2026-07-28 call may take before the
#: client gives up (the SDKs use 10 too).
MAX_INPUT_ROUNDS = 10
#: First pause before retrying an ``input_required`` result that carries only
#: ``requestState``; it doubles up to :data:`INPUT_RETRY_MAX_DELAY`.
INPUT_RETRY_DELAY = 0.05
#: Longest pause between state-only ``input_required`` retries.
INPUT_RETRY_MAX_DELAY = 0.25

_worker_numbers = itertools.count(1)


class ServerResponder:
    """Serve what an MCP server asks of the client.

    Args:
        server_name: the server's name, for logs and errors.
        send: sends one message to the server (the transport's ``send``).
        cancel: the client's cancel Event, set by its ``close()``.
        timeout: bound on sending an answer.
        roots: answered to ``roots/list`` (None: -32601).
        elicitation_handler: answers ``elicitation/create`` (None: -32601).
        sampling_handler: answers ``sampling/createMessage`` (None: -32601).
        on_progress: gets ``notifications/progress`` params.
        notices: more notification handlers, by method (``params`` in);
            the client's resource subscriptions use it.
    """

    def __init__(
        self,
        server_name: str,
        send: Callable[..., None],
        cancel: threading.Event,
        *,
        timeout: Optional[float],
        roots: Optional[List[Dict[str, Any]]],
        elicitation_handler: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]],
        sampling_handler: Optional[Callable[[Dict[str, Any]], Dict[str, Any]]],
        on_progress: Optional[Callable[[Dict[str, Any]], None]],
        notices: Optional[Dict[str, Callable[[Dict[str, Any]], None]]] = None,
    ) -> None:
        self.server_name = server_name
        self.timeout = timeout
        self._send = send
        self._cancel = cancel
        self._roots = roots
        self._elicitation_handler = elicitation_handler
        self._sampling_handler = sampling_handler
        self._on_progress = on_progress
        self._notices = dict(notices or {})
        self._server_logger = logging.getLogger(f"{SERVER_LOGGER}.{server_name.replace('.', '_')}")
        self._lock = threading.Lock()
        # Copied for each message; replaced by use_context() before the
        # first message can arrive.
        self._context = contextvars.copy_context()
        self._worker: Optional[threading.Thread] = None
        # Server messages (dicts), jobs (callables), or None: close()'s sentinel.
        self._queue: queue.Queue[Any] = queue.Queue()

    def use_context(self, context: contextvars.Context) -> None:
        """Handle every later server message in a fresh copy of ``context`` (the caller's of ``connect()``)."""
        self._context = context

    def submit(self, message: Dict[str, Any]) -> None:
        """Queue a server request or notification; called on the reader thread, never blocks."""
        if self._cancel.is_set():
            return
        self._ensure_worker()
        self._queue.put(message)

    def run(self, job: Callable[[], None]) -> bool:
        """Run ``job()`` on the worker after what is queued; never blocks.

        The job must watch the cancel Event (``close()`` joins the worker
        with a bound) and catch its own failures; one that escapes is logged.

        Returns:
            False when the client is closing and the job was not queued.
        """
        if self._cancel.is_set():
            return False
        self._ensure_worker()
        self._queue.put(job)
        return True

    def on_worker(self) -> bool:
        """Return True when called on this responder's worker thread."""
        return self._worker is threading.current_thread()

    def set_roots(self, roots: List[Dict[str, Any]]) -> None:
        """Answer later ``roots/list`` requests with ``roots``."""
        self._roots = roots

    def _ensure_worker(self) -> None:
        if self._worker is None:
            with self._lock:
                if self._worker is None and not self._cancel.is_set():
                    self._worker = threading.Thread(
                        target=self._work, name=f"agcore-mcp-worker-{next(_worker_numbers)}", daemon=True
                    )
                    self._worker.start()

    def close(self) -> None:
        """Stop the worker after what is queued and join it, bounded by :data:`WORKER_JOIN_TIMEOUT`."""
        with self._lock:
            worker = self._worker
        if worker is None or worker is threading.current_thread():
            return
        self._queue.put(None)
        worker.join(WORKER_JOIN_TIMEOUT)
        if worker.is_alive():
            logger.warning("%s is still running a handler after close(); leaving it", worker.name)

    def serve(self, method: str, params: Dict[str, Any]) -> Dict[str, Any]:
        """Answer one server request (or one embedded input request) with its result.

        Raises:
            McpError: with code -32601 for a method this client does not serve.
            Exception: whatever a user handler raised.
        """
        if method == "ping":
            return {}
        if method == "roots/list" and self._roots is not None:
            return {"roots": [dict(root) for root in self._roots]}
        if method == "elicitation/create" and self._elicitation_handler is not None:
            return proto.fill_elicitation_defaults(_checked(self._elicitation_handler(params), method), params)
        if method == "sampling/createMessage" and self._sampling_handler is not None:
            return _checked(self._sampling_handler(params), method)
        raise McpError(f"Method not found: {method}", code=jsonrpc.METHOD_NOT_FOUND)

    def settle_input_required(
        self,
        result: Dict[str, Any],
        params: Dict[str, Any],
        retry: Callable[[Dict[str, Any]], Dict[str, Any]],
        tool_name: str,
    ) -> Dict[str, Any]:
        """Answer a 2026-07-28 call's ``input_required`` results until it gives a final one; on the calling thread.

        Each round answers the ``inputRequests`` through the handlers (or,
        with only ``requestState``, waits a doubling pause on the cancel
        Event) and calls ``retry`` with ``params`` plus the answers and the
        state.

        Raises:
            McpError: more than :data:`MAX_INPUT_ROUNDS` rounds, or an input
                request this client cannot answer.
            McpNotInitializedError: the client was closed during a pause.
        """
        delay = INPUT_RETRY_DELAY
        rounds = 0
        while result.get("resultType") == "input_required":
            rounds += 1
            if rounds > MAX_INPUT_ROUNDS:
                raise McpError(
                    f"MCP server {self.server_name!r} still asked for input after {MAX_INPUT_ROUNDS} rounds "
                    f"of tool {tool_name!r}",
                    tool_name=tool_name,
                )
            again = dict(params)
            requests = result.get("inputRequests")
            if isinstance(requests, dict) and requests:
                again["inputResponses"] = {
                    key: self.answer_input_request(request, tool_name) for key, request in requests.items()
                }
                delay = INPUT_RETRY_DELAY
            elif self._cancel.wait(delay):
                raise McpNotInitializedError(f"MCP client for {self.server_name!r} was closed", tool_name=tool_name)
            else:
                delay = min(delay * 2, INPUT_RETRY_MAX_DELAY)
            if "requestState" in result:
                again["requestState"] = result["requestState"]
            result = retry(again)
        return result

    def answer_input_request(self, request: Any, tool_name: str) -> Dict[str, Any]:
        """Answer one entry of a 2026-07-28 ``inputRequests`` map, on the calling thread.

        Raises:
            McpError: the request is malformed, or this client has no handler for it.
        """
        if not isinstance(request, dict) or not isinstance(request.get("method"), str):
            raise McpError(
                f"MCP server {self.server_name!r} sent a malformed input request for tool {tool_name!r}",
                tool_name=tool_name,
            )
        method = request["method"]
        try:
            return self.serve(method, proto.object_or_empty(request.get("params")))
        except McpError as exc:
            raise McpError(
                f"MCP server {self.server_name!r} needs {method} for tool {tool_name!r}, "
                f"which this client cannot answer: {exc.message}",
                tool_name=tool_name,
                code=exc.code,
            ) from exc

    def _work(self) -> None:
        # Runs until close()'s sentinel, so what arrived before close() (log
        # records, progress) is still handled; the poll only notices a close()
        # that could not queue the sentinel.
        while True:
            try:
                message = self._queue.get(timeout=WORKER_POLL_INTERVAL)
            except queue.Empty:
                if self._cancel.is_set():
                    return
                continue
            if message is None:
                return
            if not isinstance(message, dict):
                try:
                    message()
                except Exception:  # noqa: BLE001 - the worker must outlive one failed job
                    logger.exception("a job of the MCP client of %r failed", self.server_name)
                continue
            self._context.copy().run(self._handle, message)

    def _handle(self, message: Dict[str, Any]) -> None:
        try:
            if "id" in message:
                if not self._cancel.is_set():  # no one to answer after close()
                    self._answer(message)
            else:
                self._notice(message)
        except Exception:  # noqa: BLE001 - the worker must outlive one bad message
            logger.exception("handling %r from MCP server %r failed", message.get("method"), self.server_name)

    def _notice(self, message: Dict[str, Any]) -> None:
        method = message["method"]
        if not isinstance(method, str):  # garbage from the server: nothing to dispatch on
            logger.debug("MCP server %r sent a notification whose method is not a string", self.server_name)
            return
        params = proto.object_or_empty(message.get("params"))
        if method == "notifications/progress":
            if self._on_progress is not None:
                self._on_progress(params)
        elif method == "notifications/message":
            level = proto.LOG_LEVELS.get(str(params.get("level")), logging.INFO)
            source = params.get("logger")
            self._server_logger.log(
                level, "MCP server %r%s: %s", self.server_name, f" [{source}]" if source else "", params.get("data")
            )
        elif method in self._notices:
            self._notices[method](params)
        else:
            logger.debug("MCP server %r sent %s", self.server_name, method)

    def _answer(self, message: Dict[str, Any]) -> None:
        request_id = message["id"]
        method = message["method"]
        try:
            if not isinstance(method, str):
                raise McpError("method must be a string", code=jsonrpc.INVALID_REQUEST)
            result = self.serve(method, proto.object_or_empty(message.get("params")))
        except McpError as exc:
            reply = jsonrpc.error_response(request_id, exc.code or jsonrpc.INTERNAL_ERROR, exc.message, exc.data)
        except Exception as exc:  # noqa: BLE001 - a failing handler becomes an error answer
            logger.exception("the %s handler of the MCP client of %r failed", method, self.server_name)
            reply = jsonrpc.error_response(request_id, jsonrpc.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
        else:
            reply = jsonrpc.result_response(request_id, result)
        try:
            self._send(reply, timeout=self.timeout)
        except McpError as exc:
            logger.debug("could not answer %s from %r: %s", method, self.server_name, exc)


def _checked(result: Any, method: str) -> Dict[str, Any]:
    if not isinstance(result, dict):
        raise TypeError(f"the {method} handler returned {type(result).__name__}, not a dict")
    return result

