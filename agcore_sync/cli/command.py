"""The ``agcore-sync`` command (also ``python -m agcore_sync``).

- ``agcore-sync demo``: one streaming, tool-using turn. With no options it
  runs on the built-in scripted demo model (no key, no network); with
  ``--provider openai|openai-responses|anthropic|bedrock --model M [--base-url URL]`` the same question
  and tools go to a real endpoint, the key read from ``OPENAI_API_KEY`` /
  ``ANTHROPIC_API_KEY``; ``--provider gemini`` reads ``GOOGLE_API_KEY`` or
  ``GEMINI_API_KEY``, ``--provider vertex`` ``GOOGLE_CLOUD_PROJECT`` /
  ``GOOGLE_CLOUD_LOCATION`` and google-auth's default credentials. ``--mcp "COMMAND ARGS"`` (repeatable) adds the
  tools of an MCP server started over stdio.
  ``--output SPEC`` asks for structured output: SPEC is a JSON Schema file
  or ``module:Class`` (a dataclass, TypedDict, attrs or pydantic class
  importable from the current directory); the validated object is printed
  after the turn.
- ``agcore-sync chat``: an interactive session (see :mod:`agcore_sync.cli.chat`).

Failures (a missing key, an unreachable URL, an MCP server that does not
start, any :class:`~agcore_sync.errors.AgcoreError`) are one line on stderr
and a non-zero exit status: 2 for a usage mistake, 1 for a failure, 130
after Ctrl-C. ``--debug`` shows library logs and lets unexpected errors
raise with their traceback.

The command-line modules (this one, ``chat``, ``console``) are the only
places that print; the library itself logs.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import json
import logging
import os
import sys
from typing import Any, Dict, List, Optional, TextIO, Tuple

from agcore_sync._version import __version__
from agcore_sync.cli import mcp_serve
from agcore_sync.cli.console import EventPrinter, TurnOutcome, one_line, run_turn
from agcore_sync.cli.demo import DEMO_QUESTION
from agcore_sync.cli.interrupt import EXIT_INTERRUPTED
from agcore_sync.cli.providers import PROVIDERS
from agcore_sync.cli.setup import MCP_CLI_REMEDY, CliError, Setup, build
from agcore_sync.errors import AgcoreError
from agcore_sync.mcp.client.session import RECONNECT_ADVICE

__all__ = ["main"]

#: Exit status after Ctrl-C, as shells report a SIGINT death.

#: The most of an MCP server's last stderr lines an error line shows, in characters.
MAX_STDERR_SHOWN = 300

_PROG = "agcore-sync"


def _positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number of seconds, got {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"expected a number of seconds above 0, got {text!r}")
    return value


def _per_minute(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number a minute, got {text!r}") from None
    if not 0 < value < float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number above 0, got {text!r}")
    return value


def _count(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected 0 or more, got {text!r}")
    return value


def _parsers() -> Tuple[argparse.ArgumentParser, Dict[str, argparse.ArgumentParser]]:
    """Return the command's parser and its subcommands' parsers by name."""
    common = argparse.ArgumentParser(add_help=False)
    model = common.add_argument_group("model")
    model.add_argument("--provider", choices=PROVIDERS,
                       help="a real provider: OpenAI Chat Completions, the OpenAI Responses API, Anthropic, "
                            "Gemini (GOOGLE_API_KEY or GEMINI_API_KEY), Vertex AI (GOOGLE_CLOUD_PROJECT, "
                            "GOOGLE_CLOUD_LOCATION, google-auth credentials) or "
                            "Amazon Bedrock (AWS_BEARER_TOKEN_BEDROCK or AWS credentials, AWS_REGION) "
                            "(default: the built-in scripted demo model)")
    model.add_argument("--model", help="the model name, required with --provider")
    model.add_argument("--base-url", help="the API root, e.g. http://localhost:11434/v1 for Ollama "
                                          "(OpenAI URLs include /v1; a local server needs no key)")
    model.add_argument("--timeout", type=_positive_float, default=60.0,
                       help="seconds to connect and per read (default 60)")
    model.add_argument("--retries", type=_count, default=2, help="retries of a failed provider call (default 2)")
    model.add_argument("--fallback", action="append", default=[], metavar="PROVIDER:MODEL",
                       help="a provider to fall back on when the one before is down or rate-limited (repeatable)")
    model.add_argument("--rpm", type=_per_minute, help="the most requests a minute (a local rate limit)")
    model.add_argument("--tpm", type=_per_minute, help="the most tokens a minute (a local rate limit)")
    tools = common.add_argument_group("tools")
    tools.add_argument("--mcp", action="append", default=[], metavar='"COMMAND ARGS"',
                       help="start an MCP server over stdio and add its tools (repeatable)")
    tools.add_argument("--mcp-timeout", type=_positive_float, default=30.0,
                       help="seconds an MCP server may take to answer (default 30)")
    tools.add_argument("--agent", action="append", default=[], metavar='NAME="SYSTEM PROMPT"',
                       help="add an agent used as a tool: NAME runs a turn of its own on the same model, with this "
                            "system prompt and the other tools, drawn indented (repeatable)")
    tools.add_argument("--no-demo-tools", action="store_true",
                       help="leave out the demo tools (add, multiply, word_count, utc_now, sleep_ms)")
    common.add_argument("--system", help="a system prompt")
    common.add_argument("--debug", action="store_true", help="show library logs and tracebacks")

    parser = argparse.ArgumentParser(prog=_PROG, description="agcore_sync: a synchronous core for LLM agents.")
    parser.add_argument("--version", action="version", version=f"{_PROG} {__version__}")
    commands = parser.add_subparsers(dest="command", required=True, metavar="{demo,chat,mcp-serve}")
    demo = commands.add_parser("demo", parents=[common], help="run one streaming, tool-using turn",
                               description="Run one streaming, tool-using turn and print it as it happens.")
    demo.add_argument("--question", default=DEMO_QUESTION, help="what to ask (default: a question for the tools)")
    demo.add_argument("--output", metavar="SPEC",
                      help="ask for structured output: a JSON Schema file, or module:Class (a dataclass, "
                           "TypedDict, attrs or pydantic class); the validated object is printed")
    chat = commands.add_parser("chat", parents=[common], help="an interactive session with tools",
                               description="An interactive session: type a message, or /help for the commands.")
    serve = mcp_serve.add_parser(commands)
    return parser, {"demo": demo, "chat": chat, "mcp-serve": serve}


def _parse(argv: Optional[List[str]]) -> argparse.Namespace:
    """Parse ``argv``; an option a subcommand does not know is reported with that subcommand's usage."""
    parser, subcommands = _parsers()
    args, unknown = parser.parse_known_args(argv)
    if unknown:
        subcommands[args.command].error(f"unrecognized arguments: {' '.join(unknown)}")
    return args


