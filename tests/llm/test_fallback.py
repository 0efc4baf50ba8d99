"""FallbackProvider: the order, when it falls back, streams only before their first event, circuits, costs."""

from __future__ import annotations

import json

import pytest

from agcore_sync import (
    AgentSession,
    AllProvidersFailedError,
    AnthropicProvider,
    AuthenticationError,
    CircuitBreaker,
    CircuitOpenError,
    FallbackProvider,
    LlmConnectionError,
    LlmTimeoutError,
    Message,
    MessageComplete,
    MessageRequest,
    MessageStart,
    MockProvider,
    OpenAIProvider,
    ProviderError,
    RateLimitError,
    ServerError,
    TextDelta,
    Usage,
)
from agcore_sync.llm.cost import cost_usd
from tests.support.wire import (
    ANTHROPIC_WIRE_MODEL,
    anthropic_sse,
    block_delta,
    block_start,
    block_stop,
    message_delta,
    message_start,
    openai_error_body,
)

REQUEST = MessageRequest(None, [Message.user("hi")])


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def answer(text: str, model: str) -> object:
    return MockProvider.text(text, model=model)


def test_the_second_provider_answers_when_the_first_is_rate_limited_and_the_response_names_its_model():
    first = MockProvider([RateLimitError("slow down", status_code=429, retry_after=3.0)], model="gpt-4o")
    second = MockProvider([answer("from B", "claude-haiku-4-5")], model="claude-haiku-4-5")
    response = FallbackProvider([first, second]).chat(REQUEST)
    assert response.message.text == "from B" and response.model == "claude-haiku-4-5"
    assert len(first.requests) == len(second.requests) == 1


@pytest.mark.parametrize("error", [
    RateLimitError("429", status_code=429), ServerError("503", status_code=503), LlmConnectionError("refused"),
    LlmTimeoutError("slow"),
])
def test_each_default_error_type_falls_back(error):
    second = MockProvider([answer("ok", "b")], model="b")
    assert FallbackProvider([MockProvider([error], model="a"), second]).chat(REQUEST).message.text == "ok"


@pytest.mark.parametrize("error", [AuthenticationError("bad key", status_code=401),
                                   ProviderError("bad request", status_code=400)])
def test_an_error_not_in_fall_back_on_is_raised_as_the_same_object_and_no_other_provider_is_asked(error):
    second = MockProvider([answer("never", "b")], model="b")
    with pytest.raises(type(error)) as caught:
        FallbackProvider([MockProvider([error], model="a"), second]).chat(REQUEST)
    assert caught.value is error and second.requests == []


def test_fall_back_on_chooses_the_errors_that_move_on():
    error = ServerError("503", status_code=503)
    provider = FallbackProvider([MockProvider([error], model="a"), MockProvider([answer("x", "b")], model="b")],
                                fall_back_on=(RateLimitError,))
    with pytest.raises(ServerError) as caught:
        provider.chat(REQUEST)
    assert caught.value is error


def test_when_every_provider_fails_the_error_lists_every_attempt_in_order():
    errors = [RateLimitError("too many", status_code=429, retry_after=7.0), ServerError("down", status_code=503),
              LlmConnectionError("refused")]
    providers = [MockProvider([e], model=f"m{i}") for i, e in enumerate(errors)]
    with pytest.raises(AllProvidersFailedError) as caught:
        FallbackProvider(providers).chat(REQUEST)
    failure = caught.value
    assert failure.errors == errors and failure.retryable and failure.retry_after == 7.0
    message = str(failure)
    for index, error in enumerate(errors):
        assert f"#{index}" in message and f"'m{index}'" in message and type(error).__name__ in message
    assert message.index("#0") < message.index("#1") < message.index("#2")


def test_each_provider_gets_the_request_with_its_own_model():
    first = MockProvider([ServerError("503", status_code=503)], model="gpt-4o")
    second = MockProvider([answer("ok", "claude-haiku-4-5")], model="claude-haiku-4-5")
    FallbackProvider([first, second]).chat(MessageRequest("gpt-4o", [Message.user("hi")]))
    assert [r.model for r in first.requests + second.requests] == ["gpt-4o", None]


# -- streams ---------------------------------------------------------------------


