"""A turn that pauses for approval in a job worker, resumed by a second job (TurnRunner).

``TurnRunner.run`` is what the job system's task calls: with RQ a
module-level ``def run_turn(data): RUNNER.run(TurnJob.from_dict(data))``
enqueued by ``agcore_sync.contrib.rq.enqueue_turn``, with Celery the task
``agcore_sync.contrib.celery.register_turn_task`` returns. Here a thread
plays the job worker; the main thread is the web side, reading the relay.

It needs a Redis server: ``REDIS_URL`` (default ``redis://localhost:6379/0``)
and ``pip install -e ".[redis]"``.
"""

import os
import threading
import uuid

import redis

from agcore_sync import AgentSession, ApprovalRequired, MockProvider, TextDelta, ToolRegistry, tool
from agcore_sync.contrib.jobs import TurnJob, TurnRunner
from agcore_sync.contrib.redis import RedisEventRelay, RedisSessionStore


@tool(requires_approval=True)
def send_invoice(customer: str) -> str:
    """Send the customer its invoice."""
    return f"invoice sent to {customer}"


def make_registry():
    registry = ToolRegistry()
    registry.register(send_invoice)
    return registry


def make_runner(client, provider):
    """The job worker's runner: factories, called for every job."""
    return TurnRunner(store=RedisSessionStore(client, prefix="example:"),
                      relay=RedisEventRelay(client, prefix="example:"),
                      new_session=lambda: AgentSession(provider, registry=make_registry()),
                      provider=lambda: provider, registry=make_registry, lease_ttl=30)


def run_in_worker(runner, job):
    """Stands in for the job system: the task gets the job's dict."""
    worker = threading.Thread(target=runner.run, args=(job.to_dict(),))
    worker.start()
    return worker


def show(relay, turn_id):
    """The web side: read the turn's events as they come (``relay.sse`` for a browser)."""
    last = None
    for _, event in relay.read(turn_id, timeout=30):
        if isinstance(event, TextDelta):
            print(event.text, end="", flush=True)
        last = event
    print()
    return last


if __name__ == "__main__":
    client = redis.Redis.from_url(os.environ.get("REDIS_URL", "redis://localhost:6379/0"))
    try:
        provider = MockProvider([MockProvider.tool_calls(("send_invoice", {"customer": "ACME"}),
                                                         text="I will send it once you approve."),
                                 MockProvider.text("Done: the invoice went to ACME.")])
        runner = make_runner(client, provider)
        conversation = uuid.uuid4().hex

        ask = TurnJob(session_id=conversation, turn_id=uuid.uuid4().hex, user_input="Send ACME its invoice.")
        worker = run_in_worker(runner, ask)
        last = show(runner.relay, ask.turn_id)
        worker.join(30)
        assert isinstance(last, ApprovalRequired)
        (request,) = last.requests
        print("waiting for approval of", request.tool_name, request.arguments)

        # Later, maybe from another web process: the user approved.
        resume = TurnJob(session_id=conversation, turn_id=uuid.uuid4().hex,
                         decisions={request.tool_call_id: {"approve": True}})
        worker = run_in_worker(runner, resume)
        show(runner.relay, resume.turn_id)
        worker.join(30)
        print("turns in the stored session:", runner.store.load(conversation).data["turn_index"])
    finally:
        client.close()
