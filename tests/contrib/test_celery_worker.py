"""Background turns on a real ``celery worker`` process (threads pool), read back as events and SSE.

The worker is a child of the test, on the per-session redis-server (also
its broker), importing tests.contrib.jobs_celery_app; each test stops and
reaps it. The web side sends tasks with a Celery app of its own, closed
after the test.
"""

from __future__ import annotations

import gc
import json
import threading
import uuid

import pytest

from agcore_sync import ApprovalRequired, MessageComplete, ToolExecutionStarted
from agcore_sync.contrib.jobs import TurnJob, TurnRunner
from tests.contrib import jobs_app
from tests.contrib.test_rq_worker import error_class, new_turn, read_until, sse_events
from tests.support.job_workers import WorkerProcess, celery_command, worker_env

celery = pytest.importorskip("celery", reason="the celery package is not installed: pip install -e '.[test]'")

from agcore_sync.contrib.celery import enqueue_turn, register_turn_task  # noqa: E402

WAIT = 30.0


@pytest.fixture
def workers(redis_server):
    """``workers(pool="threads", concurrency=1, lease_ttl=60)`` -> a started ``celery worker``; stopped after."""
    started = []

    def start(pool="threads", concurrency=1, lease_ttl=60.0):
        worker = WorkerProcess(celery_command(pool, concurrency, f"w{len(started)}-{uuid.uuid4().hex[:6]}"),
                               worker_env(redis_server.url, lease_ttl)).start()
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def task(redis_server):
    """The web side's handle on the turn task: a Celery app of its own on the same broker."""
    import kombu.pools
    from kombu.transport.redis import MultiChannelPoller

    before = {id(o) for o in gc.get_objects() if isinstance(o, MultiChannelPoller)}
    app = celery.Celery("web", broker=redis_server.url)
    app.conf.update(task_default_queue="agcore-test", broker_connection_retry_on_startup=True)
    yield register_turn_task(app, lambda: None)
    app.close()
    kombu.pools.reset()  # the producer pools are global, keyed by broker: close them all
    # kombu's Redis transport keeps its epoll open after close (MultiChannelPoller.close
    # only unregisters), and the transport stays referenced; close the ones this test made.
    for poller in [o for o in gc.get_objects() if isinstance(o, MultiChannelPoller) and id(o) not in before]:
        poller.poller.close()


@pytest.fixture
def runner(redis_client):
    return jobs_app.make_runner(redis_client)


def text_of(relay, turn_id):
    return "".join(json.loads(d).get("text", "") for _, n, d in sse_events(relay, turn_id) if n != "end")


def test_twenty_concurrent_turns_over_two_celery_workers_each_stream_complete_and_ordered(workers, task, runner,
                                                                                           redis_client):
    workers(concurrency=1)
    workers(concurrency=1)
    jobs = [new_turn(f"s{i}", f"What is {i} * 7?") for i in range(20)]
    results = {}

    def browser(job):
        results[job.turn_id] = sse_events(runner.relay, job.turn_id)

    readers = [threading.Thread(target=browser, args=(job,), name=f"browser-{i}") for i, job in enumerate(jobs)]
    for reader in readers:
        reader.start()
    for job in jobs:
        assert enqueue_turn(task, job).id == job.turn_id
    for reader in readers:
        reader.join(WAIT * 2)
    assert not any(reader.is_alive() for reader in readers)
    for i, job in enumerate(jobs):
        frames = results[job.turn_id]
        assert frames[-1][1] == "end"
        ids = [tuple(map(int, frame_id.split("-"))) for frame_id, _, _ in frames[:-1]]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)
        events = [json.loads(data) for _, _, data in frames[:-1]]
        assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_complete"
        assert f"{i} x 7 = {i * 7}." in "".join(e["text"] for e in events if e["type"] == "text_delta")
    assert {runner.store.load(f"s{i}").data["turn_index"] for i in range(20)} == {1}


