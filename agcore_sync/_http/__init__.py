"""HTTP plumbing shared by the providers and MCP's HTTP transport (private).

- :mod:`~agcore_sync._http.sse`: the Server-Sent Events parser;
- :mod:`~agcore_sync._http.body`: reading a streamed body as it arrives and
  giving its connection back (or closing it), the transport-error tuple;
- :mod:`~agcore_sync._http.connection`: pooled sessions, the socket under a
  response;
- :mod:`~agcore_sync._http.masking`: keeping a secret out of text and JSON;
- :mod:`~agcore_sync._http.peer_json`: the one strict parse of JSON from a
  peer (no NaN where refused, bounded nesting, never ``RecursionError``).

This package sits above ``llm/`` and ``tools/`` and imports neither.
"""
