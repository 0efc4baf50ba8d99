"""Keep sessions in SQLite: each request loads its conversation, runs a turn and saves it.

``SqliteSessionStore`` is one file shared by every thread and process on the
machine. A lease keeps two requests of one conversation from running turns
at once; versions make sure a stale copy never overwrites a newer one.
"""

import tempfile
from pathlib import Path

from agcore_sync import (
    AgentSession,
    MockProvider,
    SessionBusyError,
    SessionConflictError,
    SessionNotFoundError,
    SqliteSessionStore,
)


def chat(store, conversation_id, message, provider):
    """Handle one chat request: the next turn of one conversation."""
    with store.lease(conversation_id, ttl=30):  # SessionBusyError while another request runs a turn
        try:
            session = AgentSession.load(store, conversation_id, provider=provider)
        except SessionNotFoundError:
            session = AgentSession(provider, system_prompt="Remember what the user tells you.")
        reply = session.submit_turn(message)
        version = session.save(store, conversation_id)  # SessionConflictError if someone saved meanwhile
    return reply.message.text, version


with tempfile.TemporaryDirectory() as tmp:
    with SqliteSessionStore(Path(tmp) / "sessions.db", ttl=7 * 24 * 3600) as store:
        print(chat(store, "chat-42", "My name is Ada.", MockProvider([MockProvider.text("Noted, Ada.")])))
        print(chat(store, "chat-42", "What is my name?", MockProvider([MockProvider.text("You are Ada.")])))

        # A second request for the same conversation while a turn runs: refused, answer 409.
        with store.lease("chat-42", ttl=30):
            try:
                chat(store, "chat-42", "Hello?", MockProvider([]))
            except SessionBusyError as exc:
                print("busy:", exc.session_id)

        # Two copies of one session: the first save wins, the stale one is refused.
        first = AgentSession.load(store, "chat-42", provider=MockProvider([MockProvider.text("one")]))
        stale = AgentSession.load(store, "chat-42", provider=MockProvider([MockProvider.text("two")]))
        first.submit_turn("First?")
        stale.submit_turn("Second?")
        print("saved version", first.save(store, "chat-42"))
        try:
            stale.save(store, "chat-42")
        except SessionConflictError as exc:
            print("conflict: stored", exc.actual_version, "expected", exc.expected_version)

        stored = store.load("chat-42")
        print("stored version", stored.version, "after", stored.data["turn_index"], "turns")
        assert stored.version == 3 and stored.data["turn_index"] == 3
