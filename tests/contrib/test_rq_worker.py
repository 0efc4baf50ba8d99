"""Background turns on real ``rq worker`` processes, read back as a browser would (SSE) or as events.

The workers are children of the test, on the per-session redis-server,
importing tests.contrib.jobs_app (the demo model, a ``hold`` tool the test
releases, a ``delete_file`` tool that needs approval); each test stops and
reaps its workers.
"""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from agcore_sync import ApprovalRequired, MessageComplete, ToolExecutionStarted
from agcore_sync._http.sse import SseParser
from agcore_sync.contrib.jobs import TurnJob
from tests.contrib import jobs_app
from tests.support.job_workers import WorkerProcess, rq_command, worker_env

rq = pytest.importorskip("rq", reason="the rq package is not installed: pip install -e '.[test]'")

from agcore_sync.contrib.rq import enqueue_turn  # noqa: E402

#: Bound on every wait for something that must happen (workers start in about a second).
WAIT = 30.0

QUEUE = "agcore-test"


@pytest.fixture
def workers(redis_server, redis_client):
    """``workers(n, lease_ttl=60)`` -> n started ``rq worker`` children; all stopped and reaped after the test."""
    started = []

    def start(n=1, lease_ttl=60.0):
        new = [WorkerProcess(rq_command(redis_server.url, QUEUE, f"w{len(started) + i}-{uuid.uuid4().hex[:6]}"),
                             worker_env(redis_server.url, lease_ttl)).start() for i in range(n)]
        started.extend(new)
        return new

    yield start
    for worker in started:
        worker.stop()


@pytest.fixture
def queue(redis_client):
    return rq.Queue(QUEUE, connection=redis_client)


@pytest.fixture
def runner(redis_client):
    """The web side's runner (to cancel) and relay (to read)."""
    return jobs_app.make_runner(redis_client)


def new_turn(session_id, text):
    return TurnJob(session_id=session_id, turn_id=uuid.uuid4().hex, user_input=text)


def sse_events(relay, turn_id, last_event_id=None):
    """Read the turn as a browser does: parse its SSE bytes; return [(id, event name, data)]."""
    parser = SseParser()
    frames = []
    for chunk in relay.sse(turn_id, last_event_id, timeout=WAIT):
        frames.extend(parser.feed(chunk))
    frames.extend(parser.close())
    return [(frame.id, frame.event, frame.data) for frame in frames]


def read_until(relay, turn_id, kind):
    """Read the turn's events until one of type ``kind``; return (reader, events so far)."""
    reader = relay.read(turn_id, timeout=WAIT)
    seen = []
    for _, event in reader:
        seen.append(event)
        if isinstance(event, kind):
            return reader, seen
    raise AssertionError(f"the turn ended without a {kind.__name__}: {seen}")


def error_class(client, turn_id):
    entries = [json.loads(f[b"event"]) for _, f in client.xrange(f"agcore:turn:{{{turn_id}}}") if b"event" in f]
    last = entries[-1]
    assert last["type"] == "error", entries
    return last["error"]["class"]


def hold_both_workers(queue, relay):
    """Enqueue one holding turn per worker and wait until both hold: both workers are up."""
    holds = [new_turn(f"hold-{i}", f'call hold {{"name": "warm-{i}"}}') for i in range(2)]
    for job in holds:
        enqueue_turn(queue, jobs_app.run_turn, job)
    return [read_until(relay, job.turn_id, ToolExecutionStarted)[0] for job in holds]


