"""An MCP server of your own: tools, a resource, a prompt, and a tool that logs and asks the client's model.

Run it as ``agcore-sync mcp-serve mcp_server_basic:server`` (stdio, for
Claude Desktop or an IDE) or ``... --http --port 8000``. Run as a script,
it serves Streamable HTTP on a free local port and calls itself with
``McpClient``, so you can see both halves.
"""

import threading
from socketserver import ThreadingMixIn
from wsgiref.simple_server import WSGIRequestHandler, WSGIServer, make_server

from agcore_sync.mcp import HttpTransport, McpClient, McpServer, request_context

server = McpServer("notes", "1.0.0", instructions="Keeps short notes.")
notes = {"welcome": "Hello from the notes server."}


@server.tool(annotations={"readOnlyHint": True})
def count_words(text: str) -> int:
    """Count the words of a text.

    Args:
        text: the text.
    """
    return len(text.split())


@server.tool
def summarize(name: str) -> str:
    """Summarize a note with the client's own model (MCP sampling)."""
    context = request_context()
    context.log("info", f"summarizing {name}")
    answer = context.sample(f"Summarize in five words: {notes[name]}", max_tokens=20)
    return answer.message.text


@server.resource("notes://{name}", mime_type="text/plain")
def note(name: str) -> str:
    """One note, by name."""
    return notes[name]


@server.prompt()
def review(name: str) -> str:
    """Ask for a review of a note."""
    return f"Review this note and suggest one improvement: {notes[name]}"


class ThreadingWSGIServer(ThreadingMixIn, WSGIServer):
    """The standard library's WSGI server, one thread per connection (an open GET stream holds one)."""

    daemon_threads = True


class QuietHandler(WSGIRequestHandler):
    def log_message(self, *args):
        pass


if __name__ == "__main__":
    httpd = make_server("127.0.0.1", 0, server.wsgi_app(), ThreadingWSGIServer, QuietHandler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    url = f"http://127.0.0.1:{httpd.server_port}/mcp"

    def sampling(params):  # the client's side of sampling: here a canned answer instead of a model
        return {"role": "assistant", "content": {"type": "text", "text": "A friendly greeting note."}, "model": "demo"}

    try:
        with McpClient("notes", HttpTransport(url), timeout=30.0, sampling_handler=sampling) as client:
            print("tools:", sorted(t.name for t in client.list_tools()))
            print("count_words:", client.call_tool("count_words", {"text": "one two three"}).structured_content)
            print("summarize:", client.call_tool("summarize", {"name": "welcome"}).content[0]["text"])
            print("resource:", client.read_resource("notes://welcome")[0].text)
            print("prompt:", client.get_prompt("review", {"name": "welcome"}).messages[0].text)
    finally:
        server.close()
        httpd.shutdown()
        httpd.server_close()
        thread.join(10)