def _configure_output() -> None:
    # A model may answer in any script; never die on a terminal that cannot show it.
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            reconfigure(errors="replace")


def _configure_logging(debug: bool) -> None:
    logger = logging.getLogger("agcore_sync")
    if debug:
        logging.basicConfig(level=logging.DEBUG, format="%(levelname)s %(name)s: %(message)s")
    elif not logger.handlers:
        # Without a handler, warnings would go to stderr through logging's
        # last resort and break the one-line error contract.
        logger.addHandler(logging.NullHandler())
        logger.propagate = False


def _fail(err: TextIO, message: str) -> None:
    err.write(f"{_PROG}: error: {one_line(message)}\n")
    err.flush()


def _describe(exc: AgcoreError) -> str:
    """Return the one-line message for a failure, with the end of an MCP server's stderr if it has one."""
    message = one_line(f"{type(exc).__name__}: {exc}").replace(RECONNECT_ADVICE, MCP_CLI_REMEDY)
    tail = one_line(getattr(exc, "stderr_tail", None) or "")
    if tail and tail[-40:] not in message:  # the library's message may carry the tail already
        if len(tail) > MAX_STDERR_SHOWN:
            tail = "..." + tail[-(MAX_STDERR_SHOWN - 3):]
        message += f" (server stderr: {tail})"
    return message


