"""What an :class:`~agcore_sync.tools.mcp.client.McpClient` does when its server goes away.

:class:`_RestartMixin` is part of the client: ``_on_closed`` fails every
pending call and queues one restart job on the responder's worker, which
waits the policy's backoff, starts the transport again and runs the
handshake; calls made meanwhile wait at the gate (``_await_restart``). Its
state is the client's, declared below and set up by ``McpClient.__init__``;
all of it is guarded by ``_pending_lock`` (``_reconnected`` is a Condition
over that lock). See the client module's docstring for the whole story.
"""

from __future__ import annotations

import functools
import logging
import threading
import time
from typing import TYPE_CHECKING, Any, Callable, Dict, Optional

from agcore_sync.tools.error import McpConnectionError
from agcore_sync.tools.mcp._handshake import negotiate
from agcore_sync.tools.mcp._pending import _READY

if TYPE_CHECKING:
    from agcore_sync.tools.mcp._responder import ServerResponder
    from agcore_sync.tools.mcp.restart import RestartPolicy
    from agcore_sync.tools.mcp.transport import Transport

logger = logging.getLogger("agcore_sync.mcp")

#: Longest wait, after a request could not be written, for the transport to
#: report the loss (it first reaps the exit code and drains stderr, bounded by
#: the stdio transport's EXIT_CODE_TIMEOUT + STDERR_DRAIN_TIMEOUT); the
#: call's own timeout bounds it too.
LOSS_REPORT_TIMEOUT = 5.0


