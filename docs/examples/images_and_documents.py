"""Images and documents: send them with a message, and let a tool answer with a picture."""

from __future__ import annotations

from agcore_sync import DocumentBlock, ImageBlock, LlmCycle, Message, MockProvider, TextBlock, ToolRegistry, tool

# A tiny stand-in PNG; in real code: ImageBlock.from_path("photo.png") or ImageBlock.from_url("https://...").
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)
photo = ImageBlock.from_bytes(PNG, "image/png")
notes = DocumentBlock.from_bytes(b"Meeting moved to Friday.", "text/plain")


@tool
def camera(room: str) -> list:
    """Take a picture of a room.

    Args:
        room: which room.
    """
    return [TextBlock(f"the {room}, just now"), ImageBlock.from_bytes(PNG, "image/png")]


provider = MockProvider([
    MockProvider.text("A small black square."),
    MockProvider.tool_calls(("camera", {"room": "kitchen"})),
    MockProvider.text("The kitchen is empty."),
])
cycle = LlmCycle(provider)  # swap in OpenAIProvider(...) or AnthropicProvider(...)

# 1. A user message with an image and a document.
cycle.submit(Message.user("What is in this picture? Mind the notes.", photo, notes))
print([type(block).__name__ for block in provider.requests[0].messages[0].content])
# ['TextBlock', 'ImageBlock', 'DocumentBlock']

# 2. A tool that returns an image: the model gets it as an image in the tool result.
with ToolRegistry() as registry:
    registry.register(camera)
    print(cycle.submit_with_tools("Is anyone in the kitchen?", registry).message.text)
result = provider.requests[2].messages[-1].content[0]
print([type(block).__name__ for block in result.content])  # ['TextBlock', 'ImageBlock']
print(result.text)  # the kitchen, just now
