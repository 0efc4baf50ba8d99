"""An MCP server behind OAuth, from a script: ``HttpTransport(url, auth=McpOAuth(...))``.

So that this example runs offline, it starts the test suite's local
authorization server and protected MCP server on 127.0.0.1
(tests/mcp_servers/oauth_server.py), which approve at once; that is what
``headless_authorize`` is for. Against a real server, pass
``authorize=console_authorize`` instead: it prints the URL to open in a
browser and asks for the URL the browser lands on (this works in a
notebook too), or a web app's own callback (docs/examples/mcp_oauth_flask.py).
"""

import tempfile
from pathlib import Path

from agcore_sync import FileTokenStorage, HttpTransport, McpClient, McpOAuth, headless_authorize
from tests.mcp_servers.oauth_server import OAuthWorld

with OAuthWorld() as servers, tempfile.TemporaryDirectory() as folder:
    url = servers.url  # e.g. http://127.0.0.1:49213/mcp

    # The part that matters. Tokens and the client registration go to a file only you can read (0600),
    # so the next run of the script needs no authorization at all.
    tokens = FileTokenStorage(Path(folder) / "mcp-tokens.json")
    auth = McpOAuth(authorize=headless_authorize, storage=tokens, redirect_uri="http://127.0.0.1:33418/callback")
    with McpClient("protected", HttpTransport(url, auth=auth), timeout=30.0) as client:
        print("tools:", [tool.name for tool in client.list_tools()])
        print("call:", client.call_tool("echo", {"text": "hi"}).text)

    # A second run: the stored token is used as it is (no redirect, no token request).
    again = McpOAuth(authorize=headless_authorize, storage=FileTokenStorage(Path(folder) / "mcp-tokens.json"))
    with McpClient("protected", HttpTransport(url, auth=again), timeout=30.0) as client:
        print("tools again:", [tool.name for tool in client.list_tools()])
    print("authorizations made:", len(servers.authorizations))
