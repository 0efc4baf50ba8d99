"""SessionLease on its own: renewal, loss, failures of the backend, release.

The stores' real leases are tested by the store contract
(``tests/support/store_contract.py``); here the backend is a small recording
double of the three-operation :class:`LeaseBackend` seam, so that failures a
real backend gives only by accident (a renewal that raises, a release that
raises) can be forced.
"""

from __future__ import annotations

import logging
import threading

import pytest

from agcore_sync import AgentError, SessionBusyError, SessionLease, SqliteSessionStore
from tests.support.store_contract import lease_threads, wait_for


class Backend:
    """Records calls; ``holder`` is the token holding the lease; failures are switched on by the test."""

    def __init__(self) -> None:
        self.holder = None
        self.calls = []
        self.renew_error = None
        self.release_error = None
        self.renewed = threading.Event()

    def acquire_lease(self, session_id, token, ttl):
        self.calls.append(("acquire", session_id, ttl))
        if self.holder not in (None, token):
            return False
        self.holder = token
        return True

    def renew_lease(self, session_id, token, ttl):
        self.calls.append(("renew", session_id, ttl))
        self.renewed.set()
        if self.renew_error is not None:
            raise self.renew_error
        return self.holder == token

    def release_lease(self, session_id, token):
        self.calls.append(("release", session_id))
        if self.release_error is not None:
            raise self.release_error
        if self.holder == token:
            self.holder = None


def test_a_lease_renews_while_held_and_releases_at_exit():
    backend = Backend()
    with SessionLease(backend, "chat-1", ttl=0.5) as lease:
        assert backend.renewed.wait(5.0)
        assert lease.held and repr(lease) == "SessionLease(session_id='chat-1', ttl=0.5, held)"
    assert backend.calls[0] == ("acquire", "chat-1", 0.5)
    assert ("renew", "chat-1", 0.5) in backend.calls
    assert backend.calls[-1] == ("release", "chat-1") and backend.holder is None
    assert lease_threads() == [] and not lease.held


def test_a_busy_lease_raises_and_starts_no_thread():
    backend = Backend()
    backend.holder = "someone else"
    lease = SessionLease(backend, "chat-1", ttl=5)
    with pytest.raises(SessionBusyError) as caught:
        lease.__enter__()
    assert caught.value.session_id == "chat-1"
    assert lease_threads() == [] and not lease.held
    assert [c[0] for c in backend.calls] == ["acquire"]


def test_a_lease_taken_over_by_another_holder_is_lost_and_not_released():
    backend = Backend()
    with SessionLease(backend, "chat-1", ttl=0.5) as lease:
        backend.holder = "the new holder"  # as if this process had stalled past its ttl
        wait_for(lambda: lease.lost, timeout=5.0)
        assert not lease.held
    assert lease_threads() == []
    assert backend.holder == "the new holder"
    assert "release" not in [c[0] for c in backend.calls]


def test_a_renewal_that_fails_is_logged_and_retried_then_the_lease_counts_as_lost(caplog):
    backend = Backend()
    backend.renew_error = ConnectionError("backend unreachable")
    with caplog.at_level(logging.WARNING, logger="agcore_sync.store"):
        with SessionLease(backend, "chat-1", ttl=0.5) as lease:
            waited = wait_for(lambda: lease.lost, timeout=5.0)
            assert waited >= 0.2  # kept while a renewal could still be in time
    renewals = [c for c in backend.calls if c[0] == "renew"]
    assert len(renewals) >= 2
    assert "could not renew the lease on session 'chat-1'" in caplog.text
    assert "backend unreachable" in caplog.text


def test_a_failing_release_raises_when_the_block_succeeded():
    backend = Backend()
    backend.release_error = ConnectionError("gone")
    with pytest.raises(ConnectionError, match="gone"):
        with SessionLease(backend, "chat-1", ttl=5):
            pass
    assert lease_threads() == []


def test_a_failing_release_never_hides_the_error_leaving_the_block(caplog):
    backend = Backend()
    backend.release_error = ConnectionError("gone")
    with caplog.at_level(logging.WARNING, logger="agcore_sync.store"):
        with pytest.raises(ValueError, match="the turn failed"):
            with SessionLease(backend, "chat-1", ttl=5):
                raise ValueError("the turn failed")
    assert "could not release the lease on session 'chat-1'" in caplog.text


def test_a_lease_checks_its_arguments():
    with pytest.raises(ValueError, match="ttl"):
        SessionLease(Backend(), "chat-1", ttl=float("nan"))
    with pytest.raises(TypeError, match="session_id"):
        SessionLease(Backend(), None)
    lease = SessionLease(Backend(), "chat-1", ttl=5)
    with lease:
        with pytest.raises(AgentError, match="already entered"):
            lease.__enter__()


def test_a_lease_of_a_closed_sqlite_store_still_ends_cleanly(tmp_path):
    store = SqliteSessionStore(tmp_path / "s.db")
    lease = store.lease("chat-1", ttl=5)
    lease.__enter__()
    store.close()
    with pytest.raises(AgentError, match="closed"):
        lease.__exit__(None, None, None)
    assert lease_threads() == []
