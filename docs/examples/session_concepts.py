"""An AgentSession: turns, cost, hooks, context slots and compaction."""

from agcore_sync import AgentSession, CompactConfig, CycleConfig, HookEvent, Hooks, MockProvider, Pricing

provider = MockProvider([
    MockProvider.text("Paris."),
    MockProvider.text("About 2.1 million people."),
    MockProvider.text("Bonjour !"),
])

# Hooks see every turn, provider call and tool call (here: log the requests).
hooks = Hooks()
hooks.on(HookEvent.PRE_REQUEST, lambda ctx: print(f"  turn {ctx.turn_index}: sending "
                                                   f"{len(ctx.request.messages)} messages"))

session = AgentSession(
    provider,
    CycleConfig(max_tokens=300),
    system_prompt="You answer in one short sentence.",
    hooks=hooks,
    # Keep each request under 80 tokens (estimated; tiny, to show it working), never dropping
    # the newest message: older ones are left out of the request, never out of the history.
    compact=CompactConfig(max_context_tokens=80, keep_last_messages=1),
    pricing=Pricing(input=0.15, output=0.60),     # USD per million tokens
)

print(session.submit_turn("What is the capital of France?").message.text)
print(session.submit_turn("How many people live there?").message.text)
print(f"history: {len(session.messages())} messages | turns: {session.turn_index} "
      f"| tokens: {session.cost_so_far.total_tokens} | cost: ${session.cost_usd:.6f}")

# Slots: named histories. A turn reads and writes the current slot only.
session.create_slot("french")
session.switch_slot("french")
print(session.submit_turn("Say hello in French.").message.text)
print("slots:", session.slots, "| current:", session.current_slot, "| its messages:", len(session.messages()))
session.switch_slot("default")
print("default slot keeps its", len(session.messages()), "messages")
