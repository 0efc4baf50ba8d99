"""The Celery app the background-turn tests start ``celery worker`` on (``-A tests.contrib.jobs_celery_app``).

Broker: the test's redis-server (``AGCORE_JOBS_REDIS_URL``); the turn task
runs :func:`tests.contrib.jobs_app.runner`'s runner.
"""

from __future__ import annotations

import os

from celery import Celery

from agcore_sync.contrib.celery import register_turn_task
from tests.contrib import jobs_app

app = Celery("agcore_jobs_test", broker=os.environ["AGCORE_JOBS_REDIS_URL"])
app.conf.update(broker_connection_retry_on_startup=True, worker_hijack_root_logger=False,
                task_default_queue="agcore-test", worker_prefetch_multiplier=1)
run_turn = register_turn_task(app, jobs_app.runner)