def test_a_stream_fails_over_before_its_first_event_and_the_caller_sees_one_answer_only():
    first = MockProvider([MockProvider.failing_stream(answer("lost", "a"), after_events=0,
                                                      error=ServerError("overloaded", status_code=529))], model="a")
    second = MockProvider([answer("Hello from the second provider", "b")], model="b")
    events = list(FallbackProvider([first, second]).chat_stream(REQUEST))
    assert [e.model for e in events if isinstance(e, MessageStart)] == ["b"]
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Hello from the second provider"
    assert isinstance(events[-1], MessageComplete) and events[-1].full_response.model == "b"


def test_a_stream_that_failed_after_its_first_event_is_not_failed_over():
    cut = LlmConnectionError("cut")
    first = MockProvider([MockProvider.failing_stream(answer("Hello, world, a long text", "a"), after_events=3,
                                                      error=cut)], model="a")
    second = MockProvider([answer("never", "b")], model="b")
    seen = []
    with pytest.raises(LlmConnectionError) as caught:
        for event in FallbackProvider([first, second]).chat_stream(REQUEST):
            seen.append(event)
    assert caught.value is cut and len(seen) == 3 and isinstance(seen[0], MessageStart) and seen[0].model == "a"
    assert second.requests == []


def test_a_stream_where_every_provider_fails_before_its_first_event_raises_all_providers_failed():
    providers = [MockProvider([MockProvider.failing_stream(answer("x", m), after_events=0)], model=m)
                 for m in ("a", "b")]
    with pytest.raises(AllProvidersFailedError) as caught:
        list(FallbackProvider(providers).chat_stream(REQUEST))
    assert [type(e) for e in caught.value.errors] == [LlmConnectionError, LlmConnectionError]


def test_closing_a_fallback_stream_closes_the_providers_stream():
    closed = []

    def events(request):
        try:
            yield from MockProvider([answer("a long enough answer to split", "a")]).chat_stream(request)
        finally:
            closed.append(True)

    stream = FallbackProvider([MockProvider([MockProvider.stream(events)], model="a")]).chat_stream(REQUEST)
    next(stream)
    stream.close()
    assert closed == [True]


# -- circuits --------------------------------------------------------------------


def test_an_open_circuit_skips_its_provider_without_a_request_until_a_trial_succeeds():
    clock = FakeClock()
    down = MockProvider([ServerError("down", status_code=503)] * 2, model="a")
    backup = MockProvider([answer(str(i), "b") for i in range(4)], model="b")
    provider = FallbackProvider([down, backup], circuit=CircuitBreaker(failure_threshold=2, reset_after=30.0,
                                                                       clock=clock))
    for _ in range(2):
        provider.chat(REQUEST)
    assert provider.circuits[0].state == "open" and provider.circuits[1].state == "closed"
    provider.chat(REQUEST)
    assert len(down.requests) == 2  # skipped: no request
    clock.now += 30.0
    assert provider.circuits[0].state == "half-open"
    down.add(answer("back", "a"))
    assert provider.chat(REQUEST).message.text == "back"
    assert provider.circuits[0].state == "closed" and len(down.requests) == 3


def test_each_provider_gets_its_own_breaker_copied_from_the_template():
    template = CircuitBreaker(failure_threshold=3, reset_after=5.0)
    provider = FallbackProvider([MockProvider(model="a"), MockProvider(model="b")], circuit=template)
    a, b = provider.circuits
    assert a is not b and a is not template and (a.failure_threshold, a.reset_after) == (3, 5.0)
    assert "#0" in a.name and "#1" in b.name


def test_one_provider_whose_circuit_is_open_raises_circuit_open_without_a_request():
    clock = FakeClock()
    only = MockProvider([ServerError("down", status_code=503)], model="a")
    provider = FallbackProvider([only], circuit=CircuitBreaker(failure_threshold=1, reset_after=10.0, clock=clock))
    with pytest.raises(AllProvidersFailedError):
        provider.chat(REQUEST)
    with pytest.raises(CircuitOpenError) as caught:
        provider.chat(REQUEST)
    assert caught.value.retry_after == pytest.approx(10.0) and len(only.requests) == 1
    with pytest.raises(CircuitOpenError):
        list(provider.chat_stream(REQUEST))
    assert len(only.requests) == 1


def test_an_error_not_in_fall_back_on_does_not_count_against_the_circuit():
    provider = FallbackProvider([MockProvider([ProviderError("400", status_code=400)] * 3, model="a")],
                                circuit=CircuitBreaker(failure_threshold=1))
    for _ in range(3):
        with pytest.raises(ProviderError):
            provider.chat(REQUEST)
    assert provider.circuits[0].state == "closed"


# -- construction ----------------------------------------------------------------


