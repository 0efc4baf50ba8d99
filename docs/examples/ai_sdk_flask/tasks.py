"""The RQ job: what ``rq worker`` runs for every turn and every approval.

RQ finds this function by its import path (``tasks.run_turn``), so the
worker runs in this directory (or with it on ``PYTHONPATH``). The job's
argument is a plain dict, :meth:`TurnJob.to_dict`, never a pickled object.
"""

from __future__ import annotations

from typing import Any, Dict

import agent

from agcore_sync.contrib.jobs import TurnJob


def run_turn(data: Dict[str, Any]) -> None:
    """Run one turn (or one resume after an approval) and publish its events to the relay."""
    agent.runner().run(TurnJob.from_dict(data))
