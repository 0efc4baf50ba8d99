"""TurnJob and TurnRunner in this process, against a real redis-server.

The worker-process tests (a real ``rq worker``, a real ``celery worker``)
are in test_rq_worker.py and test_celery_worker.py; here the runner runs in
the test (or a test thread) so each rule can be seen up close.
"""

from __future__ import annotations

import json
import logging
import threading

import pytest

from agcore_sync import (
    AgentSession,
    ApprovalRequired,
    Approve,
    Deny,
    Error,
    MessageComplete,
    SessionBusyError,
    TextDelta,
    ToolExecutionCompleted,
    ToolExecutionStarted,
)
from agcore_sync.cli.demo import DemoProvider
from agcore_sync.contrib.jobs import TurnJob, TurnRunner
from agcore_sync.contrib.redis import RedisEventRelay, RelayError
from tests.contrib import jobs_app

#: Bound on every wait for something that must happen.
WAIT = 15.0


@pytest.fixture
def runner(redis_client):
    return jobs_app.make_runner(redis_client)


def events_of(relay, turn_id, timeout=WAIT):
    return [event for _, event in relay.read(turn_id, timeout=timeout)]


def text_of(events):
    return "".join(e.text for e in events if isinstance(e, TextDelta))


def error_of(events, relay=None, turn_id=None):
    """Return (error class, message) of the one Error, which must be the last event.

    Read back, an Error's exception is gone (``error=None``); its class is in
    the stream entry's JSON, which is what a browser gets.
    """
    errors = [e for e in events if isinstance(e, Error)]
    assert len(errors) == 1 and events[-1] is errors[0], events
    return errors[0].message.partition(":")[0], errors[0].message


def raw_events(client, turn_id):
    """The JSON of every event entry of the turn's stream, as a browser gets them."""
    return [json.loads(fields[b"event"]) for _, fields in client.xrange(f"agcore:turn:{{{turn_id}}}")
            if b"event" in fields]


def stored_turns(runner, session_id):
    stored = runner.store.load(session_id)
    return None if stored is None else stored.data["turn_index"]


def in_thread(target, *args):
    """Start ``target(*args)`` in a thread; return (thread, outcome dict)."""
    outcome = {}

    def run():
        try:
            outcome["value"] = target(*args)
        except BaseException as exc:  # noqa: BLE001 - handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, name="test-runner")
    thread.start()
    return thread, outcome


# -- TurnJob ---------------------------------------------------------------------------


def test_a_job_round_trips_through_its_dict_and_json():
    import json

    new = TurnJob(session_id="s1", turn_id="t-1", user_input="hi")
    decisions = {"c1": Approve(), "c2": Deny("no"), "c3": {"approve": True}}
    resume = TurnJob(session_id="s1", turn_id="t_2", decisions=decisions)
    for job in (new, resume):
        assert TurnJob.from_dict(json.loads(json.dumps(job.to_dict()))) == job
    assert resume.decisions == {"c1": {"approve": True}, "c2": {"deny": "no"}, "c3": {"approve": True}}
    assert resume.session_decisions() == {"c1": Approve(), "c2": Deny("no"), "c3": Approve()}
    assert resume.resumes and not new.resumes


@pytest.mark.parametrize("fields, error", [
    ({"session_id": "s", "turn_id": "t"}, ValueError),                                   # neither
    ({"session_id": "s", "turn_id": "t", "user_input": "x", "decisions": {}}, ValueError),  # both
    ({"session_id": "", "turn_id": "t", "user_input": "x"}, ValueError),
    ({"session_id": "s", "turn_id": "a b", "user_input": "x"}, ValueError),
    ({"session_id": "s", "turn_id": "t:1", "user_input": "x"}, ValueError),
    ({"session_id": "s", "turn_id": 7, "user_input": "x"}, TypeError),
    ({"session_id": "s", "turn_id": "t", "user_input": 3}, TypeError),
    ({"session_id": "s", "turn_id": "t", "decisions": {"c": {"approve": False}}}, ValueError),
    ({"session_id": "s", "turn_id": "t", "decisions": {"c": {"deny": 1}}}, ValueError),
    ({"session_id": "s", "turn_id": "t", "decisions": {"": {"approve": True}}}, ValueError),
    ({"session_id": "s", "turn_id": "t", "decisions": ["c"]}, TypeError),
])
def test_an_invalid_job_is_refused_at_construction(fields, error):
    with pytest.raises(error):
        TurnJob(**fields)


