"""A second process for the store tests, driven line by line over stdin/stdout.

    python -m tests.support.store_child sqlite PATH <command> ...
    python -m tests.support.store_child redis URL <command> ...

Commands (each prints what happened, one word first, and flushes, so the
parent waits on the pipe, never on a clock):

- ``lease SESSION TTL``: take the lease; print ``held`` (then hold it until a
  line ``release`` arrives, print ``released``) or ``busy``.
- ``turn SESSION TEXT``: load the session, run one turn with a scripted
  model, print ``loaded VERSION``, wait for a line ``go``, save; on a
  conflict print ``conflict``, load again, redo the turn and save; finally
  print ``saved VERSION``.
"""

from __future__ import annotations

import sys

from agcore_sync import AgentSession, MockProvider, SessionConflictError, SessionStore


def _store(kind: str, location: str) -> SessionStore:
    if kind == "sqlite":
        from agcore_sync import SqliteSessionStore

        return SqliteSessionStore(location)
    import redis

    from agcore_sync.contrib.redis import RedisSessionStore

    return RedisSessionStore(redis.Redis.from_url(location))


def _say(*words: object) -> None:
    print(*words, flush=True)


def _expect(line: str) -> None:
    got = sys.stdin.readline().strip()
    if got != line:
        raise SystemExit(f"expected {line!r} on stdin, got {got!r}")


def _lease(store: SessionStore, session_id: str, ttl: str) -> None:
    from agcore_sync import SessionBusyError

    try:
        with store.lease(session_id, ttl=float(ttl)):
            _say("held")
            _expect("release")
    except SessionBusyError:
        _say("busy")
        return
    _say("released")


def _run_turn(store: SessionStore, session_id: str, text: str) -> AgentSession:
    session = AgentSession.load(store, session_id, provider=MockProvider([MockProvider.text(f"noted: {text}")]))
    session.submit_turn(text)
    return session


def _turn(store: SessionStore, session_id: str, text: str) -> None:
    loaded = store.load(session_id).version  # what load() saw: nothing saves in between until "go"
    session = _run_turn(store, session_id, text)
    _say("loaded", loaded)
    _expect("go")
    try:
        version = session.save(store, session_id)
    except SessionConflictError:
        _say("conflict")
        version = _run_turn(store, session_id, text).save(store, session_id)
    _say("saved", version)


def main(argv: list) -> None:
    kind, location, command, *args = argv
    store = _store(kind, location)
    try:
        {"lease": _lease, "turn": _turn}[command](store, *args)
    finally:
        store.close()


if __name__ == "__main__":
    main(sys.argv[1:])
