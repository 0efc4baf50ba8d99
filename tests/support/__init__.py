"""Helpers the whole suite shares; each is defined here once and imported where used.

- ``leaks``: the threads, child processes and descriptors a test leaves
  (the autouse check in ``tests/conftest.py``), and ``closed_port()``.
- ``http_server``: ``LocalHttpServer``, the one local HTTP server class.
- ``stream_server``: ``StreamServer`` (scripted streaming responses) and
  its ``stream_server`` fixture.
- ``wire``: OpenAI and Anthropic payloads and SSE bodies, shaped as their
  docs show them.
- ``tools``: the ``add`` tool and the ``registry`` fixture.
- ``sse``: helpers for SSE parser tests.

Fixtures (``stream_server``, ``registry``) are registered for every test
through ``pytest_plugins`` in ``tests/conftest.py``; scripted provider
answers, failures included, come from the shipped ``MockProvider``
(``text``, ``tool_calls``, ``failing_stream``, ``stream``).
"""