def test_from_dict_refuses_unknown_and_missing_fields():
    with pytest.raises(ValueError, match="no field"):
        TurnJob.from_dict({"session_id": "s", "turn_id": "t", "user_input": "x", "prompt": "y"})
    with pytest.raises(ValueError, match="needs"):
        TurnJob.from_dict({"turn_id": "t", "user_input": "x"})
    with pytest.raises(TypeError):
        TurnJob.from_dict(["s", "t"])


def test_runner_arguments_are_checked(redis_client):
    relay = RedisEventRelay(redis_client)
    store = jobs_app.make_runner(redis_client).store
    ok = {"store": store, "relay": relay, "new_session": lambda: None, "provider": DemoProvider}
    with pytest.raises(TypeError, match="store"):
        TurnRunner(**{**ok, "store": object()})
    with pytest.raises(TypeError, match="relay"):
        TurnRunner(**{**ok, "relay": redis_client})
    with pytest.raises(TypeError, match="provider"):
        TurnRunner(**{**ok, "provider": DemoProvider()})
    with pytest.raises(ValueError, match="lease_ttl"):
        TurnRunner(**ok, lease_ttl=0)


# -- running turns ---------------------------------------------------------------------


def test_a_new_turn_publishes_every_event_in_order_then_saves_releases_and_finishes(runner, redis_client):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="What is 17 * 23?"))
    events = events_of(runner.relay, "t1")
    # The same turn in this process, for comparison.
    with AgentSession(DemoProvider(), registry=jobs_app.make_registry(redis_client)) as local:
        expected = list(local.submit_turn_stream("What is 17 * 23?"))
        local.registry.close()
    assert [type(e) for e in events] == [type(e) for e in expected]
    assert text_of(events) == text_of(expected) and "391" in text_of(events)
    assert stored_turns(runner, "s1") == 1
    with runner.store.lease("s1", ttl=5):  # the lease was released before the end mark
        pass
    assert not redis_client.exists("agcore:turn-alive:{t1}")
    assert [t.name for t in threading.enumerate() if t.name.startswith("agcore-turnwatch")] == []


def test_the_next_turn_loads_the_saved_session_and_sees_its_history(runner):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="What is 2 + 3?"))
    runner.run(TurnJob(session_id="s1", turn_id="t2", user_input="What is 4 * 5?"))
    assert "20" in text_of(events_of(runner.relay, "t2"))
    session = AgentSession.load(runner.store, "s1", provider=DemoProvider())
    assert session.turn_index == 2
    assert [m.text for m in session.messages() if m.role.value == "user" and m.text] == ["What is 2 + 3?",
                                                                                       "What is 4 * 5?"]


def test_a_turn_that_needs_approval_pauses_saved_and_a_resume_job_finishes_it(runner):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input='call delete_file {"path": "/tmp/x"}'))
    events = events_of(runner.relay, "t1")
    assert isinstance(events[-1], ApprovalRequired)
    (request,) = events[-1].requests
    assert request.tool_name == "delete_file" and request.arguments == {"path": "/tmp/x"}
    stored = runner.store.load("s1").data
    assert stored["paused_turn"] is not None and stored["turn_index"] == 0

    runner.run(TurnJob(session_id="s1", turn_id="t2", decisions={request.tool_call_id: {"approve": True}}))
    resumed = events_of(runner.relay, "t2")
    completed = [e for e in resumed if isinstance(e, ToolExecutionCompleted)]
    assert [(c.tool_name, c.result_summary) for c in completed] == [("delete_file", "deleted /tmp/x")]
    assert isinstance(resumed[-1], MessageComplete) and "deleted /tmp/x" in text_of(resumed)
    stored = runner.store.load("s1").data
    assert stored["paused_turn"] is None and stored["turn_index"] == 1


def test_a_denied_call_reaches_the_model_as_denied(runner):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input='call delete_file {"path": "/etc"}'))
    (request,) = events_of(runner.relay, "t1")[-1].requests
    runner.run(TurnJob(session_id="s1", turn_id="t2", decisions={request.tool_call_id: Deny("not /etc")}))
    assert "not /etc" in text_of(events_of(runner.relay, "t2"))


# -- bad input: an Error event, the job does not crash ------------------------------------------


def paused(runner):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input='call delete_file {"path": "/tmp/x"}'))
    return events_of(runner.relay, "t1")[-1].requests[0].tool_call_id