def test_twenty_concurrent_turns_over_two_workers_each_stream_complete_and_ordered(workers, queue, runner,
                                                                                    redis_client):
    workers(2)
    holders = hold_both_workers(queue, runner.relay)  # both workers now run a turn each
    jobs = [new_turn(f"s{i}", f"What is {i} * 7?") for i in range(20)]
    rq_jobs = [enqueue_turn(queue, jobs_app.run_turn, job) for job in jobs]
    assert [j.id for j in rq_jobs] == [job.turn_id for job in jobs]
    results = {}

    def browser(job):
        results[job.turn_id] = sse_events(runner.relay, job.turn_id)

    readers = [threading.Thread(target=browser, args=(job,), name=f"browser-{i}") for i, job in enumerate(jobs)]
    for reader in readers:
        reader.start()
    for i in range(2):
        redis_client.rpush(jobs_app.release_key(f"warm-{i}"), "go")
    for reader in readers:
        reader.join(WAIT * 2)
    assert not any(reader.is_alive() for reader in readers)
    for i, job in enumerate(jobs):
        frames = results[job.turn_id]
        assert frames[-1][1] == "end"
        events = [json.loads(data) for _, name, data in frames[:-1]]
        assert all(name == "message" for _, name, _ in frames[:-1])
        ids = [tuple(map(int, frame_id.split("-"))) for frame_id, _, _ in frames[:-1]]
        assert ids == sorted(ids) and len(set(ids)) == len(ids)  # in order, each once
        assert events[0]["type"] == "message_start" and events[-1]["type"] == "message_complete"
        text = "".join(e["text"] for e in events if e["type"] == "text_delta")
        assert f"{i} x 7 = {i * 7}." in text
    for holder in holders:
        assert isinstance([e for _, e in holder][-1], MessageComplete)
    done_by = {rq.job.Job.fetch(job.turn_id, connection=redis_client).worker_name for job in jobs}
    assert len(done_by) == 2, "both workers ran turns"
    assert {runner.store.load(f"s{i}").data["turn_index"] for i in range(20)} == {1}


def test_a_browser_that_reconnects_gets_what_it_missed_once(workers, queue, runner):
    workers(1)
    job = new_turn("s1", "What is 6 * 7?")
    enqueue_turn(queue, jobs_app.run_turn, job)
    frames = sse_events(runner.relay, job.turn_id)
    again = sse_events(runner.relay, job.turn_id, last_event_id=frames[3][0])
    assert again == frames[4:]


def test_a_worker_sigkilled_mid_tool_leaves_the_session_intact_and_the_relay_ends_with_an_error(
        workers, queue, runner, redis_client):
    (worker,) = workers(1, lease_ttl=1.0)
    first = new_turn("s1", "What is 2 + 3?")
    enqueue_turn(queue, jobs_app.run_turn, first)
    assert sse_events(runner.relay, first.turn_id)[-1][1] == "end"
    saved = runner.store.load("s1")
    assert saved.data["turn_index"] == 1

    doomed = new_turn("s1", 'call hold {"name": "never"}')
    enqueue_turn(queue, jobs_app.run_turn, doomed)
    reader, _ = read_until(runner.relay, doomed.turn_id, ToolExecutionStarted)
    worker.kill()  # the worker and its work horse, mid-tool
    rest = [event for _, event in reader]  # ends once the liveness mark lapses
    assert len(rest) == 1 and error_class(redis_client, doomed.turn_id) == "WorkerLostError"
    after = runner.store.load("s1")
    assert after.version == saved.version and after.data == saved.data  # the last save, intact

    workers(1, lease_ttl=1.0)  # a new worker: the session's lease has expired by now
    again = new_turn("s1", "What is 4 * 5?")
    enqueue_turn(queue, jobs_app.run_turn, again)
    events = [json.loads(data) for _, name, data in sse_events(runner.relay, again.turn_id) if name != "end"]
    assert events[-1]["type"] == "message_complete", events
    assert runner.store.load("s1").data["turn_index"] == 2


def test_cancel_from_the_web_side_stops_the_workers_turn(workers, queue, runner, redis_client):
    workers(1)
    job = new_turn("s1", 'call hold {"name": "c"}')
    enqueue_turn(queue, jobs_app.run_turn, job)
    try:
        reader, _ = read_until(runner.relay, job.turn_id, ToolExecutionStarted)
        runner.cancel(job.turn_id)
        rest = [event for _, event in reader]
    finally:
        redis_client.rpush(jobs_app.release_key("c"), "go")
    assert len(rest) == 1 and error_class(redis_client, job.turn_id) == "TurnCancelledError"
    # The worker is free again and the session takes a new turn.
    follow = new_turn("s1", "What is 4 * 5?")
    enqueue_turn(queue, jobs_app.run_turn, follow)
    assert "4 x 5 = 20." in "".join(json.loads(d).get("text", "") for _, n, d in sse_events(runner.relay,
                                                                                             follow.turn_id)
                                     if n != "end")


