"""Log the library's records as JSON lines, each with the turn, request and tool call it belongs to."""

import json
import logging
import sys

from agcore_sync import AgentSession, CycleConfig, MockProvider, RetryConfig, ServerError, ToolRegistry, tool


class JsonLines(logging.Formatter):
    """One JSON object per record, with the ids agcore_sync puts on its records."""

    def format(self, record):
        return json.dumps({
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
            "turn": record.agcore_turn_id,
            "request": record.agcore_request_id,
            "tool_call": record.agcore_tool_call_id,
        })


handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(JsonLines())
logging.getLogger("agcore_sync").addHandler(handler)
logging.getLogger("agcore_sync").setLevel(logging.WARNING)


@tool
def lookup(city: str) -> str:
    """Look up the weather in a city."""
    return f"sunny in {city}"


provider = MockProvider([
    ServerError("the provider is busy", status_code=503),  # retried: logged with the request's id
    MockProvider.tool_calls(("call_1", "lookup", {"city": "Oslo"})),
    MockProvider.text("It is sunny in Oslo."),
])
with ToolRegistry() as registry:
    registry.register(lookup)
    session = AgentSession(provider, CycleConfig(retry=RetryConfig(initial_backoff=0.01)), registry=registry)
    print(session.submit_turn("Weather in Oslo?").message.text)
# Tidy up (a script that ends here need not).
logging.getLogger("agcore_sync").removeHandler(handler)
logging.getLogger("agcore_sync").setLevel(logging.NOTSET)
