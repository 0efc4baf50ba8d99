"""A tiny OAuth-protected MCP server to try ``McpOAuth`` on, standard library only.

One process on 127.0.0.1 (a free port) plays both parts, as a real
deployment would with two servers:

- the authorization server: RFC 8414 metadata, dynamic client registration,
  ``/authorize`` (approves at once and redirects, so ``headless_authorize``
  can follow it) and ``/token`` (authorization code with PKCE S256);
- the MCP server at ``/mcp``: RFC 9728 protected resource metadata, ``401``
  with ``WWW-Authenticate`` until a token issued above is shown, and one
  tool, ``echo``.

Run it as ``python docs/examples/servers/oauth_demo.py``; it prints
``LISTENING http://127.0.0.1:<port>/mcp`` once it accepts connections and
serves until it is stopped. For trying things out only: it keeps everything
in memory and checks little.
"""

import base64
import hashlib
import json
import secrets
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlencode, urlsplit

CODES = {}  # authorization code -> (code_challenge, redirect_uri)
TOKENS = set()


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, format, *args):  # noqa: A002 - quiet
        pass

    def send(self, status, document=None, headers=None):
        body = b"" if document is None else json.dumps(document).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def body(self):
        return self.rfile.read(int(self.headers.get("Content-Length") or 0))

    def do_GET(self):  # noqa: N802 - http.server's name
        base = f"http://{self.headers['Host']}"
        url = urlsplit(self.path)
        if url.path == "/.well-known/oauth-protected-resource/mcp":
            self.send(200, {"resource": f"{base}/mcp", "authorization_servers": [base]})
        elif url.path == "/.well-known/oauth-authorization-server":
            self.send(200, {"issuer": base, "authorization_endpoint": f"{base}/authorize",
                            "token_endpoint": f"{base}/token", "registration_endpoint": f"{base}/register",
                            "code_challenge_methods_supported": ["S256"],
                            "token_endpoint_auth_methods_supported": ["none"]})
        elif url.path == "/authorize":
            query = {k: v[0] for k, v in parse_qs(url.query).items()}
            code = secrets.token_urlsafe(16)
            CODES[code] = (query["code_challenge"], query["redirect_uri"])
            target = query["redirect_uri"] + "?" + urlencode({"code": code, "state": query.get("state", "")})
            self.send(302, headers={"Location": target})
        else:
            self.send(405 if url.path == "/mcp" else 404)

    def do_DELETE(self):  # noqa: N802
        self.send(405)

    def do_POST(self):  # noqa: N802
        base = f"http://{self.headers['Host']}"
        path, raw = urlsplit(self.path).path, self.body()
        if path == "/register":
            self.send(201, {"client_id": secrets.token_urlsafe(8), "token_endpoint_auth_method": "none",
                            **json.loads(raw)})
        elif path == "/token":
            form = {k: v[0] for k, v in parse_qs(raw.decode()).items()}
            challenge, redirect_uri = CODES.pop(form.get("code", ""), (None, None))
            verifier = hashlib.sha256(form.get("code_verifier", "").encode()).digest()
            if challenge != base64.urlsafe_b64encode(verifier).rstrip(b"=").decode() \
                    or redirect_uri != form.get("redirect_uri"):
                self.send(400, {"error": "invalid_grant"})
                return
            token = secrets.token_urlsafe(24)
            TOKENS.add(token)
            self.send(200, {"access_token": token, "token_type": "Bearer", "expires_in": 3600})
        elif path == "/mcp":
            self.mcp(base, json.loads(raw))
        else:
            self.send(404)

    def mcp(self, base, message):
        token = self.headers.get("Authorization", "")[len("Bearer "):]
        if token not in TOKENS:
            metadata = f"{base}/.well-known/oauth-protected-resource/mcp"
            self.send(401, {"error": "invalid_token"},
                      {"WWW-Authenticate": f'Bearer resource_metadata="{metadata}", error="invalid_token"'})
            return
        if "id" not in message:
            self.send(202)
            return
        method, params = message.get("method"), message.get("params") or {}
        if method == "initialize":
            result = {"protocolVersion": "2025-11-25", "capabilities": {"tools": {}},
                      "serverInfo": {"name": "oauth-demo", "version": "1"}}
        elif method == "tools/list":
            result = {"tools": [{"name": "echo", "inputSchema": {
                "type": "object", "properties": {"text": {"type": "string"}}}}]}
        elif method == "tools/call" and params.get("name") == "echo":
            result = {"content": [{"type": "text", "text": str((params.get("arguments") or {}).get("text"))}]}
        else:
            self.send(200, {"jsonrpc": "2.0", "id": message["id"],
                            "error": {"code": -32601, "message": f"unknown method {method}"}})
            return
        self.send(200, {"jsonrpc": "2.0", "id": message["id"], "result": result})


class Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass  # a client that closed its connection


if __name__ == "__main__":
    server = Server(("127.0.0.1", 0), Handler)
    print(f"LISTENING http://127.0.0.1:{server.server_address[1]}/mcp", flush=True)
    server.serve_forever()