@pytest.mark.parametrize("case", ["unknown id", "missing decision", "not paused", "unknown session",
                                  "new turn while paused"])
def test_bad_decisions_and_wrong_states_end_the_relay_with_an_error_and_the_job_returns(runner, case):
    if case == "not paused":
        runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="What is 2 + 3?"))
        job = TurnJob(session_id="s1", turn_id="t2", decisions={"call_1": {"approve": True}})
        expected = "TurnNotPausedError"
    elif case == "unknown session":
        job = TurnJob(session_id="nobody", turn_id="t2", decisions={"call_1": {"approve": True}})
        expected = "SessionNotFoundError"
    else:
        call_id = paused(runner)
        decisions = {"unknown id": {call_id: {"approve": True}, "call_x": {"approve": True}},
                     "missing decision": {"call_x": {"approve": True}}}.get(case)
        if case == "new turn while paused":
            job = TurnJob(session_id="s1", turn_id="t2", user_input="hello")
            expected = "TurnPausedError"
        else:
            job = TurnJob(session_id="s1", turn_id="t2", decisions=decisions)
            expected = "ApprovalDecisionError"
    before = runner.store.load(job.session_id)
    runner.run(job)  # returns: the error is the turn's outcome, not a job failure
    error_class, message = error_of(events_of(runner.relay, "t2"))
    assert error_class == expected, message
    after = runner.store.load(job.session_id)
    assert (before is None and after is None) or after.version == before.version  # nothing was saved


def test_a_busy_session_ends_the_relay_with_session_busy(runner):
    with runner.store.lease("s1", ttl=30):
        runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="hi"))
    assert error_of(events_of(runner.relay, "t1"))[0] == "SessionBusyError"
    assert isinstance(SessionBusyError("x"), Exception)


def test_a_failing_factory_is_published_without_its_text_and_re_raised(redis_client):
    def broken():
        raise RuntimeError("password=hunter2")

    runner = TurnRunner(store=jobs_app.make_runner(redis_client).store, relay=RedisEventRelay(redis_client),
                        new_session=broken, provider=DemoProvider)
    with pytest.raises(RuntimeError):
        runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="hi"))
    events = events_of(runner.relay, "t1")
    assert len(events) == 1 and isinstance(events[0], Error)
    assert "RuntimeError" in events[0].message and "hunter2" not in events[0].message
    assert "hunter2" not in json.dumps(raw_events(redis_client, "t1"))


def test_a_job_dict_that_does_not_parse_still_ends_its_turn(runner):
    with pytest.raises(ValueError):
        runner.run({"session_id": "s1", "turn_id": "t1"})
    assert error_of(events_of(runner.relay, "t1"))[1].startswith("invalid turn job: a TurnJob has exactly one")
    with pytest.raises(TypeError):
        runner.run(["not", "a", "job"])


def test_a_provider_error_in_the_stream_is_published_and_the_ended_turn_saved(redis_client):
    from agcore_sync import MockProvider
    from agcore_sync.llm.errors import LlmConnectionError

    store = jobs_app.make_runner(redis_client).store
    runner = TurnRunner(store=store, relay=RedisEventRelay(redis_client),
                        new_session=lambda: AgentSession(MockProvider([LlmConnectionError("gone")])),
                        provider=DemoProvider)
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="hi"))
    error_of(events_of(runner.relay, "t1"))
    assert raw_events(redis_client, "t1")[-1]["error"]["class"].startswith("Llm")  # the stream's own Error
    assert stored_turns(runner, "s1") == 1


# -- cancel -------------------------------------------------------------------------------


def test_cancel_mid_tool_closes_the_turn_and_ends_the_relay_with_turn_cancelled(runner, redis_client):
    runner.run(TurnJob(session_id="s1", turn_id="t0", user_input="What is 2 + 3?"))
    job = TurnJob(session_id="s1", turn_id="t1", user_input='call hold {"name": "c1"}')
    thread, outcome = in_thread(runner.run, job)
    seen = []
    try:
        for _, event in runner.relay.read("t1", timeout=WAIT):
            seen.append(event)
            if isinstance(event, ToolExecutionStarted):
                runner.cancel("t1")
        thread.join(WAIT)
        assert not thread.is_alive() and outcome == {"value": None}
    finally:
        redis_client.rpush(jobs_app.release_key("c1"), "go")  # let the abandoned tool return
        thread.join(WAIT)
    assert error_of(seen)[0] == "TurnCancelledError"
    assert not any(isinstance(e, ToolExecutionCompleted) for e in seen)
    # The session keeps its complete rounds: the first turn, and the cancelled turn counted once.
    assert stored_turns(runner, "s1") == 2
    runner.run(TurnJob(session_id="s1", turn_id="t2", user_input="What is 4 * 5?"))
    assert "20" in text_of(events_of(runner.relay, "t2"))


