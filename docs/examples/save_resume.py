"""Save a session as JSON and resume it later, in another process or worker.

``to_dict()`` keeps the messages of every slot, the current slot, the cost
so far, the turn index, the config and the rendered system prompt. It does
not keep the provider (nor its API key), the tools or the hooks: give them
again to ``AgentSession.from_dict``.
"""

import json
import tempfile
from pathlib import Path

from agcore_sync import AgentSession, CycleConfig, MockProvider

# Monday: a first turn, then save.
session = AgentSession(MockProvider([MockProvider.text("Noted: your name is Ada.")]),
                       CycleConfig(max_tokens=200), system_prompt="Remember what the user tells you.")
session.submit_turn("My name is Ada.")

with tempfile.TemporaryDirectory() as tmp:
    path = Path(tmp) / "session-42.json"
    path.write_text(json.dumps(session.to_dict()))
    print("saved", path.name, "with", len(session.messages()), "messages")

    # Tuesday, maybe another process: load it with a provider of its own.
    provider = MockProvider([MockProvider.text("You are Ada.")])
    resumed = AgentSession.from_dict(json.loads(path.read_text()), provider=provider)

print("resumed at turn", resumed.turn_index, "with", resumed.cost_so_far.total_tokens, "tokens so far")
print(resumed.submit_turn("What is my name?").message.text)

# The model saw the whole conversation, system prompt included.
request = provider.requests[0]
print("sent:", request.system, "|", [m.text for m in request.messages])
assert [m.text for m in request.messages] == ["My name is Ada.", "Noted: your name is Ada.", "What is my name?"]
