"""The conformance-suite client: McpClient over HttpTransport, one scenario per run.

The official MCP conformance suite (npm ``@modelcontextprotocol/conformance``)
starts a scenario's test server, then runs this script as::

    python tests/conformance/client.py <server-url>

with ``MCP_CONFORMANCE_SCENARIO`` naming the scenario, and judges the
traffic it saw. ``tests/conformance/run.sh`` drives the scenarios this
client covers. Exit status 0 means the client did its part without error;
the suite decides whether the protocol was right.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Callable, Dict, List, Optional

from agcore_sync.tools.mcp import HttpTransport, McpClient

#: Seconds each request may take (the suite gives the whole run 30 s).
TIMEOUT = 20.0

logger = logging.getLogger("agcore_sync.conformance")


def _client(url: str, **kwargs: Any) -> McpClient:
    return McpClient("conformance", HttpTransport(url), timeout=TIMEOUT, **kwargs)


def run_initialize(url: str) -> None:
    """Handshake, list the tools, close (DELETE)."""
    with _client(url) as client:
        logger.info("negotiated %s with %s", client.negotiated_version, client.server_info)
        client.list_tools()


def run_tools_call(url: str) -> None:
    """Call the scenario's ``add_numbers`` tool and check its answer."""
    with _client(url) as client:
        names = [tool.name for tool in client.list_tools()]
        if "add_numbers" not in names:
            raise SystemExit(f"add_numbers not offered; tools: {names}")
        result = client.call_tool("add_numbers", {"a": 5, "b": 3})
        if result.is_error or "8" not in result.text:
            raise SystemExit(f"add_numbers(5, 3) answered {result.text!r}")
        logger.info("add_numbers: %s", result.text)


def run_elicitation_defaults(url: str) -> None:
    """Accept an elicitation with empty content: the client must fill in the schema's defaults."""
    asked: List[Dict[str, Any]] = []

    def accept_empty(params: Dict[str, Any]) -> Dict[str, Any]:
        asked.append(params)
        return {"action": "accept", "content": {}}

    with _client(url, elicitation_handler=accept_empty) as client:
        result = client.call_tool("test_client_elicitation_defaults", {})
        logger.info("tool answered: %s", result.text)
    if not asked:
        raise SystemExit("the server never asked for elicitation")


def run_sse_retry(url: str) -> None:
    """Call the tool whose SSE stream the server cuts: the answer must come after reconnecting."""
    with _client(url) as client:
        client.list_tools()
        result = client.call_tool("test_reconnection", {})
        logger.info("tool answered: %s", result.text)


SCENARIOS: Dict[str, Callable[[str], None]] = {
    "initialize": run_initialize,
    "tools_call": run_tools_call,
    "elicitation-sep1034-client-defaults": run_elicitation_defaults,
    "sse-retry": run_sse_retry,
}


def main(argv: Optional[List[str]] = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    logging.basicConfig(level=logging.DEBUG, stream=sys.stderr,
                        format="%(asctime)s %(threadName)s %(name)s %(levelname)s %(message)s")
    logging.getLogger("urllib3").setLevel(logging.WARNING)
    scenario = os.environ.get("MCP_CONFORMANCE_SCENARIO", "")
    if not argv or scenario not in SCENARIOS:
        print(f"usage: MCP_CONFORMANCE_SCENARIO=<{'|'.join(SCENARIOS)}> {sys.argv[0]} <server-url>; "
              f"got scenario {scenario!r}", file=sys.stderr)
        return 2
    SCENARIOS[scenario](argv[-1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
