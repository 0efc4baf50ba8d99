"""The old place of the MCP package: use :mod:`agcore_sync.mcp`.

MCP moved out of the tool layer to :mod:`agcore_sync.mcp` (the client in
``mcp/client/``, transports in ``mcp/transports/``, shared protocol code in
``mcp/shared/``, OAuth in ``mcp/auth/``, the tool adapter in ``mcp/tools.py``).
This module keeps every name and submodule path that ``agcore_sync.tools.mcp``
offered importable, each bound to the very object of the new package (the same
classes, the same modules: patching one patches the other):

=================================================  ==============================================
Old path                                           New path
=================================================  ==============================================
``agcore_sync.tools.mcp``                          :mod:`agcore_sync.mcp`
``agcore_sync.tools.mcp.client``                   :mod:`agcore_sync.mcp.client.session`
``agcore_sync.tools.mcp.restart``                  :mod:`agcore_sync.mcp.client.restart`
``agcore_sync.tools.mcp.sampling``                 :mod:`agcore_sync.mcp.client.sampling`
``agcore_sync.tools.mcp._features``                :mod:`agcore_sync.mcp.client.features`
``agcore_sync.tools.mcp.transport``                :mod:`agcore_sync.mcp.transports.base`
``agcore_sync.tools.mcp.stdio``                    :mod:`agcore_sync.mcp.transports.stdio`
``agcore_sync.tools.mcp.http``                     :mod:`agcore_sync.mcp.transports.http`
``agcore_sync.tools.mcp.jsonrpc``                  :mod:`agcore_sync.mcp.shared.jsonrpc`
``agcore_sync.tools.mcp.protocol``                 :mod:`agcore_sync.mcp.shared.protocol`
``agcore_sync.tools.mcp.content``                  :mod:`agcore_sync.mcp.shared.content`
``agcore_sync.tools.mcp.resources``                :mod:`agcore_sync.mcp.shared.resources`
``agcore_sync.tools.mcp.prompts``                  :mod:`agcore_sync.mcp.shared.prompts`
``agcore_sync.tools.mcp.adapter``                  :mod:`agcore_sync.mcp.tools`
``agcore_sync.tools.mcp.resource_tool``            :mod:`agcore_sync.mcp.tools`
``agcore_sync.tools.mcp.auth`` (and its modules)   :mod:`agcore_sync.mcp.auth` (the same modules)
=================================================  ==============================================

Importing this module imports the whole MCP package (as importing the old
package did); ``import agcore_sync`` imports neither.

.. deprecated:: 0.2.0
   Import from :mod:`agcore_sync.mcp`; this path stays importable.
"""

from __future__ import annotations

import sys

import agcore_sync.mcp
import agcore_sync.mcp.auth.discovery
import agcore_sync.mcp.auth.flows
import agcore_sync.mcp.auth.jwt_assertion
import agcore_sync.mcp.auth.oauth
import agcore_sync.mcp.auth.registration
import agcore_sync.mcp.auth.storage
import agcore_sync.mcp.client.features
import agcore_sync.mcp.client.restart
import agcore_sync.mcp.client.sampling
import agcore_sync.mcp.client.session
import agcore_sync.mcp.shared.content
import agcore_sync.mcp.shared.jsonrpc
import agcore_sync.mcp.shared.prompts
import agcore_sync.mcp.shared.protocol
import agcore_sync.mcp.shared.resources
import agcore_sync.mcp.tools
import agcore_sync.mcp.transports.base
import agcore_sync.mcp.transports.http
import agcore_sync.mcp.transports.stdio
from agcore_sync.mcp import (
    HttpTransport,
    McpClient,
    McpPrompt,
    McpPromptArgument,
    McpPromptResult,
    McpResource,
    McpResourceContents,
    McpResourceTemplate,
    McpResourceTool,
    McpTool,
    McpToolCaller,
    McpToolResult,
    RestartPolicy,
    ServerFeatures,
    StdioTransport,
    Transport,
    sampling_handler_for,
)

__all__ = [
    "McpClient",
    "McpToolResult",
    "McpTool",
    "McpToolCaller",
    "Transport",
    "StdioTransport",
    "HttpTransport",
    "RestartPolicy",
    "ServerFeatures",
    "McpResource",
    "McpResourceTemplate",
    "McpResourceContents",
    "McpPrompt",
    "McpPromptArgument",
    "McpPromptResult",
    "sampling_handler_for",
    "McpResourceTool",
]

#: The old submodule names and the modules now answering to them.
OLD_SUBMODULES = {
    "client": agcore_sync.mcp.client.session,
    "restart": agcore_sync.mcp.client.restart,
    "sampling": agcore_sync.mcp.client.sampling,
    "_features": agcore_sync.mcp.client.features,
    "transport": agcore_sync.mcp.transports.base,
    "stdio": agcore_sync.mcp.transports.stdio,
    "http": agcore_sync.mcp.transports.http,
    "jsonrpc": agcore_sync.mcp.shared.jsonrpc,
    "protocol": agcore_sync.mcp.shared.protocol,
    "content": agcore_sync.mcp.shared.content,
    "resources": agcore_sync.mcp.shared.resources,
    "prompts": agcore_sync.mcp.shared.prompts,
    "adapter": agcore_sync.mcp.tools,
    "resource_tool": agcore_sync.mcp.tools,
    "auth": agcore_sync.mcp.auth,
    "auth.discovery": agcore_sync.mcp.auth.discovery,
    "auth.flows": agcore_sync.mcp.auth.flows,
    "auth.jwt_assertion": agcore_sync.mcp.auth.jwt_assertion,
    "auth.oauth": agcore_sync.mcp.auth.oauth,
    "auth.registration": agcore_sync.mcp.auth.registration,
    "auth.storage": agcore_sync.mcp.auth.storage,
}

# ``import agcore_sync.tools.mcp.client`` finds the module in sys.modules once
# this module (its parent) ran, so the old dotted paths import the new modules.
for _old, _module in OLD_SUBMODULES.items():
    sys.modules[f"{__name__}.{_old}"] = _module
    if "." not in _old:
        globals()[_old] = _module
del _old, _module
