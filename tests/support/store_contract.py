"""The behaviour every SessionStore shares, as a test class each store's tests subclass.

A subclass provides three fixtures:

- ``store``: a fresh, empty store (closed after the test);
- ``make_store``: ``make_store(ttl=None)`` -> another store object on the
  same data (another connection or client), closed after the test;
- ``child_location``: ``(kind, location)`` for ``tests.support.store_child``,
  so a second process opens the same store;
- ``expire_lease``: ``expire_lease(session_id)`` makes the current lease
  expire now, behind the store's back (as a stalled holder's would).

Cross-process tests talk to ``tests/support/store_child.py`` over pipes:
every ordering is forced by a line read, never by a clock. Lease expiry is
about time itself, so those tests let time pass (``Event.wait``) and bound
how long it may take.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import List

import pytest

from agcore_sync import (
    AgentError,
    AgentSession,
    CycleConfig,
    MockProvider,
    SessionBusyError,
    SessionConflictError,
    SessionNotFoundError,
    SessionStore,
    StoredSession,
)

ROOT = Path(__file__).resolve().parents[2]

#: Bound of every wait for a child's answer.
CHILD_TIMEOUT = 30.0


class Child:
    """A ``store_child`` process; ``line()`` reads its next answer with a bound."""

    def __init__(self, kind: str, location: str, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(ROOT))
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.store_child", kind, location, *args],
                                     cwd=str(ROOT), env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE, text=True)
        self._lines: List[str] = []
        self._ready = threading.Semaphore(0)
        self._reader = threading.Thread(target=self._read, name="test-store-child-reader", daemon=True)
        self._reader.start()

    def _read(self) -> None:
        for line in self.proc.stdout:
            self._lines.append(line.strip())
            self._ready.release()
        self._lines.append("<eof>")
        self._ready.release()

    def line(self) -> str:
        assert self._ready.acquire(timeout=CHILD_TIMEOUT), "the child process did not answer"
        got = self._lines.pop(0)
        if got == "<eof>":
            self.proc.wait(CHILD_TIMEOUT)
            raise AssertionError(f"the child exited ({self.proc.returncode}): {self.proc.stderr.read()}")
        return got

    def send(self, line: str) -> None:
        self.proc.stdin.write(line + "\n")
        self.proc.stdin.flush()

    def kill(self) -> None:
        self.proc.send_signal(signal.SIGKILL)

    def close(self) -> int:
        if self.proc.poll() is None:
            self.proc.stdin.close()
        code = self.proc.wait(CHILD_TIMEOUT)
        self._reader.join(CHILD_TIMEOUT)
        assert not self._reader.is_alive()
        for stream in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            stream.close()
        return code


def lease_threads() -> List[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("agcore-lease-")]


def wait_for(predicate, timeout: float, step: float = 0.02) -> float:
    """Return how long ``predicate()`` took to become true; fail after ``timeout``.

    Only for behaviour that is about time itself (an expiry), where no
    event exists to wait on.
    """
    start = time.monotonic()
    pause = threading.Event()
    while not predicate():
        assert time.monotonic() - start < timeout, f"not true within {timeout} s"
        pause.wait(step)
    return time.monotonic() - start


class StoreContract:
    """Tests of the SessionStore contract (DESIGN.md, Round 4), run against each store."""

    # -- versions ----------------------------------------------------------------------

    def test_a_new_id_saves_as_version_1_and_loads_back_equal(self, store: SessionStore):
        data = {"format_version": 1, "text": "héllo ✓", "nested": {"list": [1, 2.5, None, True]}}
        assert store.load("chat-1") is None
        assert store.save("chat-1", data) == 1
        assert store.load("chat-1") == StoredSession(data, 1)

    def test_a_save_from_the_loaded_version_gets_the_next_version(self, store):
        store.save("chat-1", {"n": 1})
        assert store.save("chat-1", {"n": 2}, expected_version=1) == 2
        assert store.save("chat-1", {"n": 3}, expected_version=2) == 3
        assert store.load("chat-1") == StoredSession({"n": 3}, 3)

    def test_saving_an_existing_id_as_new_conflicts_and_writes_nothing(self, store):
        store.save("chat-1", {"n": 1})
        with pytest.raises(SessionConflictError) as caught:
            store.save("chat-1", {"n": 2})
        assert (caught.value.session_id, caught.value.expected_version, caught.value.actual_version) == \
            ("chat-1", None, 1)
        assert "chat-1" in str(caught.value) and "load it again" in str(caught.value)
        assert store.load("chat-1") == StoredSession({"n": 1}, 1)

    def test_a_save_from_a_stale_version_conflicts_and_writes_nothing(self, store):
        store.save("chat-1", {"n": 1})
        store.save("chat-1", {"n": 2}, expected_version=1)
        with pytest.raises(SessionConflictError) as caught:
            store.save("chat-1", {"n": "stale"}, expected_version=1)
        assert (caught.value.expected_version, caught.value.actual_version) == (1, 2)
        assert isinstance(caught.value, AgentError)
        assert store.load("chat-1") == StoredSession({"n": 2}, 2)

    def test_a_save_expecting_a_version_of_a_missing_id_conflicts(self, store):
        with pytest.raises(SessionConflictError) as caught:
            store.save("nobody", {"n": 1}, expected_version=3)
        assert caught.value.actual_version is None
        assert store.load("nobody") is None

    def test_delete_says_whether_there_was_a_session(self, store):
        store.save("chat-1", {"n": 1})
        assert store.delete("chat-1") is True
        assert store.load("chat-1") is None
        assert store.delete("chat-1") is False
        assert store.delete("never-saved") is False

    def test_versions_never_repeat_for_an_id_even_after_a_delete(self, store, make_store):
        store.save("chat-1", {"n": 1})
        store.save("chat-1", {"n": 2}, expected_version=1)
        assert store.delete("chat-1")
        assert store.save("chat-1", {"n": "again"}) == 3
        assert store.delete("chat-1")
        assert make_store().save("chat-1", {"n": "and again"}) == 4
        with pytest.raises(SessionConflictError):
            store.save("chat-1", {"n": "stale"}, expected_version=2)  # the old version 2 names no data now

    def test_ids_are_independent_and_another_store_object_sees_the_saves(self, store, make_store):
        store.save("a", {"who": "a"})
        store.save("b", {"who": "b"})
        other = make_store()
        assert other.load("a") == StoredSession({"who": "a"}, 1)
        assert other.save("b", {"who": "b2"}, expected_version=1) == 2
        assert store.load("b") == StoredSession({"who": "b2"}, 2)
        assert store.load("a").version == 1

    def test_of_many_threads_saving_from_one_version_exactly_one_wins(self, store, make_store):
        store.save("chat-1", {"n": 0})
        stores = [store] + [make_store() for _ in range(3)]
        barrier = threading.Barrier(8)
        results: List[object] = [None] * 8

        def save(i: int) -> None:
            barrier.wait(CHILD_TIMEOUT)
            try:
                results[i] = stores[i % 4].save("chat-1", {"n": i}, expected_version=1)
            except SessionConflictError as exc:
                results[i] = exc

        threads = [threading.Thread(target=save, args=(i,), name=f"test-saver-{i}") for i in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(CHILD_TIMEOUT)
            assert not t.is_alive()
        winners = [i for i, r in enumerate(results) if r == 2]
        assert len(winners) == 1
        assert all(isinstance(r, SessionConflictError) for i, r in enumerate(results) if i != winners[0])
        assert store.load("chat-1") == StoredSession({"n": winners[0]}, 2)

    def test_bad_arguments_are_refused_before_anything_is_written(self, store):
        with pytest.raises(TypeError, match="session_id"):
            store.save(42, {"n": 1})
        with pytest.raises(ValueError, match="session_id"):
            store.load("")
        with pytest.raises(TypeError, match="not JSON-ready"):
            store.save("chat-1", {"n": object()})
        with pytest.raises(TypeError, match="mapping"):
            store.save("chat-1", ["not", "a", "dict"])
        with pytest.raises(TypeError, match="expected_version"):
            store.save("chat-1", {"n": 1}, expected_version="1")
        with pytest.raises(ValueError, match="ttl"):
            store.lease("chat-1", ttl=0)
        assert store.load("chat-1") is None

    # -- expiry ------------------------------------------------------------------------

    def test_a_session_expires_ttl_seconds_after_its_last_save(self, make_store):
        ttl = 1.0
        store = make_store(ttl=ttl)
        saved_at = time.monotonic()
        store.save("chat-1", {"n": 1})
        assert store.load("chat-1") == StoredSession({"n": 1}, 1)
        wait_for(lambda: store.load("chat-1") is None, timeout=ttl + 5.0)
        assert time.monotonic() - saved_at >= ttl * 0.9  # not before its time
        # Expired counts as new, and its versions are not reused.
        with pytest.raises(SessionConflictError):
            store.save("chat-1", {"n": 2}, expected_version=1)
        assert store.save("chat-1", {"n": 2}) == 2
        assert store.delete("chat-1") is True

    def test_without_a_ttl_sessions_stay(self, store):
        store.save("chat-1", {"n": 1})
        threading.Event().wait(0.2)  # time passing is the behaviour under test
        assert store.load("chat-1") is not None

    # -- leases ------------------------------------------------------------------------

    def test_a_lease_blocks_other_lease_objects_until_it_is_released(self, store, make_store):
        other = make_store()
        with store.lease("chat-1", ttl=5) as lease:
            assert lease.held
            with pytest.raises(SessionBusyError) as caught:
                with store.lease("chat-1", ttl=5):
                    pass
            assert caught.value.session_id == "chat-1" and "chat-1" in str(caught.value)
            with pytest.raises(SessionBusyError):
                other.lease("chat-1").__enter__()
            with other.lease("chat-2", ttl=5):  # another session is independent
                pass
        assert not lease.held
        with other.lease("chat-1", ttl=5) as again:
            assert again.held

    @pytest.mark.parametrize("ttl", [1e12, 1e-9, 0.49, 86_400.5, float("inf"), -1, True])
    def test_a_lease_ttl_outside_half_a_second_to_a_day_is_refused(self, store, ttl):
        with pytest.raises(ValueError, match="from 0.5 to 86,400"):
            store.lease("chat-1", ttl=ttl)
        assert lease_threads() == []

    def test_a_lease_ttl_of_half_a_second_or_a_day_is_taken(self, store):
        for ttl in (0.5, 86_400):
            with store.lease("chat-1", ttl=ttl) as lease:
                assert lease.held and lease.ttl == ttl
        assert lease_threads() == []

    def test_a_lease_does_not_guard_saves_versions_do(self, store):
        with store.lease("chat-1", ttl=5):
            assert store.save("chat-1", {"n": 1}) == 1
        assert store.save("chat-1", {"n": 2}, expected_version=1) == 2

    def test_a_lease_object_is_entered_once(self, store):
        lease = store.lease("chat-1", ttl=5)
        with lease:
            pass
        with pytest.raises(AgentError, match="already entered"):
            lease.__enter__()

    def test_a_lease_is_released_when_its_block_raises(self, store):
        with pytest.raises(RuntimeError):
            with store.lease("chat-1", ttl=5):
                raise RuntimeError("the turn failed")
        with store.lease("chat-1", ttl=5):
            pass

    def test_a_held_lease_is_renewed_by_its_thread_which_leaving_stops_and_joins(self, store):
        ttl = 1.0
        assert lease_threads() == []
        with store.lease("chat-1", ttl=ttl) as lease:
            assert len(lease_threads()) == 1
            threading.Event().wait(ttl * 2.5)  # time passing is the behaviour under test
            assert lease.held and not lease.lost
            with pytest.raises(SessionBusyError):
                with store.lease("chat-1", ttl=ttl):
                    pass
        assert lease_threads() == []

    def test_a_lease_that_expired_and_was_taken_over_is_lost_and_left_to_the_new_holder(
            self, store, make_store, expire_lease):
        first = store.lease("chat-1", ttl=0.6)
        with first:
            expire_lease("chat-1")
            with make_store().lease("chat-1", ttl=30) as second:
                wait_for(lambda: first.lost, timeout=5.0)  # its next renewal finds the new holder
                assert not first.held and second.held
        assert lease_threads() == []
        with make_store().lease("chat-1", ttl=30):  # the second released it; the first never touched it
            pass

    def test_leases_hold_across_processes(self, store, child_location):
        holder = Child(*child_location, "lease", "chat-1", "10")
        try:
            assert holder.line() == "held"
            with pytest.raises(SessionBusyError):
                with store.lease("chat-1", ttl=10):
                    pass
            second = Child(*child_location, "lease", "chat-1", "10")
            assert second.line() == "busy"
            assert second.close() == 0
            holder.send("release")
            assert holder.line() == "released"
        finally:
            assert holder.close() == 0
        with store.lease("chat-1", ttl=10) as lease:
            assert lease.held
            refused = Child(*child_location, "lease", "chat-1", "10")
            assert refused.line() == "busy"
            assert refused.close() == 0

    def test_a_holder_killed_with_sigkill_stops_blocking_within_ttl(self, store, child_location):
        ttl = 1.5
        holder = Child(*child_location, "lease", "chat-1", str(ttl))
        try:
            assert holder.line() == "held"
            holder.kill()
            killed_at = time.monotonic()
            assert holder.close() == -signal.SIGKILL
        finally:
            if holder.proc.poll() is None:
                holder.kill()
                holder.close()
        # At least 2/3 of the ttl was left at the kill (renewed every ttl/3): still busy now.
        with pytest.raises(SessionBusyError):
            with store.lease("chat-1", ttl=ttl):
                pass

        def free() -> bool:
            try:
                with store.lease("chat-1", ttl=ttl):
                    return True
            except SessionBusyError:
                return False

        wait_for(free, timeout=ttl + 5.0)
        assert time.monotonic() - killed_at <= ttl + 1.0

    # -- sessions ----------------------------------------------------------------------

    def test_a_session_round_trips_through_the_store(self, store):
        provider = MockProvider([MockProvider.text("Noted: Ada.")])
        session = AgentSession(provider, CycleConfig(max_tokens=99), system_prompt="Remember names.")
        session.submit_turn("My name is Ada.")
        assert session.save(store, "chat-1") == 1

        second = MockProvider([MockProvider.text("You are Ada.")])
        loaded = AgentSession.load(store, "chat-1", provider=second)
        assert loaded.to_dict() == session.to_dict()
        assert loaded.submit_turn("Who am I?").message.text == "You are Ada."
        assert [m.text for m in second.requests[0].messages] == ["My name is Ada.", "Noted: Ada.", "Who am I?"]
        assert second.requests[0].system == "Remember names."
        assert loaded.save(store, "chat-1") == 2
        assert loaded.save(store, "chat-1") == 3  # it remembers the version it saved
        assert store.load("chat-1").data["turn_index"] == 2

    def test_a_stale_session_save_raises_a_conflict_and_keeps_the_newer_turn(self, store):
        AgentSession(MockProvider([])).save(store, "chat-1")
        first = AgentSession.load(store, "chat-1", provider=MockProvider([MockProvider.text("one")]))
        second = AgentSession.load(store, "chat-1", provider=MockProvider([MockProvider.text("two")]))
        first.submit_turn("first")
        second.submit_turn("second")
        assert first.save(store, "chat-1") == 2
        with pytest.raises(SessionConflictError):
            second.save(store, "chat-1")
        assert _texts(store, "chat-1") == ["first", "one"]

    def test_a_session_never_stored_under_an_id_saves_it_as_new(self, store):
        store.save("chat-1", AgentSession(MockProvider([])).to_dict())
        with pytest.raises(SessionConflictError):
            AgentSession(MockProvider([])).save(store, "chat-1")
        loaded = AgentSession.load(store, "chat-1", provider=MockProvider([]))
        assert loaded.save(store, "chat-1") == 2
        assert loaded.save(store, "chat-2") == 1  # another id: new there

    def test_loading_a_missing_session_raises_session_not_found_a_key_error(self, store):
        with pytest.raises(SessionNotFoundError) as caught:
            AgentSession.load(store, "nobody", provider=MockProvider([]))
        assert isinstance(caught.value, KeyError) and isinstance(caught.value, AgentError)
        assert caught.value.session_id == "nobody"
        assert str(caught.value).startswith("no session 'nobody' in ")

    def test_two_processes_saving_one_session_one_conflicts_and_no_turn_is_lost(self, store, child_location):
        AgentSession(MockProvider([])).save(store, "chat-1")
        children = [Child(*child_location, "turn", "chat-1", f"turn from child {i}") for i in range(2)]
        try:
            assert [c.line() for c in children] == ["loaded 1", "loaded 1"]
            for c in children:
                c.send("go")
            outcomes = [[c.line()] for c in children]
            for c, outcome in zip(children, outcomes):
                if outcome[0] == "conflict":
                    outcome.append(c.line())
        finally:
            codes = [c.close() for c in children]
        assert codes == [0, 0]
        assert sorted(o[0] for o in outcomes) == ["conflict", "saved 2"]
        assert ["conflict", "saved 3"] in outcomes
        stored = store.load("chat-1")
        assert stored.version == 3 and stored.data["turn_index"] == 2
        texts = _texts(store, "chat-1")
        assert len(texts) == 4 and sorted(texts[0::2]) == ["turn from child 0", "turn from child 1"]


def _texts(store: SessionStore, session_id: str) -> List[str]:
    """Return the texts of the stored session's messages."""
    return [m.text for m in AgentSession.load(store, session_id, provider=MockProvider([])).messages()]
