"""Messages, requests and stream events are plain values that survive JSON."""

import json

from agcore_sync import (
    Message,
    MessageRequest,
    MockProvider,
    PartialMessageResponse,
    StreamEvent,
    TextDelta,
    ToolUseBlock,
)

# A message is a role and a tuple of content blocks.
question = Message.user("What is the weather in Paris?")
call = Message("assistant", [ToolUseBlock("call_1", "get_weather", {"city": "Paris"})])
result = Message.tool_result("call_1", '{"temperature": 18}')
print(question.role.value, repr(question.text))
print(call.role.value, call.tool_uses[0].name, call.tool_uses[0].input)

# Every value round-trips through JSON.
request = MessageRequest("some-model", [question, call, result], system="Be brief.")
assert MessageRequest.from_dict(json.loads(json.dumps(request.to_dict()))) == request

# A provider streams one response as events; PartialMessageResponse rebuilds it.
provider = MockProvider([MockProvider.text("It is 18 degrees in Paris.")])
partial = PartialMessageResponse()
for event in provider.chat_stream(request):
    wire = json.dumps(event.to_dict())           # e.g. to send it on as Server-Sent Events
    assert StreamEvent.from_dict(json.loads(wire)) == event
    partial.apply(event)
    print(event.type, event.text if isinstance(event, TextDelta) else "")

response = partial.finalize()
print(response.stop_reason.value, response.usage.total_tokens, repr(response.message.text))