def test_a_turn_pauses_in_the_worker_and_a_resume_job_finishes_it(workers, queue, runner):
    workers(1)
    job = new_turn("s1", 'call delete_file {"path": "/tmp/report.txt"}')
    enqueue_turn(queue, jobs_app.run_turn, job)
    events = [event for _, event in runner.relay.read(job.turn_id, timeout=WAIT)]
    assert isinstance(events[-1], ApprovalRequired)
    (request,) = events[-1].requests
    assert runner.store.load("s1").data["paused_turn"] is not None
    resume = TurnJob(session_id="s1", turn_id=uuid.uuid4().hex, decisions={request.tool_call_id: {"approve": True}})
    enqueue_turn(queue, jobs_app.run_turn, resume)
    resumed = [event for _, event in runner.relay.read(resume.turn_id, timeout=WAIT)]
    assert isinstance(resumed[-1], MessageComplete)
    assert "deleted /tmp/report.txt" in resumed[-1].full_response.message.text
    stored = runner.store.load("s1").data
    assert stored["paused_turn"] is None and stored["turn_index"] == 1


def test_bad_decisions_reach_the_relay_and_the_worker_goes_on(workers, queue, runner, redis_client):
    workers(1)
    job = new_turn("s1", "What is 2 + 3?")
    enqueue_turn(queue, jobs_app.run_turn, job)
    sse_events(runner.relay, job.turn_id)
    bad = TurnJob(session_id="s1", turn_id=uuid.uuid4().hex, decisions={"call_9": {"approve": True}})
    rq_job = enqueue_turn(queue, jobs_app.run_turn, bad)
    assert sse_events(runner.relay, bad.turn_id)[-1][1] == "end"
    assert error_class(redis_client, bad.turn_id) == "TurnNotPausedError"
    follow = new_turn("s1", "What is 4 * 5?")
    enqueue_turn(queue, jobs_app.run_turn, follow)
    assert sse_events(runner.relay, follow.turn_id)[-1][1] == "end"
    assert rq_job.get_status(refresh=True) == "finished"  # delivered as an event, not a failed job


def test_a_turn_delivered_twice_to_two_workers_runs_once_and_its_browser_sees_it_end_cleanly(
        workers, queue, runner, redis_client):
    workers(2)
    job = new_turn("s1", 'call hold {"name": "twice"}')
    enqueue_turn(queue, jobs_app.run_turn, job)
    reader, seen = read_until(runner.relay, job.turn_id, ToolExecutionStarted)  # the first worker runs it
    again = queue.enqueue(jobs_app.run_turn, job.to_dict())  # RQ delivers the same turn again
    assert again.latest_result(timeout=int(WAIT)).type == rq.results.Result.Type.SUCCESSFUL  # the other worker
    assert not runner.relay.finished(job.turn_id)
    redis_client.rpush(jobs_app.release_key("twice"), "go")
    seen.extend(event for _, event in reader)
    assert isinstance(seen[-1], MessageComplete), seen
    assert not any(type(e).__name__ == "Error" for e in seen)
    frames = sse_events(runner.relay, job.turn_id)
    assert "SessionBusyError" not in json.dumps(frames) and frames[-1][1] == "end"
    assert runner.store.load("s1").data["turn_index"] == 1


def test_enqueue_turn_refuses_a_turn_id_already_used(workers, queue, runner):
    job = new_turn("s1", "What is 6 * 7?")
    enqueue_turn(queue, jobs_app.run_turn, job)
    with pytest.raises(ValueError, match="was used already"):
        enqueue_turn(queue, jobs_app.run_turn, job)
    workers(1)
    sse_events(runner.relay, job.turn_id)  # it ran, once
    with pytest.raises(ValueError, match="was used already"):
        enqueue_turn(queue, jobs_app.run_turn, TurnJob(session_id="s1", turn_id=job.turn_id, user_input="again"))


def test_enqueue_turn_checks_its_arguments(queue):
    job = new_turn("s1", "hi")
    with pytest.raises(TypeError, match="queue"):
        enqueue_turn(object(), jobs_app.run_turn, job)
    with pytest.raises(TypeError, match="TurnJob"):
        enqueue_turn(queue, jobs_app.run_turn, job.to_dict())
    with pytest.raises(TypeError, match="job_id"):
        enqueue_turn(queue, jobs_app.run_turn, job, job_id="x")
    rq_job = enqueue_turn(queue, jobs_app.run_turn, job)
    assert job.user_input not in rq_job.description and job.turn_id in rq_job.description