class _RestartMixin:
    """Loss handling and the restart job, for :class:`~agcore_sync.tools.mcp.client.McpClient`."""

    server_name: str
    transport: Transport
    timeout: Optional[float]
    protocol: Optional[str]
    _state: str
    _client_info: Dict[str, Any]
    _capabilities: Dict[str, Any]
    _pending_lock: threading.Lock
    _lost: Optional[McpConnectionError]
    _restart: Optional[RestartPolicy]
    _restarting: bool
    _loss_count: int
    _generation: int
    _restart_count: int
    _restarts_since_success: int
    _reconnected: threading.Condition
    _cache_lock: threading.Lock
    _tools_generation: int
    _tools_cache: Optional[Any]
    _tools_expiry: Optional[float]
    _cancel: threading.Event
    _responder: ServerResponder
    _request: Callable[..., Dict[str, Any]]
    _on_message: Callable[[Dict[str, Any]], None]
    _fail_pending: Callable[[McpConnectionError], None]
    _adopt: Callable[[Any], None]

    def _on_closed(self, error: McpConnectionError) -> None:
        """Fail every pending call and queue a restart; runs on the transport's reader (or a failed writer)."""
        remedy = "restarting it" if self._restart is not None else "create a new McpClient to reconnect"
        lost = McpConnectionError(
            f"MCP server {self.server_name!r} is gone: {error}; {remedy}",
            exit_code=error.exit_code,
            stderr_tail=error.stderr_tail,
        )
        logger.warning("%s", lost)
        with self._pending_lock:
            self._loss_count += 1
            self._lost = lost
            restart = self._claim_restart()
            self._reconnected.notify_all()  # calls whose request could not be written wait for this
        self._fail_pending(lost)
        if restart:
            self._responder.run(self._restart_loop)

    def _claim_restart(self) -> bool:
        """Decide (under ``_pending_lock``) to start a restart job; True if this caller must queue it."""
        if self._restart is None or self._restarting or self._state != _READY or self._cancel.is_set():
            return False
        self._restarting = True
        return True

    def _restart_loop(self) -> None:
        """Bring the server back, as the policy allows; runs on the responder's worker.

        Each attempt waits its backoff on the cancel Event, starts the
        transport again and runs the handshake. It ends when an attempt
        succeeded (the gate opens), when the policy is used up (the loss
        becomes final) or when the client is closed; whichever way it ends,
        calls waiting at the gate are woken.
        """
        back = False
        try:
            back = self._restart_attempts()
        finally:
            if not back:
                # A job that brought the server back opened the gate itself; a
                # new loss may have claimed the next restart since, so its flag
                # must not be touched here.
                with self._pending_lock:
                    self._restarting = False
                    self._reconnected.notify_all()

    def _restart_attempts(self) -> bool:
        """Try to restart until back (True), given up or closed (False)."""
        policy = self._restart
        assert policy is not None
        failure = "none"
        while True:
            with self._pending_lock:
                attempt = self._restarts_since_success
                if self._cancel.is_set():
                    return False
                given_up = attempt >= policy.max_restarts
                if given_up:
                    lost = self._lost
                    assert lost is not None
                    self._lost = McpConnectionError(
                        f"MCP server {self.server_name!r} is gone and was not restarted again: {attempt} "
                        f"restart(s) without a successful call in between (max_restarts={policy.max_restarts}; "
                        f"last restart failure: {failure}); last loss: {lost.message}",
                        exit_code=lost.exit_code,
                        stderr_tail=lost.stderr_tail,
                    )
                else:
                    self._restarts_since_success = attempt + 1
                    epoch = self._loss_count
            if given_up:
                logger.warning("%s", self._lost)
                return False
            delay = policy.backoff(attempt)
            logger.warning(
                "restarting MCP server %r in %.3g s (restart %d of at most %d in a row)",
                self.server_name, delay, attempt + 1, policy.max_restarts,
            )
            if self._cancel.wait(delay):
                return False
            try:
                self.transport.start(self._on_message, self._on_closed)
                agreement = negotiate(
                    self.protocol,
                    functools.partial(self._request, epoch=epoch),
                    self.transport,
                    server_name=self.server_name,
                    client_info=self._client_info,
                    capabilities=self._capabilities,
                    timeout=self.timeout,
                )
            except Exception as exc:  # noqa: BLE001 - a failed attempt; the policy decides what next
                failure = f"{type(exc).__name__}: {exc}"
                if not self._cancel.is_set():
                    logger.warning("restart %d of MCP server %r failed: %s", attempt + 1, self.server_name, failure)
                continue
            self._adopt(agreement)
            with self._cache_lock:
                self._tools_generation += 1
                self._tools_cache = None
                self._tools_expiry = None
            with self._pending_lock:
                if self._cancel.is_set():
                    return False
                back = self._loss_count == epoch
                if back:
                    self._lost = None
                    self._generation += 1
                    self._restart_count += 1
                    # Open the gate now, in the same critical section.
                    self._restarting = False
                    self._reconnected.notify_all()
            if not back:
                failure = "the new server went away right after the handshake"
                continue
            logger.info("restarted MCP server %r (pid %s)", self.server_name, getattr(self.transport, "pid", None))
            return True

    def _await_loss_report(self, losses: int, timeout: Optional[float]) -> bool:
        """Wait until a loss after the ``losses``-th is reported; False if not in time or closed."""
        wait = LOSS_REPORT_TIMEOUT if timeout is None else min(timeout, LOSS_REPORT_TIMEOUT)
        deadline = time.monotonic() + max(wait, 0.0)
        with self._reconnected:
            while self._loss_count == losses and not self._cancel.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._reconnected.wait(remaining)
        return not self._cancel.is_set()

    def _await_restart(self, timeout: Optional[float], tool_name: Optional[str]) -> Optional[float]:
        """Wait (at most ``timeout``) while the server is being restarted; return the time left.

        Raises:
            McpConnectionError: the restart did not finish in time, or the
                client was closed meanwhile.
        """
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        with self._reconnected:
            while self._lost is not None and self._restarting and not self._cancel.is_set():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    lost = self._lost
                    raise McpConnectionError(
                        f"MCP server {self.server_name!r} is being restarted and was not back within {timeout} s "
                        f"({lost.message})",
                        tool_name=tool_name,
                        exit_code=lost.exit_code,
                        stderr_tail=lost.stderr_tail,
                    )
                self._reconnected.wait(remaining)
        if self._cancel.is_set():
            raise McpConnectionError(f"MCP client for {self.server_name!r} was closed", tool_name=tool_name)
        return None if deadline is None else max(deadline - time.monotonic(), 0.0)

