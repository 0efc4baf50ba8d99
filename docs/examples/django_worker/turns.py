"""The Celery app and its one task: what ``celery -A turns worker`` runs for every turn and approval.

The task takes :meth:`TurnJob.to_dict` (plain JSON: Celery's default
serializer) and runs it with the runner of ``agent.py``. The web side
imports this module to send the task (``run_turn.delay(job.to_dict())``).
"""

from __future__ import annotations

import agent
from celery import Celery

from agcore_sync.contrib.celery import register_turn_task

app = Celery("turns", broker=agent.REDIS_URL)
app.conf.update(
    task_ignore_result=True,  # the events go through the relay; nobody reads a result
    task_acks_late=True,  # a worker that dies mid-turn does not lose the job silently ...
    worker_prefetch_multiplier=1,  # ... and a busy worker does not hoard turns others could run
    broker_connection_retry_on_startup=True,
)

#: The task (named "agcore_sync.run_turn").
run_turn = register_turn_task(app, agent.runner)
