"""Background turns: run a session turn as a job, its events relayed through Redis.

A web process enqueues a :class:`TurnJob` (plain JSON) in its job system
(:mod:`agcore_sync.contrib.rq`, :mod:`agcore_sync.contrib.celery`) and
answers the browser with ``relay.sse(turn_id)``. A job worker hands the job
to :meth:`TurnRunner.run`, which:

1. marks the turn alive (:meth:`RedisEventRelay.keep_alive
   <agcore_sync.contrib.redis.RedisEventRelay.keep_alive>`) and starts its
   watcher thread, ``agcore-turnwatch-<n>``;
2. takes the session's lease (``store.lease(session_id, ttl=lease_ttl)``),
   loads the session (or makes a new one for a new turn);
3. runs ``submit_turn_stream`` (``user_input``) or ``resume_turn_stream``
   (``decisions``) and publishes every event to the relay, in order;
4. saves the session, closes it, releases the lease, and only then
   finishes the relay, so that a browser that sees the end can start the
   next turn at once.

Failures: the turn's own failures arrive in its stream (an ``Error``
event) and are published like any event. A failure around the turn (bad
decisions, a paused or missing session, a busy session, a conflicting
save, a cancel) is published as an ``Error`` event, then the relay is
finished; the job returns normally, since running it again cannot help.
Infrastructure failures (:class:`~agcore_sync.contrib.redis.RelayError`,
:class:`~agcore_sync.agent.errors.SessionStoreError`) and anything that is
not an :class:`~agcore_sync.errors.AgcoreError` (a bug, a job timeout) are
published the same way, as far as Redis allows, and re-raised for the job
system to record.

Liveness: the watcher renews the turn's liveness mark every third of its
lifetime, ``lease_ttl * LIVENESS_FACTOR``. A worker that dies (SIGKILL, a
lost machine) stops renewing; a reader blocked on the turn then ends it
with an ``Error`` event. The mark outlives the lease, so when that event
arrives the session's lease has expired too and a new turn can start. A
turn waiting in the queue has no mark and is never declared dead.

Cancel: :meth:`TurnRunner.cancel` (any process) sets the turn's cancel
mark. The watcher polls it every :data:`CANCEL_POLL_INTERVAL` seconds and
closes the turn's stream, which stops the turn as a closed stream does
(complete rounds are kept and saved); the relay then gets an ``Error``
event whose error is :class:`TurnCancelledError`. A job whose turn was
cancelled before it started does not run it.

The watcher thread belongs to one :meth:`~TurnRunner.run` call, which
stops and joins it before returning; it is a daemon so that a Redis call
stuck on a dead connection never keeps a worker process alive.
"""

from __future__ import annotations

import itertools
import logging
import threading
import time
from typing import Any, Callable, Dict, Mapping, Optional, Union

import attrs

from agcore_sync.agent.errors import SessionNotFoundError, SessionStoreError
from agcore_sync.agent.session import AgentSession
from agcore_sync.agent.store import SessionStore
from agcore_sync.agent.turn_stream import TurnStream
from agcore_sync.contrib.redis import RedisEventRelay, RelayError
from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import Approve, Decision, Deny, Hooks
from agcore_sync.llm.events import Error
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.tools.registry import ToolRegistry

__all__ = [
    "TurnJob",
    "TurnRunner",
    "TurnCancelledError",
    "CANCEL_POLL_INTERVAL",
    "LIVENESS_FACTOR",
    "WATCH_JOIN_TIMEOUT",
]

logger = logging.getLogger("agcore_sync.jobs")

#: How often a running turn's watcher looks for the cancel mark (seconds):
#: the longest a cancel waits to be seen. One ``EXISTS`` per poll.
CANCEL_POLL_INTERVAL = 0.2

#: The liveness mark lives ``lease_ttl * LIVENESS_FACTOR`` seconds after each
#: renewal (every third of that). Above 1 so that the mark of a dead worker
#: lapses after its lease: the reader's ``Error`` means the session is free.
LIVENESS_FACTOR = 1.5

#: How long the end of a job waits for its watcher thread, which is woken at
#: once and may only be inside one Redis call (bounded by the client's timeouts).
WATCH_JOIN_TIMEOUT = 5.0