@pytest.mark.parametrize("providers", [[], (), [MockProvider(), "openai"], MockProvider(), None, [None]])
def test_an_empty_list_or_a_non_provider_is_a_type_error(providers):
    with pytest.raises(TypeError, match="FallbackProvider"):
        FallbackProvider(providers)


@pytest.mark.parametrize("kwargs", [{"fall_back_on": ("RateLimitError",)}, {"fall_back_on": (int,)},
                                    {"circuit": 5}, {"circuit": {"failure_threshold": 5}}])
def test_a_bad_fall_back_on_or_circuit_is_a_type_error(kwargs):
    with pytest.raises(TypeError):
        FallbackProvider([MockProvider()], **kwargs)


# -- costs and vendors -----------------------------------------------------------


def test_a_session_counts_the_cost_of_the_provider_that_answered():
    usage = Usage(1000, 500)
    first = MockProvider([RateLimitError("429", status_code=429)], model="gpt-4o")
    second = MockProvider([MockProvider.text("ok", model="claude-haiku-4-5", usage=usage)], model="claude-haiku-4-5")
    session = AgentSession(FallbackProvider([first, second]))
    session.submit_turn("hi")
    assert session.cost_usd == pytest.approx(cost_usd(usage, "claude-haiku-4-5"))
    assert session.cost_usd != pytest.approx(cost_usd(usage, "gpt-4o"))


def test_a_streamed_session_turn_counts_the_cost_of_the_provider_that_answered():
    usage = Usage(1000, 500)
    first = MockProvider([MockProvider.failing_stream(answer("x", "gpt-4o"), after_events=0,
                                                      error=ServerError("503", status_code=503))], model="gpt-4o")
    second = MockProvider([MockProvider.text("ok", model="claude-haiku-4-5", usage=usage)], model="claude-haiku-4-5")
    session = AgentSession(FallbackProvider([first, second]))
    with session.submit_turn_stream("hi") as stream:
        events = list(stream)
    assert [e.model for e in events if isinstance(e, MessageStart)] == ["claude-haiku-4-5"]
    assert session.cost_usd == pytest.approx(cost_usd(usage, "claude-haiku-4-5"))


def test_an_openai_provider_that_is_down_falls_back_to_anthropic_over_real_http(stream_server):
    stream_server.add_response([json.dumps(openai_error_body("overloaded", "server_error")).encode()], status=503,
                               headers={"Content-Type": "application/json"})
    stream_server.add_response([anthropic_sse(
        message_start(), block_start(0, {"type": "text", "text": ""}),
        block_delta(0, {"type": "text_delta", "text": "Bonjour"}), block_stop(0), message_delta("end_turn", 3),
        ("message_stop", {"type": "message_stop"}))], headers={"Content-Type": "text/event-stream"})
    openai = OpenAIProvider(model="gpt-4o-mini", api_key="sk-test", base_url=stream_server.url)
    anthropic = AnthropicProvider(model="claude-haiku-4-5", api_key="sk-ant-test", base_url=stream_server.url)
    history = MessageRequest(None, [Message.user("hi"), Message.assistant("Hello!"), Message.user("in French?")])
    provider = FallbackProvider([openai, anthropic])
    try:
        events = list(provider.chat_stream(history))
    finally:
        provider.close()
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == "Bonjour"
    assert events[-1].full_response.model == ANTHROPIC_WIRE_MODEL
    first, second = stream_server.requests
    assert first.path.endswith("/chat/completions") and first.json["model"] == "gpt-4o-mini"
    sent = second.json
    assert second.path.endswith("/messages") and sent["model"] == "claude-haiku-4-5"
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]


def test_each_providers_own_prices_count_for_its_answers():
    from agcore_sync import Pricing

    usage = Usage(1000, 1000)
    first = MockProvider([ServerError("503", status_code=503)], model="cheap-model", pricing=Pricing(1.0, 1.0))
    second = MockProvider([MockProvider.text("ok", model="dear-model", usage=usage)], model="dear-model",
                          pricing=Pricing(100.0, 100.0))
    provider = FallbackProvider([first, second])
    # One table with each provider's prices (the built-in ones kept), for whatever prices by model.
    assert provider.pricing["cheap-model"] == Pricing(1.0, 1.0)
    assert provider.pricing["dear-model"] == Pricing(100.0, 100.0) and "gpt-4o" in provider.pricing
    session = AgentSession(provider, pricing=provider.pricing)
    session.submit_turn("hi")
    assert session.cost_usd == pytest.approx(Pricing(100.0, 100.0).cost(usage))
