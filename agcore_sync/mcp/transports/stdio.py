"""The stdio transport: an MCP server as a child process speaking JSON lines.

:class:`StdioTransport` starts the server in its own process group
(``start_new_session=True``) with an allow-listed environment, reads one
JSON-RPC message per line from its stdout on a reader thread, drains its
stderr into logging and a ring buffer on a second thread, and stops it in the
order the MCP specification gives: close stdin, wait, SIGTERM the group, wait,
SIGKILL the group, reap. Every wait is bounded by a named constant, so
``close()`` returns even for a server that ignores stdin EOF and SIGTERM, and
no process of the group (a server behind ``npx`` or a shell wrapper included)
survives it. The steps on the process group themselves (spawn, stop, reap)
are in ``mcp/transports/_process.py``; this module owns the pipes and threads.

The transport is restartable: a second :meth:`StdioTransport.start` (the
client's restart after a crash) stops what is left of the previous process
in the same order, joins its threads, and starts a fresh process with fresh
threads. Everything that belongs to one process (pipes, write queue, threads,
whether its loss was reported) lives in one ``_Run``, so a late report or
write of an old process never touches the new one.

.. versionadded:: 0.1.0
"""

from __future__ import annotations

import collections
import itertools
import os
import subprocess
import threading
from typing import IO, Any, Deque, Dict, List, Mapping, Optional, Sequence

from agcore_sync import _check, _instrument
from agcore_sync.mcp.errors import McpConnectionError
from agcore_sync.mcp.shared import jsonrpc
from agcore_sync.mcp.transports import _process
from agcore_sync.mcp.transports._process import FORCE_KILL_TIMEOUT, PROCESS_TERMINATION_TIMEOUT, SAFE_ENV_VARS
from agcore_sync.mcp.transports.base import DEFAULT_MAX_MESSAGE_SIZE, ClosedHandler, MessageHandler, Transport

__all__ = [
    "StdioTransport",
    "SAFE_ENV_VARS",
    "PROCESS_TERMINATION_TIMEOUT",
    "FORCE_KILL_TIMEOUT",
]

logger = _instrument.get_logger("agcore_sync.mcp")

# SAFE_ENV_VARS, PROCESS_TERMINATION_TIMEOUT and FORCE_KILL_TIMEOUT are
# defined (and documented) in _process, which spawns and stops the server.

#: Time close() waits for a thread stuck writing to stdin before it stops
#: waiting and kills the server (which unblocks that writer with EPIPE).
STDIN_CLOSE_TIMEOUT = 0.5
#: How long the reader waits, after stdout ends, for the process to exit so
#: the error can carry its exit code.
EXIT_CODE_TIMEOUT = 2.0
#: How long the reader waits, after stdout ends, for the stderr drain to read
#: the last lines, so the error carries them.
STDERR_DRAIN_TIMEOUT = 1.0
#: Bound on joining the reader and stderr threads in close().
THREAD_JOIN_TIMEOUT = 2.0
#: How many stderr lines ``stderr_tail`` keeps.
STDERR_TAIL_LINES = 20
#: Longest stderr line kept in the tail (a longer one is cut with a marker).
STDERR_LINE_MAX_CHARS = 2000
#: Chunk size the stderr drain reads with, so a huge line never sits whole in memory.
_STDERR_READ_CHUNK = 65536

_INHERIT_MODES = ("safe", "all", "none")
_thread_numbers = itertools.count(1)


class _LineTooLong(Exception):
    """A stdout line is longer than the transport's ``max_message_size``."""


