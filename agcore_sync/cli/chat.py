"""``agcore-sync chat``: an interactive session over :class:`AgentSession`.

Each line typed is a turn, streamed as it happens: text as it arrives, a
line per tool call and per result, and on a terminal a spinner with the
elapsed time while tools run. Ctrl-C during a turn cancels it (the stream
is closed, complete rounds are kept) and returns to the prompt; Ctrl-C or
end of input at the prompt leaves. Lines starting with ``/`` are commands
(``/help`` lists them). ``/image PATH`` attaches an image (PNG, JPEG, GIF or
WebP, checked at once) to the next message.
"""

from __future__ import annotations

import base64
import json
import sys
from typing import Callable, Dict, List, TextIO, Union

from agcore_sync.cli.console import EventPrinter, TurnOutcome, one_line, run_turn
from agcore_sync.cli.interrupt import EXIT_INTERRUPTED
from agcore_sync.cli.setup import CliError, Setup
from agcore_sync.errors import AgcoreError
from agcore_sync.llm.media import ImageBlock
from agcore_sync.llm.types import Message

__all__ = ["ChatRepl", "PROMPT"]

#: The input prompt.
PROMPT = "you> "

_HELP = """commands:
  /help              this list
  /tools             the tools the model may call
  /image PATH        attach an image to your next message
  /cost              tokens and cost so far
  /slots             list the slots (* marks the current one)
  /slots new NAME    create a slot (an empty history)
  /slots use NAME    switch to a slot
  /save FILE         save the session as JSON
  /load FILE         load a session saved with /save
  /exit              leave (also Ctrl-D, or Ctrl-C at the prompt)
Ctrl-C during a turn cancels the turn."""


class _Exit(Exception):
    """Raised by /exit to leave the loop."""


