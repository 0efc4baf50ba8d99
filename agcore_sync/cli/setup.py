"""What ``agcore-sync demo`` and ``chat`` build from their arguments.

The provider (the demo model, or OpenAI / Anthropic with the key from the
environment, or Bedrock with the AWS credentials and region from it), the
tool registry (the demo tools and every ``--mcp`` server's tools) and the
session. Mistakes the user can fix are :class:`CliError`, which the command
line prints as one line.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import urllib.parse
from typing import Any, List, Optional, Sequence

from agcore_sync.agent.session import AgentSession
from agcore_sync.cli.demo import DEMO_MODEL, DEMO_PRICING, DemoProvider, demo_tools
from agcore_sync.cli.interrupt import TurnInterrupt
from agcore_sync.cli.providers import OPENAI_COMPATIBLE, provider_options
from agcore_sync.llm.errors import LlmConnectionError, LlmTimeoutError
from agcore_sync.llm.provider import LlmProvider
from agcore_sync.llm.retry import RetryConfig
from agcore_sync.loop.cycle import CycleConfig
from agcore_sync.mcp.client.session import RECONNECT_ADVICE
from agcore_sync.tools.registry import ToolRegistry

__all__ = ["CliError", "Setup", "build"]

#: Longest an ``--mcp`` server name (its command line) is shown in errors, in characters.
MAX_SERVER_NAME = 60

_KEYS = {"openai": ("OPENAI_API_KEY", "OPENAI_BASE_URL"), "openai-responses": ("OPENAI_API_KEY", "OPENAI_BASE_URL"),
         "anthropic": ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL")}


class CliError(Exception):
    """A mistake in the command line or its environment, reported as one line.

    Args:
        message: what is wrong and what to do.
        exit_code: the process exit status (2: usage, 1: a failure).
    """

    def __init__(self, message: str, exit_code: int = 2) -> None:
        super().__init__(message)
        self.exit_code = exit_code


class Setup:
    """The pieces a command runs with; everything closes with the ExitStack given to :func:`build`.

    Attributes:
        provider: the model.
        registry: the tools.
        config: the cycle settings.
        pricing: the prices (the demo model's zero price, or None for the built-in table).
        interrupt: what the demo tools wait on; fired when a turn is cancelled.
        description: a short line naming the model and where it runs.
        system_prompt: the system prompt, or None.
        endpoint: the provider's base URL, or None for the demo model.
        notes: lines worth telling the user before starting (renamed tools).
    """

    def __init__(self, provider: LlmProvider, registry: ToolRegistry, config: CycleConfig, pricing: Any,
                 interrupt: TurnInterrupt, description: str, system_prompt: Optional[str],
                 endpoint: Optional[str] = None, notes: Sequence[str] = ()) -> None:
        self.provider = provider
        self.registry = registry
        self.config = config
        self.pricing = pricing
        self.interrupt = interrupt
        self.description = description
        self.system_prompt = system_prompt
        self.endpoint = endpoint
        self.notes: List[str] = list(notes)

    def explain(self, message: str, exception: Optional[BaseException]) -> str:
        """Return a turn's failure ``message``, naming the endpoint when it could not be reached.

        The library's advice to a program ("create a new McpClient") means
        nothing to someone at the prompt: it becomes what they can do.
        """
        if self.endpoint is not None and isinstance(exception, (LlmConnectionError, LlmTimeoutError)):
            return f"could not reach {self.endpoint}: {message}"
        return message.replace(RECONNECT_ADVICE, MCP_CLI_REMEDY)

    def new_session(self) -> AgentSession:
        """Return a fresh session over these pieces."""
        return AgentSession(self.provider, self.config, self.registry, self.system_prompt, pricing=self.pricing)

    def load_session(self, data: Any) -> AgentSession:
        """Rebuild a saved session; it continues with this command's model and settings."""
        if not isinstance(data, dict):
            raise CliError("a saved session is a JSON object; this file holds something else", 1)
        data = dict(data)
        data["config"] = self.config.to_dict()
        return AgentSession.from_dict(data, provider=self.provider, registry=self.registry, pricing=self.pricing)


#: What the command line tells its user instead of the MCP client's advice to a program.
MCP_CLI_REMEDY = "its tools stay unavailable until agcore-sync is started again"


def build(args: argparse.Namespace, stack: contextlib.ExitStack) -> Setup:
    """Build the provider, tools and settings the arguments ask for.

    Args:
        args: the parsed command line (``provider``, ``model``, ``base_url``,
            ``timeout``, ``retries``, ``mcp``, ``no_demo_tools``, ``system``).
        stack: closes the provider, the registry and the MCP clients.

    Raises:
        CliError: a missing key or model, a bad ``--mcp`` value.
        AgcoreError: an MCP server failed to start or to answer.
    """
    provider, description, pricing = _provider(args, stack)
    provider, description = _resilient(provider, description, args, stack)
    endpoint = getattr(provider, "base_url", None) if args.provider is not None else None
    interrupt = TurnInterrupt()
    registry = ToolRegistry()
    stack.callback(registry.close)
    if not args.no_demo_tools:
        registry.register_all(demo_tools(interrupt))
    notes: List[str] = []
    for number, spec in enumerate(args.mcp, 1):
        _add_mcp_server(spec, number, registry, stack, args.mcp_timeout, notes)
    config = CycleConfig(model=args.model or DEMO_MODEL, retry=RetryConfig(max_retries=args.retries))
    for spec in getattr(args, "agent", None) or ():
        _add_agent(spec, provider, config, registry, pricing)
    return Setup(provider, registry, config, pricing, interrupt, description, args.system, endpoint, notes)


def _add_agent(spec: str, provider: LlmProvider, config: CycleConfig, registry: ToolRegistry, pricing: Any) -> None:
    """Register an ``--agent NAME=PROMPT``: an agent tool on the same model, with the registry's tools."""
    from agcore_sync.agent.subagents import agent_tool

    name, _, prompt = spec.partition("=")
    name = name.strip()
    if not name or not prompt.strip() or registry.get(name) is not None:
        raise CliError(f"--agent {spec!r}: expected NAME=\"SYSTEM PROMPT\" with a NAME no other tool has, "
                       "for example --agent \"research=You answer research questions briefly.\"")

    def factory() -> AgentSession:  # the registry is shared, not owned: the sub-sessions never close it
        return AgentSession(provider, config, registry, prompt.strip(), pricing=pricing)

    registry.register(agent_tool(factory, name=name, description=f"Ask the {name} agent: {prompt.strip()}"))


def _provider(args: argparse.Namespace, stack: contextlib.ExitStack) -> Any:
    if args.provider is None:
        if args.model or args.base_url:
            raise CliError(f"--model and --base-url need {provider_options()}")
        return DemoProvider(), "the built-in scripted demo model (no key, no network)", DEMO_PRICING
    if args.provider == "bedrock":
        return _bedrock(args, stack)
    if args.provider in ("gemini", "vertex"):
        return _google_provider(args, stack)
    key_name, url_name = _KEYS[args.provider]
    if not args.model:
        example = "claude-sonnet-4-5" if args.provider == "anthropic" else "gpt-4o-mini"
        raise CliError(f"--provider {args.provider} needs --model (for example --model {example})")
    base_url = args.base_url or os.environ.get(url_name) or None
    if base_url is not None:
        _check_base_url(args.provider, base_url, "--base-url" if args.base_url else url_name)
    if not os.environ.get(key_name) and base_url is None:
        raise CliError(f"--provider {args.provider} needs {key_name} in the environment "
                       "(or --base-url for a local server that needs no key)")
    if args.provider == "openai":
        from agcore_sync.llm.openai import OpenAIProvider

        provider: Any = OpenAIProvider(args.model, base_url=base_url, timeout=args.timeout)
    elif args.provider == "openai-responses":
        from agcore_sync.llm.responses import OpenAIResponsesProvider

        provider = OpenAIResponsesProvider(args.model, base_url=base_url, timeout=args.timeout)
    else:
        from agcore_sync.llm.anthropic import AnthropicProvider

        provider = AnthropicProvider(args.model, base_url=base_url, timeout=args.timeout)
    stack.callback(provider.close)
    return provider, f"{args.model} via {args.provider} at {provider.base_url}", None


def _bedrock(args: argparse.Namespace, stack: contextlib.ExitStack) -> Any:
    """BedrockProvider from the AWS environment: AWS_BEARER_TOKEN_BEDROCK or botocore's chain, AWS_REGION."""
    if not args.model:
        raise CliError("--provider bedrock needs --model "
                       "(for example --model us.anthropic.claude-sonnet-4-5-20250929-v1:0)")
    from agcore_sync.llm.bedrock import BedrockProvider

    try:
        provider = BedrockProvider(args.model, base_url=args.base_url, timeout=args.timeout)
    except (ValueError, ImportError) as exc:
        raise CliError(f"--provider bedrock: {exc}") from None
    stack.callback(provider.close)
    return provider, f"{args.model} via bedrock at {provider.base_url}", None


def _google_provider(args: argparse.Namespace, stack: contextlib.ExitStack) -> Any:
    """Build a GeminiProvider for ``--provider gemini`` (an API key) or ``vertex`` (project, google-auth)."""
    from agcore_sync.llm.gemini import GeminiProvider

    if not args.model:
        raise CliError(f"--provider {args.provider} needs --model (for example --model gemini-2.5-flash)")
    vertex = args.provider == "vertex"
    if vertex and not os.environ.get("GOOGLE_CLOUD_PROJECT"):
        raise CliError("--provider vertex needs GOOGLE_CLOUD_PROJECT in the environment (and GOOGLE_CLOUD_LOCATION, "
                       "default global; credentials from `gcloud auth application-default login` or "
                       "GOOGLE_APPLICATION_CREDENTIALS)")
    if not vertex and not (os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY")) \
            and not args.base_url:
        raise CliError("--provider gemini needs GOOGLE_API_KEY or GEMINI_API_KEY in the environment "
                       "(or --base-url for a local server that needs no key)")
    api_key = None if vertex or os.environ.get("GOOGLE_API_KEY") or os.environ.get("GEMINI_API_KEY") else ""
    provider = GeminiProvider(args.model, api_key=api_key, base_url=args.base_url or None, timeout=args.timeout,
                              vertex=vertex)
    stack.callback(provider.close)
    return provider, f"{args.model} via {args.provider} at {provider.base_url}", None


def _check_base_url(provider: str, url: str, given_as: str) -> None:
    """Raise CliError (a usage mistake) unless ``url`` is an http(s) URL with a host.

    The hint writes the URL in full; for the OpenAI-compatible providers it
    ends in ``/v1``, where such servers (Ollama, vLLM, llama.cpp) serve the API.
    """
    parts = urllib.parse.urlsplit(url)
    if parts.scheme in ("http", "https") and parts.netloc:
        return
    if parts.scheme and parts.netloc:
        raise CliError(f"{given_as} {url!r} must be an http:// or https:// URL")
    example = "http://" + url.lstrip("/").rstrip("/")
    hint = ""
    if provider in OPENAI_COMPATIBLE:
        if not example.endswith("/v1"):
            example += "/v1"
        hint = " (OpenAI-compatible servers such as Ollama, vLLM and llama.cpp serve the API under /v1)"
    joint = " " if given_as.startswith("--") else "="  # an option, or an environment variable
    raise CliError(f"{given_as}{joint}{url!r} has no http:// or https:// scheme; write it in full, "
                   f"e.g. {given_as}{joint}{example}{hint}")


def _add_mcp_server(spec: str, number: int, registry: ToolRegistry, stack: contextlib.ExitStack, timeout: float,
                    notes: List[str]) -> None:
    """Start one ``--mcp`` server over stdio and register its tools.

    Tools whose names clash with tools already loaded (the demo set has an
    ``add``, as has ``server-everything``) make the server's tools
    prefixed ``mcp<number>_``, with a note saying so.
    """
    try:
        argv: List[str] = shlex.split(spec)
    except ValueError as exc:
        raise CliError(f"--mcp {spec!r} is not a valid command line: {exc}") from exc
    if not argv:
        raise CliError("--mcp needs a command, for example --mcp \"npx -y @modelcontextprotocol/server-everything\"")
    try:
        from agcore_sync.mcp import McpClient, StdioTransport
    except ImportError as exc:  # pragma: no cover - only while the package is incomplete
        raise CliError(f"MCP support is not available in this installation: {exc}", 1) from exc
    name = " ".join([os.path.basename(argv[0]), *argv[1:]])
    if len(name) > MAX_SERVER_NAME:
        name = name[:MAX_SERVER_NAME - 3] + "..."
    client = McpClient(name, StdioTransport(argv[0], argv[1:]), timeout=timeout)
    stack.enter_context(client)  # connects; closed (server stopped) when the command ends
    tools = client.into_tools()
    clashes = sorted(tool.name for tool in tools if registry.get(tool.name) is not None)
    if clashes:
        # Keep every tool callable: this server's tools get a prefix of their own.
        prefix = f"mcp{number}_"
        tools = client.into_tools(prefix)
        taken = sorted(tool.name for tool in tools if registry.get(tool.name) is not None)
        if taken:
            raise CliError(f"MCP server {name!r} has tools named like tools already loaded: {', '.join(taken)} "
                           "(use --no-demo-tools, or leave out one of the servers)", 1)
        notes.append(f"note: the tools of MCP server {name!r} are named {prefix}<name>, since "
                     f"{', '.join(clashes)} clashed with tools already loaded")
    registry.register_all(tools)


def _resilient(provider: Any, description: str, args: argparse.Namespace,
               stack: contextlib.ExitStack) -> Any:
    """Add the ``--fallback PROVIDER:MODEL`` providers and the ``--rpm`` / ``--tpm`` limit around ``provider``."""
    specs = getattr(args, "fallback", None) or []
    rpm, tpm = getattr(args, "rpm", None), getattr(args, "tpm", None)
    if specs:
        from agcore_sync.llm.fallback import FallbackProvider

        providers = [provider]
        for spec in specs:
            name, _, model = spec.partition(":")
            if name not in _KEYS or not model:
                raise CliError(f"--fallback {spec!r}: expected PROVIDER:MODEL with PROVIDER one of "
                               f"{', '.join(_KEYS)} (for example --fallback anthropic:claude-haiku-4-5)")
            backup, _, _ = _provider(argparse.Namespace(provider=name, model=model, base_url=None,
                                                        timeout=args.timeout), stack)
            providers.append(backup)
        provider = FallbackProvider(providers)
        description += ", falling back to " + ", ".join(specs)
    if rpm is not None or tpm is not None:
        from agcore_sync.llm.ratelimit import RateLimit, RateLimitedProvider

        provider = RateLimitedProvider(provider, RateLimit(requests_per_minute=rpm, tokens_per_minute=tpm))
        description += f", limited to {rpm or '-'} requests and {tpm or '-'} tokens a minute"
    return provider, description
