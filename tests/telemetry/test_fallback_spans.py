"""With telemetry on, a fallback's chat span names the provider that answered and notes each failed attempt."""

from __future__ import annotations

from agcore_sync import AgentSession, FallbackProvider, MockProvider, RateLimitError


def test_the_chat_span_names_the_answering_provider_and_has_an_event_per_failed_attempt(otel):
    first = MockProvider([RateLimitError("429", status_code=429)], model="gpt-4o")
    second = MockProvider([MockProvider.text("ok", model="claude-haiku-4-5")], model="claude-haiku-4-5")
    session = AgentSession(FallbackProvider([first, second]))
    with session.submit_turn_stream("hi") as stream:
        list(stream)
    (chat,) = [s for s in otel.spans() if s.name.startswith("chat")]
    assert chat.attributes["gen_ai.provider.name"] == "mock"
    assert chat.attributes["agcore.fallback.index"] == 1
    assert chat.attributes["gen_ai.response.model"] == "claude-haiku-4-5"
    (event,) = [e for e in chat.events if e.name == "agcore.fallback"]
    assert event.attributes["error.type"] == "RateLimitError" and event.attributes["agcore.fallback.index"] == 0