class ChatRepl:
    """The read-eval-print loop of ``agcore-sync chat``.

    Args:
        setup: the provider, tools and settings.
        out: where the conversation goes.
        err: where errors go, one line each.
        read_line: reads a line after showing the prompt; raises EOFError at
            the end of input (default: :func:`input`).
    """

    def __init__(self, setup: Setup, out: TextIO, err: TextIO,
                 read_line: Callable[[str], str] = input) -> None:
        self._setup = setup
        self._out = out
        self._err = err
        self._read_line = read_line
        self.session = setup.new_session()
        self._printer = EventPrinter(out, spinner=out.isatty())
        #: Images attached with /image, sent with the next message.
        self._attached: List[ImageBlock] = []
        self._commands: Dict[str, Callable[[List[str]], None]] = {
            "help": self._help,
            "tools": self._tools,
            "image": self._image,
            "cost": self._cost,
            "slots": self._slots,
            "save": self._save,
            "load": self._load,
            "exit": self._exit,
            "quit": self._exit,
        }

    def run(self) -> int:
        """Read and run lines until ``/exit``, end of input or Ctrl-C at the prompt.

        Returns:
            0 after ``/exit`` or end of input, 130 after Ctrl-C at the prompt
            (the shell's convention for SIGINT, as docs/cli.rst says).
        """
        # Piped input is not echoed by a terminal: echo it, so the output reads as a transcript.
        echo = self._read_line is input and not sys.stdin.isatty()
        if self._read_line is input and not echo:
            try:  # line editing and history, where the platform has it
                import readline  # noqa: F401
            except ImportError:  # pragma: no cover - Windows
                pass
        tools = ", ".join(sorted(self._setup.registry.list_tools())) or "(none)"
        self._say(f"agcore-sync chat: {self._setup.description}")
        self._say(f"tools: {tools}")
        for note in self._setup.notes:
            self._say(note)
        self._say("type a message, /help for commands, /exit to leave; Ctrl-C cancels a turn")
        try:
            self._loop(echo)
        except EOFError:
            self._say("")
        except KeyboardInterrupt:
            # Ctrl-C outside a turn leaves. CPython's readline can hold a
            # SIGINT that lands just before it waits until the line is
            # entered; the KeyboardInterrupt then surfaces after input()
            # returns, which is why this covers the whole loop.
            self._say("")
            return EXIT_INTERRUPTED
        except _Exit:
            pass
        return 0

    def _loop(self, echo: bool) -> None:
        while True:
            line = self._read_line(PROMPT)
            if echo:
                self._say(line)
            line = line.strip()
            if not line:
                continue
            if line.startswith("/"):
                self._command(line)
            else:
                self._turn(line)

    # -- turns ------------------------------------------------------------------

    def _turn(self, text: str) -> None:
        user_input: Union[str, Message] = Message.user(text, *self._attached) if self._attached else text
        self._attached = []
        try:
            outcome = run_turn(self.session, user_input, self._printer, self._setup.interrupt)
        except AgcoreError as exc:  # the session refused the turn (readonly slot...)
            self._error(f"{type(exc).__name__}: {exc}")
            return
        if outcome is TurnOutcome.CANCELLED:
            self._printer.note("[cancelled] the turn was stopped; complete tool rounds are kept")
        elif outcome is TurnOutcome.FAILED:
            self._error(self._setup.explain(self._printer.error or "the turn failed", self._printer.exception))

    # -- commands ---------------------------------------------------------------

    def _command(self, line: str) -> None:
        words = line[1:].split()
        name = words.pop(0) if words else ""
        handler = self._commands.get(name.lower())
        if handler is None:
            self._error(f"unknown command {line.split()[0]!r}; /help lists the commands")
            return
        try:
            handler(words)
        except (AgcoreError, CliError, OSError, ValueError, KeyError, TypeError) as exc:
            self._error(f"/{name}: {type(exc).__name__}: {exc}" if not isinstance(exc, CliError)
                        else f"/{name}: {exc}")

    def _help(self, words: List[str]) -> None:
        self._say(_HELP)

    def _tools(self, words: List[str]) -> None:
        names = sorted(self._setup.registry.list_tools())
        if not names:
            self._say("no tools")
        for name in names:
            tool = self._setup.registry.get(name)
            description = one_line(tool.description) if tool is not None else ""
            self._say(f"  {name}: {description}")

    def _image(self, words: List[str]) -> None:
        path = _one_path(words, "image")
        image = ImageBlock.from_path(path)  # a ValueError (type, size, unreadable) is reported by _command
        self._attached.append(image)
        size = len(base64.b64decode(image.data or ""))
        self._say(f"attached {path} ({image.media_type}, {size} bytes); "
                  f"it goes with your next message ({len(self._attached)} attached)")

    def _cost(self, words: List[str]) -> None:
        usage = self.session.cost_so_far
        cached = f" ({usage.cache_read_tokens} cached)" if usage.cache_read_tokens else ""
        self._say(f"tokens: {usage.prompt_tokens} in{cached}, {usage.completion_tokens} out, "
                  f"{usage.total_tokens} total over {self.session.turn_index} turn(s)")
        cost = self.session.cost_usd
        self._say("cost: unknown (a model without a known price was used)" if cost is None else f"cost: ${cost:.6f}")

    def _slots(self, words: List[str]) -> None:
        if not words:
            for name in self.session.slots:
                mark = "*" if name == self.session.current_slot else " "
                self._say(f"{mark} {name}")
            return
        if len(words) != 2 or words[0] not in ("new", "use"):
            raise CliError("use /slots, /slots new NAME or /slots use NAME")
        action, name = words
        if action == "new":
            self.session.create_slot(name)
            self._say(f"created slot {name!r}; /slots use {name} switches to it")
        else:
            self.session.switch_slot(name)
            self._say(f"now on slot {name!r} ({len(self.session.messages())} messages)")

    def _save(self, words: List[str]) -> None:
        path = _one_path(words, "save")
        with open(path, "w", encoding="utf-8") as file:
            json.dump(self.session.to_dict(), file, indent=2)
        self._say(f"saved the session to {path} ({self.session.turn_index} turn(s), "
                  f"{len(self.session.slots)} slot(s))")

    def _load(self, words: List[str]) -> None:
        path = _one_path(words, "load")
        with open(path, encoding="utf-8") as file:
            data = json.load(file)
        self.session = self._setup.load_session(data)
        self._say(f"loaded the session from {path}: {self.session.turn_index} turn(s), "
                  f"slot {self.session.current_slot!r} with {len(self.session.messages())} messages")

    def _exit(self, words: List[str]) -> None:
        raise _Exit()

    # -- output -----------------------------------------------------------------

    def _say(self, text: str) -> None:
        self._out.write(text + "\n")
        self._out.flush()

    def _error(self, message: str) -> None:
        self._out.flush()
        self._err.write(f"error: {one_line(message)}\n")
        self._err.flush()


def _one_path(words: List[str], command: str) -> str:
    if not words:
        raise CliError(f"use /{command} FILE")
    return " ".join(words)