_TURN_ID_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-")

#: The longest turn id (a uuid4 has 36 characters).
MAX_TURN_ID_LENGTH = 128

_numbers = itertools.count(1)


class TurnCancelledError(AgcoreError):
    """A background turn was cancelled from the web side (:meth:`TurnRunner.cancel`).

    The error of the ``Error`` event that ends a cancelled turn's relay
    stream (``{"class": "TurnCancelledError"}`` once read back).

    Args:
        message: what was cancelled.
        turn_id: the turn.

    .. versionadded:: 0.2
    """

    def __init__(self, message: str, *, turn_id: Optional[str] = None) -> None:
        super().__init__(message)
        #: The cancelled turn.
        self.turn_id = turn_id

    def __reduce__(self) -> Any:
        return _rebuild_cancelled, (str(self), self.turn_id)


def _rebuild_cancelled(message: str, turn_id: Optional[str]) -> TurnCancelledError:
    return TurnCancelledError(message, turn_id=turn_id)


# -- the job ---------------------------------------------------------------------


def _check_id(name: str) -> Callable[[Any, Any, Any], None]:
    def check(_instance: Any, _attribute: Any, value: Any) -> None:
        if not isinstance(value, str):
            raise TypeError(f"TurnJob.{name} must be a str, not {type(value).__name__}")
        if not value:
            raise ValueError(f"TurnJob.{name} must not be empty")
        if name == "turn_id" and (len(value) > MAX_TURN_ID_LENGTH or not set(value) <= _TURN_ID_CHARS):
            raise ValueError(f"TurnJob.turn_id must be 1 to {MAX_TURN_ID_LENGTH} letters, digits, '_' or '-' "
                             f"(a job id for RQ and Celery, a key part for Redis), not {value!r}")
    return check


def _check_user_input(_instance: Any, _attribute: Any, value: Any) -> None:
    if value is not None and not isinstance(value, str):
        raise TypeError(f"TurnJob.user_input must be a str or None, not {type(value).__name__}")


def _decision_dict(call_id: Any, decision: Any) -> Dict[str, Any]:
    if not isinstance(call_id, str) or not call_id:
        raise ValueError(f"TurnJob.decisions: a tool call id must be a non-empty str, not {call_id!r}")
    if isinstance(decision, Approve):
        return {"approve": True}
    if isinstance(decision, Deny):
        return {"deny": decision.reason}
    if isinstance(decision, Mapping):
        if dict(decision) == {"approve": True}:
            return {"approve": True}
        if set(decision) == {"deny"} and isinstance(decision["deny"], str):
            return {"deny": decision["deny"]}
    raise ValueError(f"TurnJob.decisions[{call_id!r}] must be {{'approve': True}}, {{'deny': 'reason'}}, "
                     f"Approve() or Deny(reason), not {decision!r}")


def _decisions(value: Any) -> Optional[Dict[str, Dict[str, Any]]]:
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise TypeError(f"TurnJob.decisions must be a dict of tool_call_id -> decision, not {type(value).__name__}")
    return {call_id: _decision_dict(call_id, decision) for call_id, decision in value.items()}


