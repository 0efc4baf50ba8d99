"""An MCP server behind OAuth, from a script: ``HttpTransport(url, auth=McpOAuth(...))``.

So that this example runs offline, from any folder, it starts the tiny
OAuth-protected MCP server beside this file (``servers/oauth_demo.py``, on
127.0.0.1), whose authorization server approves at once; that is what
``headless_authorize`` is for. Against a real server, pass
``authorize=console_authorize`` instead: it prints the URL to open in a
browser and asks for the URL the browser lands on (this works in a
notebook too), or a web app's own callback (docs/examples/mcp_oauth_flask.py).
"""

import subprocess
import sys
import tempfile
from pathlib import Path

from agcore_sync import FileTokenStorage, HttpTransport, McpClient, McpOAuth, headless_authorize

DEMO_SERVER = Path(__file__).resolve().parent / "servers" / "oauth_demo.py"

# Start the server: it prints "LISTENING <url>" once its socket accepts connections.
server = subprocess.Popen([sys.executable, str(DEMO_SERVER)], stdout=subprocess.PIPE, text=True)
authorizations = []


def authorize(url):
    authorizations.append(url)
    return headless_authorize(url)


try:
    url = server.stdout.readline().split()[-1]  # e.g. http://127.0.0.1:49213/mcp
    with tempfile.TemporaryDirectory() as folder:
        # The part that matters. Tokens and the client registration go to a file only you can read (0600),
        # so the next run of the script needs no authorization at all.
        tokens = FileTokenStorage(Path(folder) / "mcp-tokens.json")
        auth = McpOAuth(authorize=authorize, storage=tokens, redirect_uri="http://127.0.0.1:33418/callback")
        with McpClient("protected", HttpTransport(url, auth=auth), timeout=30.0) as client:
            print("tools:", [tool.name for tool in client.list_tools()])
            print("call:", client.call_tool("echo", {"text": "hi"}).text)

        # A second run: the stored token is used as it is (no redirect, no token request).
        again = McpOAuth(authorize=authorize, storage=FileTokenStorage(Path(folder) / "mcp-tokens.json"))
        with McpClient("protected", HttpTransport(url, auth=again), timeout=30.0) as client:
            print("tools again:", [tool.name for tool in client.list_tools()])
        print("authorizations made:", len(authorizations))
finally:
    server.terminate()
    server.wait(30)
    server.stdout.close()
