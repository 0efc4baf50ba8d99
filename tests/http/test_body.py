"""The shared body reader: chunks as they come, then release (bounded) or discard; and masking.

Against the keep-alive server on 127.0.0.1, counting connections: a released
body leaves its connection for the next request, a discarded one does not.
"""

from __future__ import annotations

import threading

from agcore_sync._http.body import DRAIN_LIMIT, BodyReader, release
from agcore_sync._http.connection import DEFAULT_POOL_SIZE, new_session
from agcore_sync._http.masking import Masker
from tests.support.keepalive_server import KeepAliveServer, Reply

#: The client's read timeout: longer than the server's bound on holding a
#: body back (STEP_WAIT_TIMEOUT), so a client that waited for the server would
#: see the server give up first.
CLIENT_TIMEOUT = 30.0

MARKER = b"data: [DONE]\n\n"


def _get(session, url):
    return session.get(url, stream=True, timeout=CLIENT_TIMEOUT)


def _read_to_marker(reader: BodyReader) -> bytes:
    seen = b""
    for chunk in reader:
        seen += chunk
        if seen.endswith(MARKER):
            return seen
    raise AssertionError(f"no end marker in {seen!r}")


def test_a_released_body_leaves_its_connection_for_the_next_request():
    with KeepAliveServer(lambda request: Reply([b"data: 1\n\n", MARKER, b": trailing comment\n\n"])) as server:
        session = new_session()
        try:
            for _ in range(3):
                reader = BodyReader(_get(session, server.url))
                assert _read_to_marker(reader) == b"data: 1\n\n" + MARKER
                assert reader.release() is True
                assert reader.ended
        finally:
            session.close()
    assert [r.connection for r in server.requests] == [1, 1, 1]


def test_a_body_with_more_than_the_drain_limit_left_is_closed_not_read():
    padding = b": " + b"x" * (DRAIN_LIMIT + 10) + b"\n\n"
    replies = iter([Reply([MARKER, padding]), Reply([MARKER])])
    with KeepAliveServer(lambda request: next(replies)) as server:
        session = new_session()
        try:
            reader = BodyReader(_get(session, server.url))
            _read_to_marker(reader)
            assert reader.release() is False
            reader = BodyReader(_get(session, server.url))
            _read_to_marker(reader)
            assert reader.release() is True
        finally:
            session.close()
    assert [r.connection for r in server.requests] == [1, 2]


def test_release_does_not_wait_for_a_server_that_holds_the_end_of_the_body_back():
    gate = threading.Event()
    replies = iter([Reply([MARKER, gate, b": late\n\n"]), Reply([MARKER])])
    with KeepAliveServer(lambda request: next(replies)) as server:
        session = new_session()
        try:
            reader = BodyReader(_get(session, server.url))
            _read_to_marker(reader)
            assert reader.release() is False
            # Released while the server still waits on the gate: the drain's
            # bound ended it, not the server.
            assert not server.requests[0].finished
            gate.set()
            reader = BodyReader(_get(session, server.url))
            _read_to_marker(reader)
            assert reader.release() is True
        finally:
            session.close()
    assert [r.connection for r in server.requests] == [1, 2]


def test_a_discarded_body_closes_its_connection_and_release_after_discard_does_nothing():
    with KeepAliveServer(lambda request: Reply([b"data: 1\n\n", MARKER])) as server:
        session = new_session()
        try:
            reader = BodyReader(_get(session, server.url))
            next(iter(reader))
            reader.discard()
            assert reader.release() is False
            release(_get(session, server.url))
            release(_get(session, server.url))
        finally:
            session.close()
    assert [r.connection for r in server.requests] == [1, 2, 2]


def test_a_body_framed_to_close_its_connection_is_closed_without_draining():
    replies = iter([Reply([MARKER], headers={"Connection": "close"}, length=True), Reply([MARKER])])
    with KeepAliveServer(lambda request: next(replies)) as server:
        session = new_session()
        try:
            assert release(_get(session, server.url)) is False
            assert release(_get(session, server.url)) is True
        finally:
            session.close()
    assert [r.connection for r in server.requests] == [1, 2]


def test_new_sessions_keep_the_default_pool_size_per_host():
    session = new_session()
    try:
        adapter = session.get_adapter("https://api.openai.com/v1")
        assert adapter._pool_maxsize == DEFAULT_POOL_SIZE == 1000
    finally:
        session.close()


def test_a_masker_hides_its_secret_in_text_json_and_its_own_repr():
    masker = Masker("sk-secret")
    assert "sk-secret" not in repr(masker)
    assert masker.text("key sk-secret here") == "key *** here"
    assert masker.json({"sk-secret": ["a sk-secret", {"k": "sk-secret"}, 3, None]}) == {
        "***": ["a ***", {"k": "***"}, 3, None]}
    value = {"a": "sk-secret"}
    assert Masker(None).json(value) is value and Masker("").text("sk-secret") == "sk-secret"
