"""Budget a turn and a session with UsageLimits."""

from agcore_sync import AgentSession, CycleConfig, MockProvider, Usage, UsageLimitExceeded, UsageLimits

answers = [MockProvider.text(f"answer {n}", usage=Usage(400, 100)) for n in range(3)]
session = AgentSession(
    MockProvider(answers),
    CycleConfig(usage_limits=UsageLimits(max_requests=5, max_tool_calls=20)),  # each turn
    usage_limits=UsageLimits(max_total_tokens=1000),  # all turns together
)
print(session.submit_turn("first").message.text)
print(session.submit_turn("second").message.text)  # 1000 tokens used: the budget is spent
try:
    session.submit_turn("third")
except UsageLimitExceeded as exc:
    print(f"stopped by {exc.scope} limit {exc.limit}={exc.value} after {exc.usage.total_tokens} tokens")
print(f"turns ended: {session.turn_index}, requests made: {session.usage.requests}")