class _Run:
    """One server process and what belongs to it; each ``start()`` makes a new one."""

    __slots__ = ("proc", "outbox", "write_lock", "broken", "loss_reported", "threads", "stderr_thread",
                 "stop_lock", "stopped")

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        # Encoded lines waiting for the holder of write_lock (see send()).
        self.outbox: Deque[bytes] = collections.deque()
        self.write_lock = threading.Lock()
        # Why writing failed, once it has: later sends fail at once.
        self.broken: Optional[str] = None
        # on_closed is called at most once per run, by the reader or a failed
        # write; also set when the run is being stopped (its end is expected).
        self.loss_reported = False
        self.threads: List[threading.Thread] = []
        self.stderr_thread: Optional[threading.Thread] = None
        # Held while stopping, so close() and a restart stopping the same
        # process at once both return only when it is stopped.
        self.stop_lock = threading.Lock()
        self.stopped = False


class StdioTransport(Transport):
    """Run an MCP server as a subprocess and talk JSON-RPC over its stdin/stdout.

    Args:
        command: the program to run (looked up on the child's ``PATH``).
        args: its arguments.
        env: variables to set for the server, on top of what ``inherit_env``
            passes.
        cwd: the server's working directory (None: ours).
        inherit_env: which of our environment variables the server sees:
            ``"safe"`` (the default) only :data:`SAFE_ENV_VARS`, so secrets
            such as ``OPENAI_API_KEY`` do not leak into servers; ``"all"``
            everything; ``"none"`` nothing but ``env``.
        max_message_size: the longest stdout line (one message) in bytes,
            :data:`~agcore_sync.mcp.transports.base.DEFAULT_MAX_MESSAGE_SIZE`
            (32 MiB) by default. A longer line is never held whole: the
            transport stops reading and reports the connection lost with an
            :class:`~agcore_sync.tools.error.McpConnectionError` saying so
            (every pending call fails with it).

    The transport owns two threads per server process,
    ``agcore-mcp-stdout-<n>`` (one message per stdout line; a line that is
    not JSON-RPC is logged on ``agcore_sync.mcp`` and skipped)
    and ``agcore-mcp-stderr-<n>`` (each stderr line logged at DEBUG and kept
    in :attr:`stderr_tail`). Both are daemons so a forgotten transport never
    blocks interpreter exit; :meth:`close`, or the next :meth:`start`, still
    stops and joins them.

    Raises:
        ValueError: ``inherit_env`` is not one of the three modes, or
            ``max_message_size`` is not positive.

    .. versionchanged:: 0.2
       ``max_message_size``.
    """

    def __init__(
        self,
        command: str,
        args: Sequence[str] = (),
        env: Optional[Mapping[str, str]] = None,
        cwd: Optional[str] = None,
        inherit_env: str = "safe",
        *,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        if not isinstance(command, str) or not command:
            raise TypeError(f"StdioTransport: command must be a non-empty str (the program; its arguments go in "
                            f"args=[...]), got {command!r}")
        _check.str_sequence("StdioTransport", "args", args)
        _check.str_mapping("StdioTransport", "env", env)
        if cwd is not None and not isinstance(cwd, (str, os.PathLike)):
            raise TypeError(f"StdioTransport: cwd must be a str or a path, got {type(cwd).__name__}")
        if inherit_env not in _INHERIT_MODES:
            raise ValueError(f"StdioTransport: inherit_env must be one of {_INHERIT_MODES}, not {inherit_env!r}")
        _check.positive_int("StdioTransport", "max_message_size", max_message_size)
        self.max_message_size = max_message_size
        self.command = command
        self.args = tuple(args)
        self.cwd = cwd
        self.inherit_env = inherit_env
        self._env = _process.child_environment(inherit_env, env)
        # The current server process (None before start()); replaced by a restart.
        self._run: Optional[_Run] = None
        self._state_lock = threading.Lock()
        # Set by close(): from then on the end of stdout is expected, not a loss.
        self._closing = threading.Event()
        self._closed = False
        self._stderr_lines: Deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        self._stderr_lock = threading.Lock()
        self._on_message: Optional[MessageHandler] = None
        self._on_closed: Optional[ClosedHandler] = None

    #: A second :meth:`start` starts a fresh server process (see the module docstring).
    restartable = True

    def __repr__(self) -> str:
        return f"StdioTransport({self.command!r}, args={self.args!r}, pid={self.pid})"

    @property
    def pid(self) -> Optional[int]:
        """The current server's process id (also its process group id), or None before start."""
        run = self._run
        return run.proc.pid if run is not None else None

    @property
    def returncode(self) -> Optional[int]:
        """The current server's exit status as ``Popen.returncode`` gives it (None while it runs)."""
        run = self._run
        return run.proc.poll() if run is not None else None

    @property
    def stderr_tail(self) -> str:
        """The last lines (at most 20) the server wrote to stderr, joined by newlines."""
        with self._stderr_lock:
            return "\n".join(self._stderr_lines)

    def start(self, on_message: MessageHandler, on_closed: ClosedHandler) -> None:
        """Start the server and its reader and stderr threads.

        Called again (a restart), it first stops what is left of the previous
        server process as :meth:`close` would (its end is then not reported
        as a loss) and joins its threads, then starts a fresh process; the
        stderr tail starts empty.

        Raises:
            McpConnectionError: the program could not be started (not found,
                not executable, bad ``cwd``), or the transport was closed
                (also while the previous process was being stopped).
        """
        with self._state_lock:
            if self._closed:
                raise McpConnectionError(f"the stdio transport for {self.command!r} is closed")
            old = self._run
            if old is not None:
                old.loss_reported = True  # from here its end is a stop, not a loss
        if old is not None:
            self._stop_run(old)
        with self._state_lock:
            if self._closed:
                raise McpConnectionError(f"the stdio transport for {self.command!r} was closed while restarting")
            if self._run is not old:
                raise McpConnectionError(f"the stdio transport for {self.command!r} was started twice at once")
            try:
                proc = _process.spawn(self.command, self.args, self._env, self.cwd)
            except (OSError, ValueError, subprocess.SubprocessError) as exc:
                raise McpConnectionError(f"could not start MCP server {self.command!r}: {exc}") from exc
            run = _Run(proc)
            self._run = run
            self._on_message = on_message
            self._on_closed = on_closed
            with self._stderr_lock:
                self._stderr_lines.clear()
            number = next(_thread_numbers)
            run.stderr_thread = threading.Thread(
                target=self._drain_stderr, args=(run,), name=f"agcore-mcp-stderr-{number}", daemon=True
            )
            reader = threading.Thread(
                target=self._read_stdout, args=(run,), name=f"agcore-mcp-stdout-{number}", daemon=True
            )
            run.threads = [run.stderr_thread, reader]
            try:
                for thread in run.threads:
                    thread.start()
                return
            except RuntimeError as exc:  # the interpreter could not start a thread
                run.threads = [thread for thread in run.threads if thread.ident is not None]
                failure = exc
        self.close()  # outside the state lock, which close() takes
        raise McpConnectionError(f"could not start the reader of MCP server {self.command!r}: {failure}") from failure

    def send(self, message: Dict[str, Any], *, timeout: Optional[float] = None) -> None:
        """Write one message as a line on the server's stdin.

        Senders never wait for one another. Each message joins a queue, and
        the thread that holds the write lock writes everything queued in one
        system call; a sender that finds the lock taken leaves its message to
        that thread, which looks at the queue again after letting go of the
        lock. So 32 threads sending at once cost a few writes, not 32 lock
        handoffs, and messages go out in the order they were queued.

        Args:
            message: the JSON-RPC message.
            timeout: unused, as no sender waits for another's write; kept
                for the :class:`Transport` interface. The write itself blocks
                while the pipe is full, which is the server's backpressure.

        Raises:
            McpConnectionError: the transport is not running or closed, or
                the write of this message failed (the server has gone). A
                failed write loses the channel for good: later sends raise at
                once, and ``on_closed`` is called, so calls whose messages
                were in the same write fail too.
        """
        data = jsonrpc.encode(message)
        run = self._run
        if run is None or self._closing.is_set():
            raise McpConnectionError(f"the stdio transport for {self.command!r} is not running")
        broken = run.broken
        if broken is not None:
            raise self._lost(run, broken)
        stdin = run.proc.stdin
        assert stdin is not None
        outbox = run.outbox
        outbox.append(data)
        lock = run.write_lock
        while outbox:
            if not lock.acquire(False):
                return  # the holder writes our message: it checks the queue after releasing
            failure: Optional[Exception] = None
            try:
                # Only the lock holder takes from the queue, so it holds at
                # least this many messages.
                batch = [outbox.popleft() for _ in range(len(outbox))]
                stdin.write(batch[0] if len(batch) == 1 else b"".join(batch))
                stdin.flush()
            except (OSError, ValueError) as exc:
                # BrokenPipeError once the server is gone; ValueError once
                # close() has closed the pipe under us.
                failure = exc
            finally:
                lock.release()
            if failure is not None:
                self._write_failed(run, failure, own=any(item is data for item in batch))

    def _write_failed(self, run: _Run, exc: Exception, *, own: bool) -> None:
        reason = f"could not write to MCP server {self.command!r}: {exc}"
        with self._state_lock:
            first = run.broken is None
            if first:
                run.broken = reason
        if first:
            # Messages of other threads were lost with this write; their calls
            # must fail now, not at their timeout.
            self._report_loss(run, reason)
        if own:
            raise self._lost(run, reason) from exc

    def close(self) -> None:
        """Stop the server and join both threads; idempotent, bounded, callable from any thread.

        The order is the MCP specification's: close stdin, wait
        :data:`PROCESS_TERMINATION_TIMEOUT` for the server to exit, SIGTERM
        its process group if anything of it is left (a grandchild behind
        ``npx`` or a shell wrapper), wait :data:`FORCE_KILL_TIMEOUT`, SIGKILL
        the group, reap. Group members that became our children (when this
        process is a child subreaper, as a container init is) are reaped too.
        """
        with self._state_lock:
            if self._closed:
                return
            self._closed = True
            self._closing.set()
            run = self._run
        if run is not None:
            # A restart may be stopping this same (old) run: then this waits
            # until it is stopped, and the restart finds the transport closed.
            self._stop_run(run)

    def _stop_run(self, run: _Run) -> None:
        """Stop one server process in the specification's order and join its threads; once per run."""
        with run.stop_lock:
            if run.stopped:
                return
            try:
                self._stop_process(run)
            finally:
                run.stopped = True

    def _stop_process(self, run: _Run) -> None:
        proc = run.proc
        _process.stop(proc, lambda: self._close_stdin(run), self.command)
        for thread in run.threads:
            if thread is not threading.current_thread():
                thread.join(THREAD_JOIN_TIMEOUT)
                if thread.is_alive():
                    # Only a process that left the group can still hold our pipes.
                    logger.warning("%s did not stop: a process outside the group holds the pipe", thread.name)
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                try:
                    pipe.close()
                except OSError:
                    pass

    @staticmethod
    def _close_stdin(run: _Run) -> None:
        stdin = run.proc.stdin
        if stdin is None:
            return
        if not run.write_lock.acquire(timeout=STDIN_CLOSE_TIMEOUT):
            # A writer is stuck on a full pipe; killing the group unblocks it.
            return
        try:
            stdin.close()
        except OSError:
            pass
        finally:
            run.write_lock.release()

    def _read_stdout(self, run: _Run) -> None:
        stdout = run.proc.stdout
        assert stdout is not None
        reason = "closed its stdout"
        alive = False
        try:
            self._read_lines(stdout)
        except _LineTooLong:
            # The server is alive and still writing: no exit code to wait for.
            alive = True
            reason = (f"wrote a message longer than {self.max_message_size} bytes (the transport's "
                      "max_message_size); the connection is closed")
        except Exception as exc:  # noqa: BLE001 - delivered as the connection loss
            reason = f"could not be read ({type(exc).__name__}: {exc})"
        self._report_loss(run, f"MCP server {self.command!r} {reason}", wait_exit=not alive)

    def _report_loss(self, run: _Run, reason: str, *, wait_exit: bool = True) -> None:
        """Call ``on_closed`` once per run, unless it is being stopped; from the reader or a failed write."""
        if self._closing.is_set() or run.loss_reported:
            return
        exit_code: Optional[int] = None
        if wait_exit:
            try:
                exit_code = run.proc.wait(EXIT_CODE_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass
        if run.stderr_thread is not None and run.stderr_thread is not threading.current_thread():
            run.stderr_thread.join(STDERR_DRAIN_TIMEOUT)
        with self._state_lock:
            if self._closing.is_set() or run.loss_reported or run is not self._run:
                return
            run.loss_reported = True
        if exit_code is not None:
            reason = f"MCP server {self.command!r} exited with code {exit_code}"
        error = self._lost(run, reason, exit_code=exit_code)
        on_closed = self._on_closed
        if on_closed is not None:
            try:
                on_closed(error)
            except Exception:  # noqa: BLE001 - nothing may escape a thread top
                logger.exception("on_closed handler of %r failed", self)

    def _read_lines(self, stdout: IO[bytes]) -> None:
        on_message = self._on_message
        assert on_message is not None
        readline = stdout.readline
        parse_line = jsonrpc.parse_line
        # One byte more than the limit: a line that fills it without its
        # newline is too long, and at most that much of it is ever read.
        size = self.max_message_size + 1
        while True:
            line = readline(size)
            if not line:
                return
            if len(line) == size and not line.endswith(b"\n"):
                raise _LineTooLong
            parsed = parse_line(line)
            if type(parsed) is dict:  # the usual case, first
                try:
                    on_message(parsed)
                except Exception:  # noqa: BLE001 - one bad message must not stop the reader
                    logger.exception("handling a message from MCP server %r failed", self.command)
                continue
            if isinstance(parsed, jsonrpc.ParseFailure):
                if line.strip():
                    logger.warning(
                        "MCP server %r wrote a line that is not JSON-RPC (%s), skipped: %s",
                        self.command,
                        parsed.reason,
                        parsed.preview,
                    )
                continue
            for message in parsed:  # a batch
                try:
                    on_message(message)
                except Exception:  # noqa: BLE001 - one bad message must not stop the reader
                    logger.exception("handling a message from MCP server %r failed", self.command)

    def _drain_stderr(self, run: _Run) -> None:
        stderr = run.proc.stderr
        assert stderr is not None
        read = stderr.readline
        partial = b""
        cut = False
        try:
            while True:
                chunk = read(_STDERR_READ_CHUNK)
                if not chunk:
                    break
                if len(partial) < STDERR_LINE_MAX_CHARS * 4:
                    partial += chunk
                else:
                    cut = True
                if chunk.endswith(b"\n"):
                    self._keep_stderr_line(partial, cut)
                    partial, cut = b"", False
            if partial:
                self._keep_stderr_line(partial, cut)
        except Exception:  # noqa: BLE001 - a closed pipe ends the drain
            logger.debug("stderr of MCP server %r could not be read", self.command, exc_info=True)

    def _keep_stderr_line(self, raw: bytes, cut: bool) -> None:
        line = raw.decode("utf-8", errors="replace").rstrip("\r\n")
        if cut or len(line) > STDERR_LINE_MAX_CHARS:
            line = line[:STDERR_LINE_MAX_CHARS] + " [line cut]"
        logger.debug("MCP server %r stderr: %s", self.command, line)
        with self._stderr_lock:
            self._stderr_lines.append(line)

    def _lost(self, run: _Run, message: str, *, exit_code: Optional[int] = None) -> McpConnectionError:
        if exit_code is None:
            exit_code = run.proc.poll()
        return McpConnectionError(message, exit_code=exit_code, stderr_tail=self.stderr_tail)