@attrs.frozen(kw_only=True)
class TurnJob:
    """What a web process enqueues to run a turn in a job worker (plain JSON).

    Exactly one of ``user_input`` (a new turn) and ``decisions`` (resume
    the session's paused turn) is set.

    Attributes:
        session_id: the session, in the runner's store; a new turn of an
            unknown id starts a new session.
        turn_id: the relay stream's name, and the job's id: unique per turn
            and per resume (1 to 128 letters, digits, ``_``, ``-``; a uuid4).
        user_input: the user message of a new turn.
        decisions: for a resume, ``{tool_call_id: {"approve": True} |
            {"deny": "reason"}}``; ``Approve()`` and ``Deny(reason)`` are
            accepted and stored as those dicts.

    Raises:
        TypeError, ValueError: a field of the wrong type or form, or not
            exactly one of ``user_input`` and ``decisions``.

    .. versionadded:: 0.2
    """

    session_id: str = attrs.field(validator=_check_id("session_id"))
    turn_id: str = attrs.field(validator=_check_id("turn_id"))
    user_input: Optional[str] = attrs.field(default=None, validator=_check_user_input)
    decisions: Optional[Dict[str, Dict[str, Any]]] = attrs.field(default=None, converter=_decisions)

    def __attrs_post_init__(self) -> None:
        if (self.user_input is None) == (self.decisions is None):
            raise ValueError("a TurnJob has exactly one of user_input (a new turn) and decisions (a resume); "
                             f"turn {self.turn_id!r} has {'both' if self.user_input is not None else 'neither'}")

    @property
    def resumes(self) -> bool:
        """True for a resume (``decisions``), False for a new turn."""
        return self.decisions is not None

    def session_decisions(self) -> Dict[str, Decision]:
        """Return ``decisions`` as ``Approve()`` / ``Deny(reason)`` values, for ``resume_turn_stream``."""
        return {call_id: Approve() if "approve" in decision else Deny(decision["deny"])
                for call_id, decision in (self.decisions or {}).items()}

    def to_dict(self) -> Dict[str, Any]:
        """Return the job as a JSON-ready dict (what the job system carries)."""
        return {"session_id": self.session_id, "turn_id": self.turn_id, "user_input": self.user_input,
                "decisions": None if self.decisions is None else {k: dict(v) for k, v in self.decisions.items()}}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TurnJob:
        """Rebuild a job from :meth:`to_dict`.

        Raises:
            TypeError: ``data`` is not a mapping.
            ValueError: a key is missing or unknown, or a field is invalid.
        """
        if not isinstance(data, Mapping):
            raise TypeError(f"a TurnJob is a dict, not {type(data).__name__}")
        unknown = sorted(set(data) - {"session_id", "turn_id", "user_input", "decisions"})
        if unknown:
            raise ValueError(f"a TurnJob has no field(s) {unknown}")
        missing = [name for name in ("session_id", "turn_id") if name not in data]
        if missing:
            raise ValueError(f"a TurnJob needs {missing}")
        return cls(session_id=data["session_id"], turn_id=data["turn_id"], user_input=data.get("user_input"),
                   decisions=data.get("decisions"))


# -- the watcher -----------------------------------------------------------------