def test_a_turn_cancelled_before_its_job_starts_is_not_run(runner):
    runner.cancel("t1")
    runner.cancel("t1")  # idempotent
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="What is 2 + 3?"))
    assert error_of(events_of(runner.relay, "t1"))[0] == "TurnCancelledError"
    assert runner.store.load("s1") is None


def test_cancelling_a_finished_turn_changes_nothing(runner):
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="What is 2 + 3?"))
    before = events_of(runner.relay, "t1")
    runner.cancel("t1")
    assert events_of(runner.relay, "t1") == before and isinstance(before[-1], MessageComplete)


# -- liveness -------------------------------------------------------------------------------


def test_a_lapsed_liveness_mark_ends_the_turn_with_one_worker_lost_error_for_every_reader(redis_client):
    relay = RedisEventRelay(redis_client)
    relay.publish("t1", TextDelta("partial"))
    relay.keep_alive("t1", 0.3)
    barrier = threading.Barrier(3)
    results = [None, None, None]

    def read(i):
        barrier.wait(WAIT)
        results[i] = list(relay.read("t1", timeout=WAIT))

    threads = [threading.Thread(target=read, args=(i,)) for i in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(WAIT * 2)
    assert all(not t.is_alive() for t in threads)
    assert results[0] == results[1] == results[2]  # the same entries, ids included: appended once
    events = [e for _, e in results[0]]
    assert events[0] == TextDelta("partial")
    error_of(events)
    assert raw_events(redis_client, "t1")[-1]["error"]["class"] == "WorkerLostError"
    assert len(redis_client.xrange("agcore:turn:{t1}")) == 3  # the event, one Error, one end mark


def test_a_turn_without_a_liveness_mark_is_never_declared_dead(redis_client):
    relay = RedisEventRelay(redis_client)  # a queued turn: no worker has marked it yet
    relay.publish("t1", TextDelta("x"))
    reader = relay.read("t1", timeout=2.5)  # more than two read slices, each followed by a check
    assert next(reader)[1] == TextDelta("x")
    with pytest.raises(TimeoutError):
        next(reader)
    assert len(redis_client.xrange("agcore:turn:{t1}")) == 1


def test_a_live_worker_keeps_its_turn_alive_past_the_mark_lifetime(redis_client):
    # lease_ttl 0.5: the mark lives 0.75 s and is renewed every 0.25 s; the tool holds for longer.
    runner = jobs_app.make_runner(redis_client, lease_ttl=0.5)
    thread, outcome = in_thread(runner.run, TurnJob(session_id="s1", turn_id="t1",
                                                     user_input='call hold {"name": "h"}'))
    reader = runner.relay.read("t1", timeout=WAIT)
    seen = []
    for _, event in reader:
        seen.append(event)
        if isinstance(event, ToolExecutionStarted):
            break
    # Three read slices without events (each followed by a liveness check) while the tool holds.
    with pytest.raises(TimeoutError):
        for _, event in runner.relay.read("t1", after=None, timeout=3.0):
            seen.append(event)
            if len(seen) > 50:
                break
    redis_client.rpush(jobs_app.release_key("h"), "go")
    thread.join(WAIT)
    assert not thread.is_alive() and outcome == {"value": None}
    rest = [e for _, e in reader]
    assert not any(isinstance(e, Error) for e in rest) and isinstance(rest[-1], MessageComplete)


def test_a_worker_whose_turn_was_declared_lost_stops_without_saving(redis_client):
    runner = jobs_app.make_runner(redis_client)
    thread, outcome = in_thread(runner.run, TurnJob(session_id="s1", turn_id="t1",
                                                     user_input='call hold {"name": "h"}'))
    for _, event in runner.relay.read("t1", timeout=WAIT):
        if isinstance(event, ToolExecutionStarted):
            break
    runner.relay.finish("t1")  # as a reader does when the mark lapses (the worker stalled)
    redis_client.rpush(jobs_app.release_key("h"), "go")
    thread.join(WAIT)
    assert not thread.is_alive() and isinstance(outcome.get("error"), RelayError)
    assert runner.store.load("s1") is None


def test_the_watcher_thread_runs_only_while_its_job_runs(runner, redis_client):
    thread, outcome = in_thread(runner.run, TurnJob(session_id="s1", turn_id="t1",
                                                     user_input='call hold {"name": "w"}'))
    read_events = runner.relay.read("t1", timeout=WAIT)
    for _, event in read_events:
        if isinstance(event, ToolExecutionStarted):
            break
    watchers = [t for t in threading.enumerate() if t.name.startswith("agcore-turnwatch-")]
    assert len(watchers) == 1 and watchers[0].daemon
    redis_client.rpush(jobs_app.release_key("w"), "go")
    thread.join(WAIT)
    assert outcome == {"value": None}
    watchers[0].join(WAIT)
    assert not watchers[0].is_alive()
    assert isinstance([e for _, e in read_events][-1], MessageComplete)


def test_a_loaded_session_gets_the_hooks_factorys_hooks(redis_client):
    from agcore_sync import HookEvent, Hooks

    seen = []

    def make_hooks():
        hooks = Hooks()
        hooks.on(HookEvent.ON_TURN_START, lambda ctx: seen.append(ctx.turn_index))
        return hooks

    base = jobs_app.make_runner(redis_client)
    runner = TurnRunner(store=base.store, relay=base.relay, new_session=lambda: AgentSession(DemoProvider()),
                        provider=DemoProvider, hooks=make_hooks)
    runner.run(TurnJob(session_id="s1", turn_id="t1", user_input="hi"))  # new: new_session's (no hooks)
    runner.run(TurnJob(session_id="s1", turn_id="t2", user_input="hi"))  # loaded: the factory's hooks
    assert seen == [1]


def test_a_job_delivered_twice_runs_its_turn_once_and_leaves_the_stream_alone(runner, redis_client, caplog):
    job = TurnJob(session_id="s1", turn_id="t1", user_input="What is 2 + 3?")
    runner.run(job)
    entries = redis_client.xrange("agcore:turn:{t1}")
    with caplog.at_level(logging.WARNING, logger="agcore_sync.jobs"):
        assert runner.run(job.to_dict()) is None  # quietly: the job system records a success
    assert "turn 't1' of session 's1' was delivered again" in caplog.text
    assert redis_client.xrange("agcore:turn:{t1}") == entries
    assert stored_turns(runner, "s1") == 1
    assert runner.relay.finished("t1") and not runner.relay.finished("t2")


def test_a_second_delivery_while_the_turn_runs_publishes_nothing_and_the_first_saves_and_ends_cleanly(
        runner, redis_client, caplog):
    job = TurnJob(session_id="s1", turn_id="t1", user_input='call hold {"name": "dup"}')
    thread, outcome = in_thread(runner.run, job)
    reader = runner.relay.read("t1", timeout=WAIT)
    seen = []
    for _, event in reader:
        seen.append(event)
        if isinstance(event, ToolExecutionStarted):
            break
    entries = redis_client.xrange("agcore:turn:{t1}")
    with caplog.at_level(logging.WARNING, logger="agcore_sync.jobs"):
        assert jobs_app.make_runner(redis_client).run(job.to_dict()) is None  # another worker, same turn
    assert "was delivered again" in caplog.text
    assert redis_client.xrange("agcore:turn:{t1}") == entries and not runner.relay.finished("t1")
    redis_client.rpush(jobs_app.release_key("dup"), "go")
    thread.join(WAIT)
    assert not thread.is_alive() and outcome == {"value": None}
    seen.extend(event for _, event in reader)
    assert not any(isinstance(e, Error) for e in seen) and isinstance(seen[-1], MessageComplete)
    assert stored_turns(runner, "s1") == 1


def test_a_job_dict_that_does_not_parse_delivered_twice_ends_its_turn_once(runner):
    for _ in range(2):
        with pytest.raises(ValueError):
            runner.run({"session_id": "s1", "turn_id": "t1"})
    assert len(events_of(runner.relay, "t1")) == 1


def test_a_claim_is_taken_once_and_lives_as_long_as_the_stream(runner, redis_client):
    assert runner.relay.claim("t1") is True
    assert runner.relay.claim("t1") is False
    assert 3_599_000 < redis_client.pttl("agcore:turn-claim:{t1}") <= 3_600_000
    runner.relay.publish("t1", TextDelta("a"))
    runner.relay.finish("t1")
    assert redis_client.pttl("agcore:turn-claim:{t1}") > 3_599_000
