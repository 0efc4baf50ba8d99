"""Resume a turn paused two agents deep, in a fresh process: the second half of test_subagent_approvals.py.

Argv: the SQLite store's path and the session id. Loads the parent session,
rebuilds the same agents (their providers scripted for what follows the
pause), approves every pending call, resumes, saves, and prints what
happened as JSON.
"""

from __future__ import annotations

import json
import sys

from agcore_sync import AgentSession, Approve, CycleConfig, MockProvider, SqliteSessionStore, ToolRegistry, agent_tool
from tests.agent.subagent_agents import Agents

CONFIG = CycleConfig(retry=None, tool_timeout_secs=None)


def main() -> None:
    path, session_id = sys.argv[1], sys.argv[2]
    agents = Agents(parent=[MockProvider.text("All done: the email went out.")],
                    middle=[MockProvider.text("The mailer sent it.")],
                    inner=[MockProvider.text("Sent.")])
    store = SqliteSessionStore(path)
    with ToolRegistry() as registry:
        registry.register(agent_tool(agents.middle, name="assistant", description="Runs errands."))
        session = AgentSession.load(store, session_id, provider=agents.parent_provider, registry=registry)
        pending = [request.to_dict() for request in session.pending_approvals]
        answer = session.resume_turn({request["tool_call_id"]: Approve() for request in pending})
        session.save(store, session_id)
    store.close()
    json.dump({
        "pending": pending,
        "answer": answer.message.text,
        "emails": agents.emails,
        "inner_sent": [m.to_dict() for m in agents.inner_provider.requests[0].messages],
        "usage": session.usage.to_dict(),
        "usage_by_agent": {k: v.to_dict() for k, v in session.usage_by_agent.items()},
        "pending_after": list(session.pending_approvals),
    }, sys.stdout)


if __name__ == "__main__":
    main()