def load_output(spec: str) -> Any:
    """Return the ``OutputSchema`` that ``--output`` names: a JSON Schema file, or ``module:Class``.

    Raises:
        CliError: the file cannot be read or is not JSON, the class cannot
            be imported, or what was found is no usable schema (exit 2).
    """
    if os.path.exists(spec) or ":" not in spec:
        try:
            with open(spec, encoding="utf-8") as file:
                target: Any = json.load(file)
        except OSError as exc:
            raise CliError(f"--output: cannot read {spec!r}: {exc.strerror or exc}") from None
        except ValueError as exc:
            raise CliError(f"--output: {spec!r} is not JSON: {exc}") from None
    else:
        module_name, _, attribute = spec.partition(":")
        if os.getcwd() not in sys.path:
            sys.path.insert(0, os.getcwd())  # as ``python -m`` does, so a module next to the user is found
        try:
            target = importlib.import_module(module_name)
            for part in attribute.split("."):
                target = getattr(target, part)
        except ImportError as exc:
            raise CliError(f"--output: cannot import {module_name!r}: {exc}") from None
        except AttributeError:
            raise CliError(f"--output: {module_name!r} has no {attribute!r}") from None
    from agcore_sync.llm.output import OutputSchema  # only when --output is given

    try:
        return OutputSchema.of(target)
    except (TypeError, ValueError) as exc:
        raise CliError(f"--output: {spec!r} is not a usable output schema: {exc}") from None


def _shown(value: Any) -> str:
    """Return the validated output as one line: JSON for plain data, the repr for an instance."""
    if value is None or isinstance(value, (dict, list, str, int, float, bool)):
        from agcore_sync.llm.output import dump_json

        return json.dumps(dump_json(value), ensure_ascii=False)
    return repr(value)


def run_demo(setup: Setup, question: str, out: TextIO, err: TextIO, output: Any = None) -> int:
    """Run the demo turn on ``setup`` and print it; return the exit status.

    With ``output`` the turn asks for structured output and the validated
    object is printed after it, as ``[output] ...``.
    """
    out.write(f"{_PROG} demo: {setup.description}\n")
    out.write(f"tools: {', '.join(sorted(setup.registry.list_tools())) or '(none)'}\n")
    for note in setup.notes:
        out.write(note + "\n")
    out.write("\n")
    out.write(f"you> {question}\n")
    out.flush()
    session = setup.new_session()
    printer = EventPrinter(out, spinner=out.isatty())
    outcome = run_turn(session, question, printer, setup.interrupt, output=output)
    if outcome is TurnOutcome.CANCELLED:
        printer.note("[cancelled] the turn was stopped")
        return EXIT_INTERRUPTED
    if outcome is TurnOutcome.FAILED:
        _fail(err, setup.explain(printer.error or "the turn failed", printer.exception))
        return 1
    if output is not None:
        printer.note(f"[output] {_shown(printer.output)}")
    usage = session.cost_so_far
    cost = "unknown (no price for this model)" if session.cost_usd is None else f"${session.cost_usd:.6f}"
    printer.note(f"[usage] {usage.prompt_tokens} tokens in, {usage.completion_tokens} out; cost {cost}")
    return 0


def main(argv: Optional[List[str]] = None) -> int:
    """Run the command line; return the exit status.

    Args:
        argv: the arguments (default: ``sys.argv[1:]``).

    Returns:
        0 on success, 1 on a failure, 2 on a usage mistake, 130 after Ctrl-C.

    .. versionadded:: 0.1.0
    """
    args = _parse(argv)
    _configure_output()
    _configure_logging(args.debug)
    out, err = sys.stdout, sys.stderr
    try:
        if args.command == "mcp-serve":
            return mcp_serve.run(args, err)
        with contextlib.ExitStack() as stack:
            output = load_output(args.output) if getattr(args, "output", None) else None
            setup = build(args, stack)
            if args.command == "demo":
                return run_demo(setup, args.question, out, err, output)
            from agcore_sync.cli.chat import ChatRepl

            return ChatRepl(setup, out, err).run()
    except CliError as exc:
        _fail(err, str(exc))
        return exc.exit_code
    except AgcoreError as exc:
        _fail(err, _describe(exc))
        return 1
    except KeyboardInterrupt:
        _fail(err, "interrupted")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if args.debug:
            raise
        _fail(err, f"unexpected {type(exc).__name__}: {exc} (run with --debug to see the traceback)")
        return 1
