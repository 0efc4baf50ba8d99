"""The restarter: what an MCP client with a restart policy does when its server goes away.

:class:`Restarter` is owned by the client (only when it has a
:class:`~agcore_sync.mcp.client.restart.RestartPolicy`) and gets everything
it needs passed in: the client's :class:`~agcore_sync.mcp.client._pending.PendingTable`,
its cancel Event, a ``reconnect(epoch)`` step (start the transport again,
run the handshake, adopt it), a ``run(job)`` that queues a job on the
client's worker, and a ``ready()`` test of the client's state.

:meth:`Restarter.lose` records a loss in the table (failing every pending
call at once) and queues one restart job; the job waits the policy's
backoff on the cancel Event, calls ``reconnect`` and, if no new loss came
meanwhile, ends the loss in the table and opens the gate. Calls made
meanwhile wait at the gate (:meth:`Restarter.await_restart`). One lock (with
a Condition over it) guards the restarter's state, and every change of the
table's loss happens while it is held (lock order: restarter, then table),
so a loss and the end of a restart never interleave. See the client
module's docstring for the whole story.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional

from agcore_sync import _instrument
from agcore_sync.mcp.client._pending import PendingTable
from agcore_sync.mcp.client.restart import RestartPolicy
from agcore_sync.mcp.errors import McpConnectionError

__all__ = ["Restarter", "LOSS_REPORT_TIMEOUT", "check_restart"]


def check_restart(restart: Optional[RestartPolicy], transport: object, server_name: str) -> None:
    """Check the ``restart=`` argument of a client over ``transport``.

    Raises:
        TypeError: ``restart`` is not a RestartPolicy (or None).
        ValueError: the transport cannot start the server again.
    """
    if restart is None:
        return
    if not isinstance(restart, RestartPolicy):
        raise TypeError(f"restart must be a RestartPolicy or None, not {type(restart).__name__}")
    if not getattr(transport, "restartable", False):
        raise ValueError(
            f"restart needs a transport that can start the server again (StdioTransport, HttpTransport); "
            f"{type(transport).__name__} cannot, so MCP client {server_name!r} cannot restart it"
        )

logger = _instrument.get_logger("agcore_sync.mcp")

#: Longest wait, after a request could not be written, for the transport to
#: report the loss (it first reaps the exit code and drains stderr, bounded by
#: the stdio transport's EXIT_CODE_TIMEOUT + STDERR_DRAIN_TIMEOUT); the
#: call's own timeout bounds it too.
LOSS_REPORT_TIMEOUT = 5.0


class Restarter:
    """Bring a lost server back as a :class:`RestartPolicy` allows.

    Args:
        server_name: the server's name, for logs and errors.
        policy: when and how often to restart.
        table: the client's pending table; the restarter records losses in
            it and ends them.
        cancel: the client's cancel Event, set by its ``close()``.
        reconnect: ``reconnect(epoch)`` starts the transport again and runs
            the handshake (its requests pass the gate with ``epoch``); it
            raises if that failed.
        run: queues a job on the client's worker thread.
        ready: True while the client is connected (a restart starts only then).
        pid: returns the server's process id, for the log (None if unknown).
    """

    def __init__(
        self,
        server_name: str,
        policy: RestartPolicy,
        table: PendingTable,
        cancel: threading.Event,
        *,
        reconnect: Callable[[int], None],
        run: Callable[[Callable[[], None]], None],
        ready: Callable[[], bool],
        pid: Callable[[], Optional[int]],
    ) -> None:
        self.server_name = server_name
        self.policy = policy
        self._table = table
        self._cancel = cancel
        self._reconnect = reconnect
        self._run = run
        self._ready = ready
        self._pid = pid
        self._lock = threading.Lock()
        # Calls waiting for a restart or a loss report wait on this.
        self._changed = threading.Condition(self._lock)
        # True from a loss until the restart job ends (back, given up or closed).
        self._restarting = False
        self._restart_count = 0
        self._restarts_since_success = 0

    @property
    def restarting(self) -> bool:
        """True while a restart job is under way (calls then wait at the gate)."""
        return self._restarting

    @property
    def restart_count(self) -> int:
        """How many restarts succeeded (handshake done)."""
        return self._restart_count

    def lose(self, error: McpConnectionError) -> None:
        """Record a loss (every pending call fails at once) and queue a restart; never blocks."""
        with self._lock:
            self._table.lose(error)
            restart = self._claim()
            self._changed.notify_all()  # calls whose request could not be written wait for this
        if restart:
            self._run(self._restart_loop)

    def resume(self) -> None:
        """Start the restart a loss during ``connect()`` could not start (the client was not ready yet)."""
        with self._lock:
            restart = self._table.lost is not None and self._claim()
        if restart:
            self._run(self._restart_loop)

    def wake(self) -> None:
        """Wake every call waiting at the gate (the client is closing: the cancel Event is set)."""
        with self._lock:
            self._changed.notify_all()

    def note_answer(self, generation: int) -> None:
        """Count restarts from zero again: the server answered a call sent in ``generation``."""
        if self._restarts_since_success:
            with self._lock:
                if generation == self._table.generation:
                    self._restarts_since_success = 0

    def _claim(self) -> bool:
        """Decide (under the lock) to start a restart job; True if this caller must queue it."""
        if self._restarting or self._cancel.is_set() or not self._ready():
            return False
        self._restarting = True
        return True

    def _restart_loop(self) -> None:
        """Bring the server back, as the policy allows; runs on the client's worker.

        It ends when an attempt succeeded (the gate opens), when the policy
        is used up (the loss becomes final) or when the client is closed;
        whichever way it ends, calls waiting at the gate are woken.
        """
        back = False
        try:
            back = self._attempts()
        finally:
            if not back:
                # A job that brought the server back opened the gate itself; a
                # new loss may have claimed the next restart since, so its flag
                # must not be touched here.
                with self._lock:
                    self._restarting = False
                    self._changed.notify_all()

    def _attempts(self) -> bool:
        """Try to restart until back (True), given up or closed (False)."""
        policy = self.policy
        failure = "none"
        while True:
            with self._lock:
                if self._cancel.is_set():
                    return False
                attempt = self._restarts_since_success
                if attempt >= policy.max_restarts:
                    self._give_up(attempt, failure)
                    return False
                self._restarts_since_success = attempt + 1
                epoch = self._table.losses
            delay = policy.backoff(attempt)
            logger.warning(
                "restarting MCP server %r in %.3g s (restart %d of at most %d in a row)",
                self.server_name, delay, attempt + 1, policy.max_restarts,
            )
            if self._cancel.wait(delay):
                return False
            try:
                self._reconnect(epoch)
            except Exception as exc:  # noqa: BLE001 - a failed attempt; the policy decides what next
                failure = f"{type(exc).__name__}: {exc}"
                if not self._cancel.is_set():
                    logger.warning("restart %d of MCP server %r failed: %s", attempt + 1, self.server_name, failure)
                continue
            with self._lock:
                if self._cancel.is_set():
                    return False
                back = self._table.recover(epoch)
                if back:
                    self._restart_count += 1
                    # Open the gate now, in the same critical section.
                    self._restarting = False
                    self._changed.notify_all()
            if back:
                logger.info("restarted MCP server %r (pid %s)", self.server_name, self._pid())
                return True
            failure = "the new server went away right after the handshake"

    def _give_up(self, attempt: int, failure: str) -> None:
        """Make the loss final (under the lock)."""
        lost = self._table.lost
        assert lost is not None
        final = McpConnectionError(
            f"MCP server {self.server_name!r} is gone and was not restarted again: {attempt} "
            f"restart(s) without a successful call in between (max_restarts={self.policy.max_restarts}; "
            f"last restart failure: {failure}); last loss: {lost.message}",
            exit_code=lost.exit_code,
            stderr_tail=lost.stderr_tail,
        )
        self._table.give_up(final)
        logger.warning("%s", final)

    def await_loss_report(self, losses: int, timeout: Optional[float]) -> bool:
        """Wait until a loss after the ``losses``-th is reported; False if not in time or closed."""
        wait = LOSS_REPORT_TIMEOUT if timeout is None else min(timeout, LOSS_REPORT_TIMEOUT)
        deadline = time.monotonic() + max(wait, 0.0)
        with self._changed:
            while self._table.losses == losses and not self._cancel.is_set():
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    return False
                self._changed.wait(remaining)
        return not self._cancel.is_set()

    def await_restart(self, timeout: Optional[float], tool_name: Optional[str]) -> Optional[float]:
        """Wait (at most ``timeout``) while the server is being restarted; return the time left.

        Raises:
            McpConnectionError: the restart did not finish in time, or the
                client was closed meanwhile.
        """
        deadline = None if timeout is None else time.monotonic() + max(timeout, 0.0)
        with self._changed:
            while self._table.lost is not None and self._restarting and not self._cancel.is_set():
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is not None and remaining <= 0:
                    lost = self._table.lost
                    raise McpConnectionError(
                        f"MCP server {self.server_name!r} is being restarted and was not back within {timeout} s "
                        f"({lost.message})",
                        tool_name=tool_name,
                        exit_code=lost.exit_code,
                        stderr_tail=lost.stderr_tail,
                    )
                self._changed.wait(remaining)
        if self._cancel.is_set():
            raise McpConnectionError(f"MCP client for {self.server_name!r} was closed", tool_name=tool_name)
        return None if deadline is None else max(deadline - time.monotonic(), 0.0)
