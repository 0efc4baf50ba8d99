"""Background turns on Celery: a task that runs :class:`~agcore_sync.contrib.jobs.TurnJob` s.

Needs the optional ``celery`` package (``pip install 'agcore_sync[celery]'``);
without it, importing this module raises one :class:`ImportError` naming
the extra. Any broker works; the relay and the session store need Redis::

    # myapp/tasks.py
    app = Celery("myapp", broker="redis://...")
    run_turn = register_turn_task(app, lambda: TurnRunner(store=..., relay=..., ...))

    # the web process
    enqueue_turn(run_turn, TurnJob(session_id=sid, turn_id=tid, user_input=text))

The runner factory is called once per worker process (after a prefork
pool's fork), on the first task it runs; every pool works (prefork,
threads, solo). The task is registered with ``acks_late=False`` (a task
whose worker died is not run again: its turn already has events, and the
relay ends it with an ``Error``) and ``ignore_result=True`` (events go
through the relay, not the result backend).
"""

from __future__ import annotations

import collections
import os
import threading
from typing import Any, Callable, Dict, Optional, Tuple

try:
    import celery
    import celery.result
except ImportError as exc:  # exercised in a subprocess by the tests
    raise ImportError("agcore_sync.contrib.celery needs the optional `celery` package; install the extra: "
                      "pip install 'agcore_sync[celery]'") from exc

from agcore_sync.contrib.jobs import TurnJob, TurnRunner

__all__ = ["register_turn_task", "enqueue_turn"]


#: How many turn ids :func:`enqueue_turn` remembers per process, to refuse one sent twice.
_SENT_IDS_REMEMBERED = 100_000


class _SentTurnIds:
    """The turn ids this process sent, the newest ``_SENT_IDS_REMEMBERED`` of them (thread-safe)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids: collections.OrderedDict[str, None] = collections.OrderedDict()

    def add(self, turn_id: str) -> bool:
        """Remember ``turn_id``; False if it was remembered already."""
        with self._lock:
            if turn_id in self._ids:
                return False
            self._ids[turn_id] = None
            if len(self._ids) > _SENT_IDS_REMEMBERED:
                self._ids.popitem(last=False)
            return True

    def forget(self, turn_id: str) -> None:
        """Forget ``turn_id`` (its sending failed, so it may be sent again)."""
        with self._lock:
            self._ids.pop(turn_id, None)


_sent = _SentTurnIds()


class _RunnerPerProcess:
    """Build the runner once per process (a forked child builds its own), thread-safely."""

    def __init__(self, factory: Callable[[], TurnRunner]) -> None:
        self._factory = factory
        self._lock = threading.Lock()
        self._built: Optional[Tuple[int, TurnRunner]] = None

    def get(self) -> TurnRunner:
        built = self._built
        if built is not None and built[0] == os.getpid():
            return built[1]
        with self._lock:
            built = self._built
            if built is None or built[0] != os.getpid():
                runner = self._factory()
                if not isinstance(runner, TurnRunner):
                    raise TypeError(f"register_turn_task: runner() must return a TurnRunner, "
                                    f"not {type(runner).__name__}")
                built = self._built = (os.getpid(), runner)
            return built[1]


def register_turn_task(app: celery.Celery, runner: Callable[[], TurnRunner], *,
                       name: str = "agcore_sync.run_turn") -> celery.Task:
    """Register the task that runs a turn job on ``app``; return it.

    The task takes one argument, the job's :meth:`TurnJob.to_dict
    <agcore_sync.contrib.jobs.TurnJob.to_dict>`, and calls
    :meth:`TurnRunner.run <agcore_sync.contrib.jobs.TurnRunner.run>` with it.

    Args:
        app: the Celery app.
        runner: returns the :class:`~agcore_sync.contrib.jobs.TurnRunner`;
            called once per worker process.
        name: the task's name (the same in web and worker processes).

    Raises:
        TypeError: ``app`` is not a ``celery.Celery``, ``runner`` not
            callable, or ``name`` not a non-empty str.

    .. versionadded:: 0.2
    """
    if not isinstance(app, celery.Celery):
        raise TypeError(f"register_turn_task: app must be a celery.Celery, not {type(app).__name__}")
    if not callable(runner) or isinstance(runner, TurnRunner):
        raise TypeError(f"register_turn_task: runner must be a function returning a TurnRunner, "
                        f"not {type(runner).__name__}")
    if not isinstance(name, str) or not name:
        raise TypeError(f"register_turn_task: name must be a non-empty str, not {name!r}")
    runners = _RunnerPerProcess(runner)

    def run_turn(data: Dict[str, Any]) -> None:
        runners.get().run(data)

    run_turn.__doc__ = "Run one agcore turn job (the dict of a TurnJob) in this worker."
    return app.task(name=name, acks_late=False, ignore_result=True, shared=False)(run_turn)


def enqueue_turn(task: celery.Task, job: TurnJob, **apply_async_kwargs: Any) -> celery.result.AsyncResult:
    """Send ``job`` to ``task`` (from :func:`register_turn_task`) with the task id ``job.turn_id``.

    The task's argument shows in monitors (Flower, logs) as the turn and the
    session, never the user's text; pass ``argsrepr=`` to change it.

    Args:
        task: the registered turn task.
        job: the turn to run.
        **apply_async_kwargs: passed to ``task.apply_async`` (``queue``,
            ``countdown``, ``expires``, ...), except ``task_id``.

    Raises:
        TypeError: ``job`` is not a :class:`TurnJob`, or ``task_id`` given.
        ValueError: this process sent the turn id already (every turn and
            every resume needs a new turn id, such as ``uuid.uuid4().hex``).
            Celery keeps no record a sender can check, so an id reused from
            another process is not refused here; the worker runs it at most
            once (it finds the turn claimed and does nothing).

    .. versionadded:: 0.2
    """
    if not isinstance(job, TurnJob):
        raise TypeError(f"enqueue_turn: job must be a TurnJob, not {type(job).__name__}")
    if "task_id" in apply_async_kwargs:
        raise TypeError("enqueue_turn: the Celery task id is the turn id; do not pass task_id")
    if not _sent.add(job.turn_id):
        raise ValueError(f"enqueue_turn: turn id {job.turn_id!r} was sent already; give every turn and every "
                         "resume a new turn id (uuid.uuid4().hex)")
    apply_async_kwargs.setdefault("argsrepr", f"(<agcore turn {job.turn_id} of session {job.session_id}>,)")
    try:
        return task.apply_async(args=(job.to_dict(),), task_id=job.turn_id, **apply_async_kwargs)
    except BaseException:
        _sent.forget(job.turn_id)  # not sent: the caller may try again with the same id
        raise
