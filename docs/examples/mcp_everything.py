"""Resources, prompts, completion, progress and sampling of an MCP server.

The server is ``@modelcontextprotocol/server-everything`` from npm, which
has a bit of everything. It needs Node.js (``npx``): the first run downloads
the server, unless the folder you run in has it installed (``npm install
@modelcontextprotocol/server-everything``, which is what the test suite's
``tests/node/install.sh`` does, so the suite runs this offline from there).
"""

from agcore_sync import McpClient, MockProvider, StdioTransport, sampling_handler_for

SERVER = ["npx", "-y", "@modelcontextprotocol/server-everything", "stdio"]

# The server's sampling/createMessage requests are answered by a provider
# (here a scripted one); `approve` could ask a human first.
writer = MockProvider([MockProvider.text("A haiku about resources.")])
sampling = sampling_handler_for(writer, approve=lambda params: True)

with McpClient("everything", StdioTransport(SERVER[0], SERVER[1:]), timeout=30.0,
               sampling_handler=sampling) as client:
    # Resources: listed (every page), read as text or bytes.
    first = client.list_resources()[0]
    (part,) = client.read_resource(first.uri)
    print("resource", first.uri, part.mime_type, len(part.text or part.blob or ""), "characters")

    # Prompts come back as Message values, ready for a provider.
    prompt = client.get_prompt("args-prompt", {"city": "Lyon"})
    print("prompt:", prompt.messages[0].text)

    # Completion of a prompt argument.
    print("completions:", client.complete(("prompt", "completable-prompt"), "department", "Eng"))

    # Progress of one call, in order, all delivered before call_tool returns.
    def show(progress, total, message):
        print(f"progress {progress}/{total}")

    client.call_tool("trigger-long-running-operation", {"duration": 1, "steps": 2}, progress=show)

    # A tool that asks the client's model for a completion.
    print(client.call_tool("trigger-sampling-request", {"prompt": "Write a haiku", "maxTokens": 50}).text[:60])
