"""SqliteSessionStore: the shared store contract, plus the file itself (schema, corruption, WAL, expiry)."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

import pytest

from agcore_sync import AgentSession, MockProvider, SessionStoreError, SqliteSessionStore, StoredSession
from agcore_sync.agent import sqlite_store
from tests.support.store_contract import StoreContract


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "sessions.db"


@pytest.fixture
def store(db_path):
    with SqliteSessionStore(db_path) as store:
        yield store


@pytest.fixture
def make_store(db_path):
    made = []

    def make(ttl=None):
        made.append(SqliteSessionStore(db_path, ttl=ttl))
        return made[-1]

    yield make
    for store in made:
        store.close()


@pytest.fixture
def child_location(db_path, store):
    return "sqlite", str(db_path)


@pytest.fixture
def expire_lease(db_path):
    def expire(session_id):
        conn = sqlite3.connect(db_path)
        try:
            conn.execute("UPDATE agcore_leases SET expires_at = 0 WHERE id = ?", (session_id,))
            conn.commit()
        finally:
            conn.close()

    return expire


class TestSqliteStoreContract(StoreContract):
    pass


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _siblings(path: Path) -> list:
    return sorted(p.name for p in path.parent.iterdir())


def test_a_new_file_becomes_a_wal_store_marked_with_its_schema(db_path):
    SqliteSessionStore(db_path).close()
    conn = sqlite3.connect(db_path)
    try:
        assert conn.execute("PRAGMA application_id").fetchone()[0] == sqlite_store.APPLICATION_ID
        assert conn.execute("PRAGMA user_version").fetchone()[0] == sqlite_store.SCHEMA_VERSION
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    finally:
        conn.close()


def test_an_empty_file_becomes_a_store(db_path):
    db_path.write_bytes(b"")
    with SqliteSessionStore(db_path) as store:
        assert store.save("a", {"n": 1}) == 1


def test_reopening_a_store_keeps_its_sessions_and_versions(db_path):
    with SqliteSessionStore(db_path) as store:
        store.save("a", {"n": 1})
        store.delete("a")
    with SqliteSessionStore(str(db_path)) as store:
        assert store.load("a") is None
        assert store.save("a", {"n": 2}) == 2


def test_a_file_that_is_not_sqlite_is_refused_naming_the_path_and_left_unchanged(db_path):
    db_path.write_text("these are my notes, not a database\n" * 200)
    before = _digest(db_path)
    with pytest.raises(SessionStoreError) as caught:
        SqliteSessionStore(db_path)
    assert caught.value.path == str(db_path)
    assert str(db_path) in str(caught.value) and "not an SQLite database" in str(caught.value)
    assert _digest(db_path) == before
    assert _siblings(db_path) == ["sessions.db"]


def test_an_sqlite_database_of_another_program_is_refused_and_left_unchanged(db_path):
    conn = sqlite3.connect(db_path)
    conn.execute("CREATE TABLE invoices (id INTEGER PRIMARY KEY, total REAL)")
    conn.execute("INSERT INTO invoices (total) VALUES (12.5)")
    conn.commit()
    conn.close()
    before = _digest(db_path)
    with pytest.raises(SessionStoreError, match="not an agcore_sync session store") as caught:
        SqliteSessionStore(db_path)
    assert str(db_path) in str(caught.value)
    assert _digest(db_path) == before
    assert _siblings(db_path) == ["sessions.db"]


def test_a_store_of_a_newer_schema_is_refused_and_left_unchanged(db_path):
    with SqliteSessionStore(db_path) as store:
        store.save("a", {"n": 1})
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {sqlite_store.SCHEMA_VERSION + 1}")
    conn.commit()
    conn.close()
    before = _digest(db_path)
    with pytest.raises(SessionStoreError, match="newer") as caught:
        SqliteSessionStore(db_path)
    assert caught.value.path == str(db_path) and "upgrade agcore_sync" in str(caught.value)
    assert _digest(db_path) == before


def test_a_corrupt_stored_session_is_a_store_error_naming_it_and_is_not_overwritten(store, db_path):
    store.save("a", {"n": 1})
    conn = sqlite3.connect(db_path)
    conn.execute("UPDATE agcore_sessions SET data = '{\"n\": 1, trunc' WHERE id = 'a'")
    conn.commit()
    conn.close()
    with pytest.raises(SessionStoreError) as caught:
        store.load("a")
    assert caught.value.session_id == "a" and caught.value.path == str(db_path)
    assert "'a'" in str(caught.value) and "corrupt" in str(caught.value) and "delete" in str(caught.value)
    with pytest.raises(SessionStoreError, match="corrupt"):
        AgentSession.load(store, "a", provider=MockProvider([]))
    conn = sqlite3.connect(db_path)
    assert conn.execute("SELECT data FROM agcore_sessions WHERE id = 'a'").fetchone()[0] == '{"n": 1, trunc'
    conn.close()
    assert store.delete("a") is True  # the way out the message names


def corrupt_row(db_path, column, value):
    conn = sqlite3.connect(db_path)
    conn.execute(f"UPDATE agcore_sessions SET {column} = ? WHERE id = 'a'", (value,))
    conn.commit()
    conn.close()


def stored_row(db_path):
    conn = sqlite3.connect(db_path)
    try:
        return conn.execute("SELECT data, version FROM agcore_sessions WHERE id = 'a'").fetchone()
    finally:
        conn.close()


@pytest.mark.parametrize("column, value", [("version", "abc"), ("version", 1.5), ("version", 0), ("version", "١"),
                                           ("data", '{"n": 1, trunc'), ("data", "[1, 2]"),
                                           pytest.param("data", "[" * 100_000 + "]" * 100_000, id="data-too-deep")])
def test_a_corrupt_version_or_data_is_a_store_error_on_load_and_on_save_and_delete_removes_it(
        store, db_path, column, value):
    store.save("a", {"n": 1})
    corrupt_row(db_path, column, value)
    before = stored_row(db_path)
    for call in (lambda: store.load("a"), lambda: store.save("a", {"n": 2}, expected_version=1),
                 lambda: store.save("a", {"n": 2}), lambda: AgentSession.load(store, "a", provider=MockProvider([]))):
        with pytest.raises(SessionStoreError, match="corrupt") as caught:
            call()
        assert caught.value.session_id == "a" and "store.delete('a')" in str(caught.value)
    assert stored_row(db_path) == before  # never overwritten
    assert store.delete("a") is True
    assert store.load("a") is None
    assert store.save("a", {"n": 3}) == 2  # versions still never repeat


def test_a_stored_session_that_is_json_but_not_a_session_is_a_store_error(store):
    store.save("a", {"format_version": 1, "slots": "not slots"})
    store.save("b", {"format_version": 99})
    with pytest.raises(SessionStoreError, match="'a'") as caught:
        AgentSession.load(store, "a", provider=MockProvider([]))
    assert caught.value.session_id == "a"
    with pytest.raises(SessionStoreError, match="format_version 99"):
        AgentSession.load(store, "b", provider=MockProvider([]))
    assert store.load("b") == StoredSession({"format_version": 99}, 1)


def test_expiry_follows_the_clock_and_purge_removes_expired_sessions(db_path, monkeypatch):
    now = [1000.0]
    monkeypatch.setattr(sqlite_store, "_now", lambda: now[0])
    with SqliteSessionStore(db_path, ttl=60) as store:
        store.save("old", {"n": 1})
        now[0] += 30
        store.save("new", {"n": 1})
        now[0] += 31  # "old" was saved 61 s ago, "new" 31 s ago
        assert store.load("old") is None and store.load("new") is not None
        assert store.delete("old") is False  # an expired session does not count
        assert store.purge_expired() == 0  # delete() removed it already
        store.save("old", {"n": 2})
        assert store.save("new", {"n": 2}, expected_version=1) == 2  # a save renews the ttl
        now[0] += 59
        assert store.load("new") is not None
        now[0] += 2
        assert store.purge_expired() == 2


def test_a_closed_store_raises_a_store_error(db_path):
    store = SqliteSessionStore(db_path)
    store.close()
    store.close()  # idempotent
    with pytest.raises(SessionStoreError, match="closed"):
        store.load("a")


def test_constructor_arguments_are_checked(db_path):
    with pytest.raises(TypeError, match="path"):
        SqliteSessionStore(42)
    with pytest.raises(ValueError, match="ttl"):
        SqliteSessionStore(db_path, ttl=-1)
    with pytest.raises(ValueError, match="busy_timeout"):
        SqliteSessionStore(db_path, busy_timeout=0)
    assert not db_path.exists()


def test_a_memory_store_works_in_one_object():
    with SqliteSessionStore(":memory:") as store:
        assert store.save("a", {"n": 1}) == 1
        assert store.load("a").version == 1
        assert repr(store) == "SqliteSessionStore(':memory:')"


def test_load_refuses_a_wrong_provider_as_a_type_error_not_a_corrupt_session(store):
    AgentSession(MockProvider([])).save(store, "a")
    with pytest.raises(TypeError, match="provider"):
        AgentSession.load(store, "a", provider="gpt-4o")
    assert AgentSession.load(store, "a", provider=MockProvider([])).turn_index == 0
