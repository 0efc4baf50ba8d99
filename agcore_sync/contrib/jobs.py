"""Background turns: run a session turn as a job, its events relayed through Redis.

A web process enqueues a :class:`TurnJob` (plain JSON) in its job system
(:mod:`agcore_sync.contrib.rq`, :mod:`agcore_sync.contrib.celery`) and
answers the browser with ``relay.sse(turn_id)``. A job worker hands the job
to :meth:`TurnRunner.run`, which:

0. claims the turn id (:meth:`RedisEventRelay.claim
   <agcore_sync.contrib.redis.RedisEventRelay.claim>`) before it publishes
   anything: a job delivered a second time (RQ and Celery redeliver) finds
   the claim taken, running or finished, and returns at once, logged; it
   publishes nothing and does not finish the stream, so the first
   delivery's turn goes on undisturbed;
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

from typing import Any, Callable, Mapping, Optional, Union

from agcore_sync import _instrument
from agcore_sync.agent._store_support import check_lease_ttl
from agcore_sync.agent.errors import SessionNotFoundError, SessionStoreError
from agcore_sync.agent.session import AgentSession
from agcore_sync.agent.store import SessionStore
from agcore_sync.contrib._turn_job import TurnJob, is_turn_id
from agcore_sync.contrib._turn_watch import CANCEL_POLL_INTERVAL, WATCH_JOIN_TIMEOUT, TurnWatch
from agcore_sync.contrib.redis import RedisEventRelay, RelayError
from agcore_sync.errors import AgcoreError
from agcore_sync.hooks import Hooks
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

logger = _instrument.get_logger("agcore_sync.jobs")

#: The liveness mark lives ``lease_ttl * LIVENESS_FACTOR`` seconds after each
#: renewal (every third of that). Above 1 so that the mark of a dead worker
#: lapses after its lease: the reader's ``Error`` means the session is free.
LIVENESS_FACTOR = 1.5



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
        ValueError: ``lease_ttl`` is not a number of seconds from 0.5 to 86,400
            (the bounds of :meth:`SessionStore.lease <agcore_sync.agent.store.SessionStore.lease>`).

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
        lease_ttl = check_lease_ttl(lease_ttl, "TurnRunner: lease_ttl")
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

        A job whose turn id was claimed before (the same job delivered
        again, while its turn runs or after it ended) does nothing: it
        returns without publishing, logged as a warning.

        Raises:
            RelayError: Redis failed (claiming, publishing, marking or finishing).
            SessionStoreError: the store failed or holds a corrupt session.
            ValueError, TypeError: ``job`` is not a valid job.
            Exception: whatever else failed (a bug in a factory, a job
                timeout); it was published as an ``Error`` event first.
        """
        turn_job = self._parse(job)
        turn_id = turn_job.turn_id
        if not self._claimed(turn_id, turn_job.session_id):
            return
        try:
            with TurnWatch(self.relay, turn_id, self.lease_ttl * LIVENESS_FACTOR) as watch:
                self._run_turn(turn_job, watch)
        except BaseException as exc:
            self._end_with(turn_id, exc)
            if _delivered(exc):
                logger.info("turn %r of session %r ended with %s", turn_id, turn_job.session_id, type(exc).__name__)
                return
            raise
        self.relay.finish(turn_id)

    def _claimed(self, turn_id: str, session_id: Optional[str]) -> bool:
        """Claim the turn; False (logged) if a delivery of it came first, or its stream ended already."""
        if self.relay.claim(turn_id) and not self.relay.finished(turn_id):
            return True
        logger.warning("turn %r of session %r was delivered again (a retried or redelivered job); it runs once, "
                       "so this delivery does nothing", turn_id, session_id)
        return False

    def _parse(self, job: Union[TurnJob, Mapping[str, Any]]) -> TurnJob:
        if isinstance(job, TurnJob):
            return job
        try:
            return TurnJob.from_dict(job)
        except (TypeError, ValueError) as exc:
            turn_id = job.get("turn_id") if isinstance(job, Mapping) else None
            if is_turn_id(turn_id) and self._claimed(turn_id, None):
                self._end_with(turn_id, exc, Error(f"invalid turn job: {exc}", exc))
            raise

    def _run_turn(self, job: TurnJob, watch: TurnWatch) -> None:
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