class _TurnWatch:
    """One turn's liveness renewals and cancel polling, on a thread it owns.

    Entering marks the turn alive (raising if Redis is unreachable) and
    starts ``agcore-turnwatch-<n>``; leaving stops and joins it. The thread
    catches every failure (logged; the next poll tries again).
    """

    def __init__(self, relay: RedisEventRelay, turn_id: str, alive_ttl: float) -> None:
        self._relay = relay
        self._turn_id = turn_id
        self._alive_ttl = alive_ttl
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._stream: Optional[TurnStream] = None
        self._thread: Optional[threading.Thread] = None
        #: True once the cancel mark closed the turn's stream before it ended.
        self.cancelled = False
        self._seen = False

    def __enter__(self) -> _TurnWatch:
        self._relay.keep_alive(self._turn_id, self._alive_ttl)
        self._thread = threading.Thread(target=self._run, name=f"agcore-turnwatch-{next(_numbers)}", daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(WATCH_JOIN_TIMEOUT)
            if self._thread.is_alive():
                logger.warning("%s of turn %r is still inside a Redis call; it ends when that call returns",
                               self._thread.name, self._turn_id)

    def watch(self, stream: TurnStream) -> None:
        """Close ``stream`` when the cancel mark appears (at once if it already has)."""
        with self._lock:
            self._stream = stream
            seen = self._seen
        if seen:
            self._close(stream)

    def _close(self, stream: TurnStream) -> None:
        if not stream.closed:
            self.cancelled = True
            stream.close()

    def _run(self) -> None:
        renew_every = self._alive_ttl / 3
        next_renewal = time.monotonic() + renew_every
        while not self._stop.wait(CANCEL_POLL_INTERVAL):
            try:
                if not self._seen and self._relay.cancel_requested(self._turn_id):
                    with self._lock:
                        self._seen = True
                        stream = self._stream
                    if stream is not None:
                        self._close(stream)
                if time.monotonic() >= next_renewal:
                    self._relay.keep_alive(self._turn_id, self._alive_ttl)
                    next_renewal = time.monotonic() + renew_every
            except Exception:  # noqa: BLE001 - logged; the next poll tries again
                logger.warning("watcher of turn %r: Redis call failed; trying again", self._turn_id, exc_info=True)


# -- the runner ------------------------------------------------------------------


def _delivered(exc: BaseException) -> bool:
    """Say whether ``exc`` is the turn's outcome (published, job succeeds) rather than a job failure."""
    return isinstance(exc, AgcoreError) and not isinstance(exc, (RelayError, SessionStoreError))


def _error_event(exc: BaseException, turn_id: str) -> Error:
    if isinstance(exc, AgcoreError):
        return Error(f"{type(exc).__name__}: {exc}", exc)
    # Foreign exceptions may carry anything (URLs, data); the worker's log has the details.
    return Error(f"the worker failed running turn {turn_id!r} ({type(exc).__name__}); see the worker's log")


class TurnRunner:
    """Run :class:`TurnJob` s in a job worker; the web side uses it to cancel.

    Build one per process (a module-level object of the app the worker
    imports). The factories are called for every job, in the worker, so
    nothing is built at import time or shared between forked processes.
    When a job ends the runner closes the session it ran and that
    session's registry (a registry's thread pool lives for one job), but
    not the provider, which may be shared (providers are thread-safe). One
    runner may run jobs on several threads at once (a threads pool).

    Args:
        store: where sessions live (a store every worker and web process
            reaches: ``RedisSessionStore``, or ``SqliteSessionStore`` on one
            machine).
        relay: where events go.
        new_session: returns a fresh session (provider, registry, config,
            system prompt, hooks) for a new turn of an unknown session id.
        provider: returns the provider of a loaded session.
        registry: returns a new registry for a loaded session (None: no tools).
        lease_ttl: the session lease's ttl in seconds; a dead worker's turn
            ends (and its session is free) about ``lease_ttl *
            LIVENESS_FACTOR`` seconds after it died.
        hooks: returns the hooks of a loaded session (None: no hooks).

    Raises:
        TypeError: an argument of the wrong type.
        ValueError: ``lease_ttl`` is not a positive number.

    .. versionadded:: 0.2
    """

    def __init__(self, *, store: SessionStore, relay: RedisEventRelay, new_session: Callable[[], AgentSession],
                 provider: Callable[[], LlmProvider], registry: Optional[Callable[[], ToolRegistry]] = None,
                 lease_ttl: float = 60.0, hooks: Optional[Callable[[], Hooks]] = None) -> None:
        if not isinstance(store, SessionStore):
            raise TypeError(f"TurnRunner: store must be a SessionStore, not {type(store).__name__}")
        if not isinstance(relay, RedisEventRelay):
            raise TypeError(f"TurnRunner: relay must be a RedisEventRelay, not {type(relay).__name__}")
        for name, factory, optional in (("new_session", new_session, False), ("provider", provider, False),
                                        ("registry", registry, True), ("hooks", hooks, True)):
            if not callable(factory) and not (optional and factory is None):
                raise TypeError(f"TurnRunner: {name} must be a function returning a new object, "
                                f"not {type(factory).__name__}")
        if isinstance(lease_ttl, bool) or not isinstance(lease_ttl, (int, float)) or not 0 < lease_ttl < float("inf"):
            raise ValueError(f"TurnRunner: lease_ttl must be a positive number of seconds, not {lease_ttl!r}")
        #: The session store.
        self.store = store
        #: The event relay.
        self.relay = relay
        #: The session lease's ttl (seconds).
        self.lease_ttl = float(lease_ttl)
        self._new_session = new_session
        self._provider = provider
        self._registry = registry
        self._hooks = hooks

    def __repr__(self) -> str:
        return f"TurnRunner(store={self.store!r}, relay={self.relay!r}, lease_ttl={self.lease_ttl:g})"

    def cancel(self, turn_id: str) -> None:
        """Ask the worker running ``turn_id`` to stop it (web side; any process, idempotent).

        The worker sees it within :data:`CANCEL_POLL_INTERVAL` seconds and
        closes the turn's stream; the relay ends with an ``Error`` event
        (:class:`TurnCancelledError`). A job not started yet will not run
        the turn; cancelling a finished turn does nothing.

        Raises:
            RelayError: Redis failed.
        """
        self.relay.cancel(turn_id)

    def run(self, job: Union[TurnJob, Mapping[str, Any]]) -> None:
        """Run one job to its end: every event published, the session saved, the relay finished.

        Args:
            job: a :class:`TurnJob`, or its :meth:`~TurnJob.to_dict` (a
                job that does not parse but names a ``turn_id`` still ends
                that turn's relay with an ``Error`` event).

        Raises:
            RelayError: Redis failed (publishing, marking or finishing).
            SessionStoreError: the store failed or holds a corrupt session.
            ValueError, TypeError: ``job`` is not a valid job.
            Exception: whatever else failed (a bug in a factory, a job
                timeout); it was published as an ``Error`` event first.
        """
        turn_job = self._parse(job)
        turn_id = turn_job.turn_id
        try:
            with _TurnWatch(self.relay, turn_id, self.lease_ttl * LIVENESS_FACTOR) as watch:
                self._run_turn(turn_job, watch)
        except BaseException as exc:
            self._end_with(turn_id, exc)
            if _delivered(exc):
                logger.info("turn %r of session %r ended with %s", turn_id, turn_job.session_id, type(exc).__name__)
                return
            raise
        self.relay.finish(turn_id)

    def _parse(self, job: Union[TurnJob, Mapping[str, Any]]) -> TurnJob:
        if isinstance(job, TurnJob):
            return job
        try:
            return TurnJob.from_dict(job)
        except (TypeError, ValueError) as exc:
            turn_id = job.get("turn_id") if isinstance(job, Mapping) else None
            if isinstance(turn_id, str) and turn_id and set(turn_id) <= _TURN_ID_CHARS:
                self._end_with(turn_id, exc, Error(f"invalid turn job: {exc}", exc))
            raise

    def _run_turn(self, job: TurnJob, watch: _TurnWatch) -> None:
        """Lease, load, stream, publish, save, close; raise TurnCancelledError after a cancel."""
        if self.relay.cancel_requested(job.turn_id):
            raise TurnCancelledError(f"turn {job.turn_id!r} was cancelled before it started", turn_id=job.turn_id)
        with self.store.lease(job.session_id, ttl=self.lease_ttl):
            session = self._open(job)
            try:
                stream = (session.resume_turn_stream(job.session_decisions()) if job.resumes
                          else session.submit_turn_stream(job.user_input))
                with stream:
                    watch.watch(stream)
                    for event in stream:
                        self.relay.publish(job.turn_id, event)
                session.save(self.store, job.session_id)
            finally:
                session.close()
                session.registry.close()
        if watch.cancelled:
            raise TurnCancelledError(f"turn {job.turn_id!r} was cancelled; its complete rounds were saved",
                                     turn_id=job.turn_id)

    def _open(self, job: TurnJob) -> AgentSession:
        """Load the job's session, or make a new one for a new turn of an unknown id."""
        try:
            registry = self._registry() if self._registry is not None else None
            hooks = self._hooks() if self._hooks is not None else None
            try:
                return AgentSession.load(self.store, job.session_id, provider=self._provider(), registry=registry,
                                         hooks=hooks)
            except BaseException:
                if registry is not None:
                    registry.close()
                raise
        except SessionNotFoundError:
            if job.resumes:
                raise
        session = self._new_session()
        if not isinstance(session, AgentSession):
            raise TypeError(f"TurnRunner: new_session() must return an AgentSession, not {type(session).__name__}")
        return session

    def _end_with(self, turn_id: str, exc: BaseException, event: Optional[Error] = None) -> None:
        """Publish ``exc`` as the turn's last event and finish its relay, as far as Redis allows."""
        if not _delivered(exc):
            logger.warning("turn %r failed in the worker", turn_id, exc_info=exc)
        try:
            try:
                self.relay.publish(turn_id, event or _error_event(exc, turn_id))
            except RelayError:
                pass  # already finished (a reader declared the worker lost), or Redis is down: finish says which
            self.relay.finish(turn_id)
        except RelayError:
            logger.warning("turn %r: cannot end its relay stream; readers end it when its liveness mark lapses",
                           turn_id, exc_info=True)
