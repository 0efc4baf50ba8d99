"""Background turns on RQ: enqueue a :class:`~agcore_sync.contrib.jobs.TurnJob` as an RQ job.

Needs the optional ``rq`` package (``pip install 'agcore_sync[rq]'``);
without it, importing this module raises one :class:`ImportError` naming
the extra. The app defines its task as a module-level function the worker
can import (RQ imports it by name; nothing else is imported from job
data)::

    # myapp/jobs.py
    RUNNER = TurnRunner(store=..., relay=..., new_session=..., provider=...)

    def run_turn(data):
        RUNNER.run(TurnJob.from_dict(data))

    # the web process
    enqueue_turn(queue, run_turn, TurnJob(session_id=sid, turn_id=tid, user_input=text))
    return Response(relay.sse(tid, last_event_id=request.headers.get("Last-Event-ID")),
                    mimetype="text/event-stream")

and starts workers with ``rq worker`` (any worker class: the default
forking ``Worker``, ``SimpleWorker``, ``SpawnWorker``).
"""

from __future__ import annotations

from typing import Any, Callable, Dict, Union

try:
    import rq
    import rq.job
except ImportError as exc:  # exercised in a subprocess by the tests
    raise ImportError("agcore_sync.contrib.rq needs the optional `rq` package; install the extra: "
                      "pip install 'agcore_sync[rq]'") from exc

from agcore_sync.contrib.jobs import TurnJob

__all__ = ["enqueue_turn"]


def enqueue_turn(queue: rq.Queue, task: Union[Callable[[Dict[str, Any]], None], str], job: TurnJob,
                 **enqueue_kwargs: Any) -> rq.job.Job:
    """Enqueue ``task(job.to_dict())`` on ``queue`` as the RQ job ``job.turn_id``.

    The job's description names the turn and the session, never the user's
    text (RQ logs it); pass ``description=`` to change it.

    Args:
        queue: the RQ queue.
        task: the app's module-level task function (or its dotted name),
            which calls :meth:`TurnRunner.run <agcore_sync.contrib.jobs.TurnRunner.run>`.
        job: the turn to run.
        **enqueue_kwargs: passed to ``queue.enqueue`` (``job_timeout``,
            ``ttl``, ``result_ttl``, ``at_front``, ...), except ``job_id``.

    Returns:
        The RQ job, whose id is ``job.turn_id``.

    Raises:
        TypeError: ``queue`` is not an ``rq.Queue``, ``job`` not a
            :class:`TurnJob`, ``task`` not callable, or ``job_id`` given.
        ValueError: the turn id was used already: RQ still has a job with
            that id (every turn and every resume needs a new turn id, such
            as ``uuid.uuid4().hex``). Once RQ has dropped the old job
            (its ``result_ttl``), a reused id is still run at most once: the
            worker finds the turn claimed and does nothing.

    .. versionadded:: 0.2
    """
    if not isinstance(queue, rq.Queue):
        raise TypeError(f"enqueue_turn: queue must be an rq.Queue, not {type(queue).__name__}")
    if not isinstance(job, TurnJob):
        raise TypeError(f"enqueue_turn: job must be a TurnJob, not {type(job).__name__}")
    if not (callable(task) or isinstance(task, str)):
        raise TypeError(f"enqueue_turn: task must be a function (or its dotted name), not {type(task).__name__}")
    if "job_id" in enqueue_kwargs:
        raise TypeError("enqueue_turn: the RQ job id is the turn id; do not pass job_id")
    if rq.job.Job.exists(job.turn_id, connection=queue.connection):
        raise ValueError(f"enqueue_turn: turn id {job.turn_id!r} was used already (RQ has a job with that id); "
                         "give every turn and every resume a new turn id (uuid.uuid4().hex)")
    enqueue_kwargs.setdefault("description", f"agcore turn {job.turn_id} of session {job.session_id}")
    return queue.enqueue(task, job.to_dict(), job_id=job.turn_id, **enqueue_kwargs)