def test_a_celery_worker_sigkilled_mid_tool_leaves_the_session_intact(workers, task, runner, redis_client):
    worker = workers(lease_ttl=1.0)
    first = new_turn("s1", "What is 2 + 3?")
    enqueue_turn(task, first)
    assert sse_events(runner.relay, first.turn_id)[-1][1] == "end"
    saved = runner.store.load("s1")
    doomed = new_turn("s1", 'call hold {"name": "never"}')
    enqueue_turn(task, doomed)
    reader, _ = read_until(runner.relay, doomed.turn_id, ToolExecutionStarted)
    worker.kill()
    rest = [event for _, event in reader]
    assert len(rest) == 1 and error_class(redis_client, doomed.turn_id) == "WorkerLostError"
    assert runner.store.load("s1").version == saved.version
    workers(lease_ttl=1.0)
    again = new_turn("s1", "What is 4 * 5?")
    enqueue_turn(task, again)
    assert "4 x 5 = 20." in text_of(runner.relay, again.turn_id)


def test_cancel_stops_the_celery_workers_turn_and_approval_resumes(workers, task, runner, redis_client):
    workers(concurrency=2)
    job = new_turn("s1", 'call hold {"name": "c"}')
    enqueue_turn(task, job)
    try:
        reader, _ = read_until(runner.relay, job.turn_id, ToolExecutionStarted)
        runner.cancel(job.turn_id)
        rest = [event for _, event in reader]
    finally:
        redis_client.rpush(jobs_app.release_key("c"), "go")
    assert len(rest) == 1 and error_class(redis_client, job.turn_id) == "TurnCancelledError"

    ask = new_turn("s1", 'call delete_file {"path": "/tmp/a"}')
    enqueue_turn(task, ask)
    events = [event for _, event in runner.relay.read(ask.turn_id, timeout=WAIT)]
    assert isinstance(events[-1], ApprovalRequired)
    (request,) = events[-1].requests
    resume = TurnJob(session_id="s1", turn_id=uuid.uuid4().hex, decisions={request.tool_call_id: {"deny": "keep it"}})
    enqueue_turn(task, resume)
    resumed = [event for _, event in runner.relay.read(resume.turn_id, timeout=WAIT)]
    assert isinstance(resumed[-1], MessageComplete) and "keep it" in resumed[-1].full_response.message.text


def test_register_and_enqueue_check_their_arguments(task):
    with pytest.raises(TypeError, match="app"):
        register_turn_task(object(), lambda: None)
    with pytest.raises(TypeError, match="runner"):
        register_turn_task(task.app, "runner")
    with pytest.raises(TypeError, match="TurnJob"):
        enqueue_turn(task, {"turn_id": "x"})
    with pytest.raises(TypeError, match="task_id"):
        enqueue_turn(task, new_turn("s", "x"), task_id="y")


def test_enqueue_turn_refuses_a_turn_id_it_sent_already_and_the_worker_runs_it_once(workers, task, runner):
    job = new_turn("s1", "What is 6 * 7?")
    enqueue_turn(task, job)
    with pytest.raises(ValueError, match="was sent already"):
        enqueue_turn(task, TurnJob(session_id="s1", turn_id=job.turn_id, user_input="again"))
    task.apply_async(args=(job.to_dict(),))  # delivered twice all the same (another task id, as a redelivery)
    workers(concurrency=2)
    frames = sse_events(runner.relay, job.turn_id)
    events = [json.loads(data) for _, name, data in frames if name != "end"]
    assert events[-1]["type"] == "message_complete" and not any(e["type"] == "error" for e in events)
    assert runner.store.load("s1").data["turn_index"] == 1


def test_the_runner_factory_runs_once_per_process_and_must_return_a_runner(redis_client):
    app = celery.Celery("local")
    calls = []
    built = jobs_app.make_runner(redis_client)

    def factory():
        calls.append(1)
        return built

    local = register_turn_task(app, factory, name="t.local")
    for i in range(2):
        local(new_turn("s1", f"What is {i} + 1?").to_dict())  # runs in this process, as a worker would
    assert len(calls) == 1 and runner_turns(built) == 2
    bad = register_turn_task(app, lambda: "not a runner", name="t.bad")
    with pytest.raises(TypeError, match="TurnRunner"):
        bad(new_turn("s1", "x").to_dict())
    assert isinstance(built, TurnRunner)


def runner_turns(runner):
    return runner.store.load("s1").data["turn_index"]
