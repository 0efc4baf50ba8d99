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
    # Acknowledge at start (Celery's default, not acks_late): a turn whose worker died is not run again
    # from the top, which would repeat its tool calls; its readers get an Error event instead.
    worker_prefetch_multiplier=1,  # a busy worker does not hoard turns that others could run
    broker_connection_retry_on_startup=True,
)

#: The task (named "agcore_sync.run_turn").
run_turn = register_turn_task(app, agent.runner)
