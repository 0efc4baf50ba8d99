"""Plain calls inside a running asyncio event loop, as in a Jupyter cell.

Jupyter runs every cell inside an event loop that is already running. This
script starts one with ``asyncio.run`` and calls the library from inside it
the way a cell would: no ``await``, no ``nest_asyncio``.
"""

import asyncio

from agcore_sync import AgentSession, MockProvider, TextDelta, ToolRegistry, tool


@tool
def word_count(text: str) -> int:
    """Count the words of a text."""
    return len(text.split())


provider = MockProvider([
    MockProvider.tool_calls(("word_count", {"text": "the quick brown fox"})),
    MockProvider.text("That sentence has 4 words."),
])


async def notebook():
    asyncio.get_running_loop()  # we are inside a running loop, as in Jupyter

    # What a cell can hold: synchronous code, streamed as it arrives.
    with ToolRegistry() as registry:
        registry.register(word_count)
        session = AgentSession(provider, registry=registry)
        for event in session.submit_turn_stream('How many words in "the quick brown fox"?'):
            if isinstance(event, TextDelta):
                print(event.text, end="", flush=True)
        print()
    assert session.turn_index == 1

    # By contrast, code that wraps asyncio.run() cannot run here.
    probe = asyncio.sleep(0)
    try:
        asyncio.run(probe)
    except RuntimeError as exc:
        print("asyncio.run inside a cell:", exc)
    else:
        raise AssertionError("asyncio.run() ran inside a running event loop")
    finally:
        probe.close()


asyncio.run(notebook())
