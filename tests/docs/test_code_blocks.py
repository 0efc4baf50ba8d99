"""Every ``.. code-block:: python`` in README.rst and docs/ runs, or is listed here with the reason it cannot.

Longer examples live in ``docs/examples/`` (``tests/docs/test_examples.py``
runs them) and are shown inline, right after a link to their file, so a
reader of the raw ``.rst`` sees the code too; this module checks that every
such copy equals its file (or the function it names) and runs the other
blocks. Each block runs alone, in a fresh
namespace, as a reader pasting it would run it.

A block that needs something the suite cannot give it as written (an API
endpoint, a server on a fixed port, a name defined elsewhere on the page)
gets a *setup* from :data:`SETUPS`: a small, documented change of
environment, names or URLs, after which the block runs for real (for
example against a local HTTP server that speaks the OpenAI wire format) and
the setup checks what happened. A block that cannot run at all is listed in
:data:`NOT_RUN` with the reason; it is still compiled. Nothing is skipped
silently: a block is run, or listed, and every entry of both tables must
match exactly one block.
"""

from __future__ import annotations

import ast
import contextlib
import io
import re
import shutil
from pathlib import Path
from typing import Callable, Dict, Iterator, List, Optional, Tuple

import attrs
import pytest

from agcore_sync import AgentSession, MockProvider, TextDelta
from tests.support.stream_server import StreamServer
from tests.support.wire import openai_text_stream as text_response
from tests.support.wire import openai_tool_call_stream as tool_call_response

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
EXAMPLES = DOCS / "examples"
NODE_DIR = ROOT / "tests" / "node"

_DIRECTIVE = re.compile(r"^(?P<indent>\s*)\.\. (?:code-block|code|sourcecode)::\s*(?P<language>\S*)\s*$")
_OPTION = re.compile(r"^\s*:[\w-]+:")
#: The line before a copied example: "... `docs/examples/name.py <examples/name.py>`_:".
_COPY_LINK = re.compile(r"`docs/examples/[\w./]+ <(?P<target>[\w./]+\.py)>`_:\s*$")


@attrs.define
class Block:
    """One python code block: where it is and its source, dedented."""

    path: Path
    line: int
    source: str
    #: The example file this block copies (the link on the line before it), or None.
    copy_of: Optional[Path] = None

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


def rst_files() -> List[Path]:
    return [ROOT / "README.rst", *sorted(DOCS.rglob("*.rst"))]


def python_blocks(path: Path) -> List[Block]:
    """Return the python code blocks of one reStructuredText file."""
    lines = path.read_text("utf-8").splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = _DIRECTIVE.match(lines[i])
        i += 1
        if not match or match.group("language") not in ("python", "python3", "py"):
            continue
        before = next((line for line in reversed(lines[:i - 1]) if line.strip()), "")
        link = _COPY_LINK.search(before)
        copy_of = (path.parent / link.group("target")).resolve() if link else None
        indent = len(match.group("indent"))
        while i < len(lines) and (_OPTION.match(lines[i]) or not lines[i].strip()):
            i += 1
        start = i
        while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
            i += 1
        body = lines[start:i]
        margin = min(len(line) - len(line.lstrip()) for line in body if line.strip())
        source = "\n".join(line[margin:] for line in body).strip("\n") + "\n"
        blocks.append(Block(path, start + 1, source, copy_of))
    return blocks


FOUND_BLOCKS = [block for path in rst_files() for block in python_blocks(path)]
#: Blocks that copy an example file: checked against it, run through the file itself.
COPIES = [block for block in FOUND_BLOCKS if block.copy_of is not None]
#: Blocks that run here.
ALL_BLOCKS = [block for block in FOUND_BLOCKS if block.copy_of is None]


# -- setups -------------------------------------------------------------------------------------------


@attrs.define
class Run:
    """What a setup may change before a block runs, and check after it."""

    source: str
    namespace: Dict[str, object]
    monkeypatch: pytest.MonkeyPatch
    tmp_path: Path
    stack: contextlib.ExitStack
    checks: List[Callable[[str], None]] = attrs.field(factory=list)

    def replace(self, old: str, new: str) -> None:
        """Substitute ``new`` for ``old`` in the source (``old`` must be there)."""
        assert old in self.source, f"the block no longer contains {old!r}; update its setup"
        self.source = self.source.replace(old, new)

    def openai_server(self, *responses: List[bytes]) -> StreamServer:
        """Start a local server streaming ``responses`` (Chat Completions SSE steps), one per request."""
        server = self.stack.enter_context(StreamServer())
        for steps in responses:
            server.add_response(steps)

        def all_answered(_: str) -> None:
            assert len(server.requests) == len(responses), server.requests
            assert all(r.path == "/v1/chat/completions" for r in server.requests)
            assert server.errors == []

        self.checks.append(all_answered)
        return server


def setup_nothing_but_check_the_readme_output(run: Run) -> None:
    """The README's example runs as written; check that it printed the tool call and the answer."""
    run.checks.append(lambda out: _expect(out, '[multiply {"a": 17, "b": 23}]\n391'))


def setup_a_session(run: Run) -> None:
    """The index page's teaser uses ``session`` and ``TextDelta`` defined elsewhere: give it both."""
    run.namespace.update(session=AgentSession(MockProvider([MockProvider.text("17 * 23 = 391")])),
                         TextDelta=TextDelta)
    run.checks.append(lambda out: _expect(out, "17 * 23 = 391"))


def setup_openai_from_the_environment(run: Run) -> None:
    """``OpenAIProvider(model=...)`` with no URL: the environment points it at a local server, with a key."""
    server = run.openai_server(text_response("chatcmpl-jupyter", ["A context manager ", "runs setup and teardown."],
                                             (21, 9)))
    run.monkeypatch.setenv("OPENAI_BASE_URL", f"{server.url}/v1")
    run.monkeypatch.setenv("OPENAI_API_KEY", "sk-docs-test-key")

    def sent_with_the_key(out: str) -> None:
        _expect(out, "A context manager runs setup and teardown.")
        assert server.requests[0].headers["authorization"] == "Bearer sk-docs-test-key"
        assert server.requests[0].json["model"] == "gpt-4o-mini" and server.requests[0].json["stream"] is True

    run.checks.append(sent_with_the_key)


def setup_local_servers(run: Run) -> None:
    """The vLLM, llama.cpp and Ollama URLs point at one local server; the block's turn goes to "Ollama"."""
    server = run.openai_server(
        tool_call_response("chatcmpl-local-1", [("call_1", "multiply", {"a": 17, "b": 23})], (80, 20)),
        text_response("chatcmpl-local-2", ["17 * 23 ", "= 391"], (110, 8)),
    )
    for port in ("8000", "8080", "11434"):
        run.replace(f"http://localhost:{port}/v1", f"{server.url}/v1")

    def local_and_keyless(out: str) -> None:
        _expect(out, '[multiply {"a": 17, "b": 23}]')
        _expect(out, "17 * 23 = 391")
        assert [r.json["model"] for r in server.requests] == ["llama3.2", "llama3.2"]
        assert all("authorization" not in r.headers for r in server.requests)
        assert server.requests[1].json["messages"][-1] == {"role": "tool", "tool_call_id": "call_1", "content": "391"}

    run.checks.append(local_and_keyless)


def setup_gemini_server(run: Run) -> None:
    """The Gemini how-to's provider gets a key from GEMINI_API_KEY and a local server streaming Gemini chunks."""
    from tests.support.gemini import gemini_chunk, gemini_sse, gemini_usage

    server = run.stack.enter_context(StreamServer())
    call = {"functionCall": {"name": "multiply", "args": {"a": 17, "b": 23}}, "thoughtSignature": "c2lnbmF0dXJl"}
    server.add_response([gemini_sse(gemini_chunk([call], "STOP", usage=gemini_usage(80, 20)))])
    server.add_response([gemini_sse(gemini_chunk([{"text": "17 * 23 "}]),
                                    gemini_chunk([{"text": "= 391"}], "STOP", usage=gemini_usage(110, 8)))])
    run.monkeypatch.setenv("GEMINI_API_KEY", "docs-gemini-key")
    run.replace('GeminiProvider(model="gemini-2.5-flash")',
                f'GeminiProvider(model="gemini-2.5-flash", base_url="{server.url}")')

    def answered_with_the_signature_sent_back(out: str) -> None:
        _expect(out, '[multiply {"a": 17, "b": 23}]')
        _expect(out, "17 * 23 = 391")
        assert [r.headers["x-goog-api-key"] for r in server.requests] == ["docs-gemini-key"] * 2
        assert server.requests[1].json["contents"][1]["parts"][0]["thoughtSignature"] == "c2lnbmF0dXJl"
        assert server.errors == []

    run.checks.append(answered_with_the_signature_sent_back)


def setup_npm_project(run: Run) -> None:
    """Run where ``.ci/run`` installed the npm servers, so ``npx -y`` uses them; the notes folder is a tmp dir."""
    if shutil.which("npx") is None:
        pytest.skip("node/npx is not installed")
    if not (NODE_DIR / "node_modules" / ".bin" / "mcp-server-filesystem").exists():
        pytest.skip("the npm MCP servers are not installed (bash tests/node/install.sh)")
    notes = run.tmp_path / "notes"
    notes.mkdir()
    run.replace('"/tmp/agcore-notes"', repr(str(notes)))
    run.monkeypatch.chdir(NODE_DIR)
    run.checks.append(lambda out: _expect(out, str(notes.resolve())))


def _run_cassette_test(run: Run, test_name: str, mode: str) -> None:
    """Run the block's test function as pytest would, with the ``agcore_cassette`` fixture in ``mode``."""
    from agcore_sync.testing._fixture import Cassettes

    module = run.tmp_path / "tests" / "cassettes" / "test_weather"
    cassettes = Cassettes(mode=mode, folder=str(module), test_name=test_name, worker="main")
    try:
        run.namespace[test_name](cassettes)
    finally:
        cassettes.finish()


def _refusing(mp: pytest.MonkeyPatch) -> List[object]:
    """Make every socket connection and every subprocess fail; return the attempts."""
    import socket
    import subprocess

    attempts: List[object] = []

    def refuse(*args: object, **kwargs: object) -> None:
        attempts.append(args)
        raise OSError("the docs test forbids connections and processes during a replay")

    mp.setattr(socket.socket, "connect", refuse)
    mp.setattr(subprocess, "Popen", refuse)
    return attempts


def setup_testing_record_and_replay(run: Run) -> None:
    """The testing page's test: recorded against a local server (``--agcore-record=new``), replayed offline."""
    server = run.openai_server(
        tool_call_response("chatcmpl-weather-1", [("call_1", "get_weather", {"city": "Paris"})], (60, 12)),
        text_response("chatcmpl-weather-2", ["Paris: 21 C, ", "sunny."], (90, 6)),
    )
    run.replace("http://localhost:11434/v1", f"{server.url}/v1")
    name = "test_the_agent_reports_the_weather"

    def recorded_then_replayed_offline(_: str) -> None:
        _run_cassette_test(run, name, "new")
        cassette = run.tmp_path / "tests" / "cassettes" / "test_weather" / f"{name}.jsonl"
        assert len(cassette.read_text("utf-8").splitlines()) == 3  # the header and two streamed exchanges
        with pytest.MonkeyPatch.context() as mp:
            attempts = _refusing(mp)
            _run_cassette_test(run, name, "none")
        assert attempts == [] and len(server.requests) == 2

    run.checks.insert(0, recorded_then_replayed_offline)  # before the server's check that both were answered


def setup_testing_drift(run: Run) -> None:
    """The drift example replays a cassette of the Paris turn (recorded here) and asks about Rome."""
    from agcore_sync import ToolRegistry, tool
    from agcore_sync.testing import RecordingProvider

    @tool
    def get_weather(city: str) -> str:
        """Current weather of a city."""
        return f"{city}: 21 C, sunny"

    run.monkeypatch.chdir(run.tmp_path)
    inner = MockProvider([MockProvider.tool_calls(("get_weather", {"city": "Paris"})), MockProvider.text("Sunny.")])
    recorder = RecordingProvider(inner, "tests/cassettes/test_weather/test_the_agent_reports_the_weather.jsonl")
    with ToolRegistry() as registry:
        registry.register(get_weather)
        AgentSession(recorder, registry=registry).submit_turn("Weather in Paris?")
    run.checks.append(lambda out: _expect(
        out, "cassette tests/cassettes/test_weather/test_the_agent_reports_the_weather.jsonl, line 2: the request "
             "differs from the recorded one at $.messages[0].content[0].text: recorded 'Weather in Paris?', sent "
             "'Weather in Rome?'; re-record the cassette if the change is intended"))


def setup_testing_mcp(run: Run) -> None:
    """The MCP example's server is the suite's stdlib one; recorded, then replayed with processes refused."""
    import sys

    server = ROOT / "tests" / "mcp_servers" / "raw_server.py"
    run.replace('StdioTransport("python", ["notes_server.py"])',
                f"StdioTransport({sys.executable!r}, [{str(server)!r}])")

    def recorded_then_replayed_offline(_: str) -> None:
        _run_cassette_test(run, "test_the_notes_server_echoes", "new")
        with pytest.MonkeyPatch.context() as mp:
            attempts = _refusing(mp)
            _run_cassette_test(run, "test_the_notes_server_echoes", "none")
        assert attempts == []

    run.checks.append(recorded_then_replayed_offline)


def setup_nothing_but_check_the_test_models(run: Run) -> None:
    """TestModel and FunctionModel need nothing; check what the block prints."""
    run.checks.append(lambda out: _expect(out, "1 done\nYou said: hello"))


#: Blocks that run after a setup: (file, a text found only in that block) -> setup.
SETUPS: Dict[Tuple[str, str], Callable[[Run], None]] = {
    ("README.rst", "def multiply"): setup_nothing_but_check_the_readme_output,
    ("docs/index.rst", 'session.submit_turn_stream("What is 17 * 23?")'): setup_a_session,
    ("docs/howto/jupyter.rst", 'OpenAIProvider(model="gpt-4o-mini")'): setup_openai_from_the_environment,
    ("docs/howto/local_models.rst", "localhost:11434"): setup_local_servers,
    ("docs/howto/mcp_servers.rst", "@modelcontextprotocol/server-filesystem"): setup_npm_project,
    ("docs/howto/testing.rst", "def test_the_agent_reports_the_weather"): setup_testing_record_and_replay,
    ("docs/howto/testing.rst", "Weather in Rome?"): setup_testing_drift,
    ("docs/howto/testing.rst", "def test_the_notes_server_echoes"): setup_testing_mcp,
    ("docs/howto/testing.rst", "FunctionModel(answer)"): setup_nothing_but_check_the_test_models,
    ("docs/howto/gemini.rst", "def multiply"): setup_gemini_server,
}

#: Blocks that are compiled but not run: (file, a text found only in that block) -> why.
NOT_RUN: Dict[Tuple[str, str], str] = {
    ("docs/howto/web_streaming.rst", "StreamingHttpResponse"):
        "a view fragment that needs a Django project around it (settings, URLconf); tests/webapps runs the "
        "Django example app, and tests/examples the Flask app it mirrors",
    ("docs/howto/mcp_servers.rst", "mcp-server-fetch"):
        "needs the mcp-server-fetch package from PyPI, not a test dependency, and the network",
    ("docs/observability.rst", "OTLPSpanExporter"):
        "needs opentelemetry-exporter-otlp and a collector (tests/telemetry runs the same app with the SDK)",
    ("docs/howto/gemini.rst", "service_account"):
        "needs a Google Cloud service-account key file and Vertex AI (tests/llm/test_gemini.py runs google-auth-"
        "shaped credentials against a local server)",
    ("docs/howto/gemini.rst", "gcloud_token"):
        "needs the gcloud CLI, a logged-in account and Vertex AI (tests/llm/test_gemini_request_oracle.py runs a "
        "token callable against a local server)",
    ("docs/observability.rst", "DjangoInstrumentor"):
        "needs opentelemetry-instrumentation-django (not a test dependency) and a Django project around it",
}


def _expect(out: str, text: str) -> None:
    assert text in out, f"expected {text!r} in the block's output:\n{out}"


def _entry(table: Dict[Tuple[str, str], object], block: Block) -> Iterator[object]:
    for (file, marker), value in table.items():
        if block.path == ROOT / file and marker in block.source:
            yield value


# -- the tests ----------------------------------------------------------------------------------------


def test_blocks_are_found_in_the_readme_and_the_docs():
    files = {block.path.relative_to(ROOT).as_posix() for block in ALL_BLOCKS}
    assert {"README.rst", "docs/quickstart.rst", "docs/tools.rst", "docs/howto/local_models.rst"} <= files


@pytest.mark.parametrize("table", [SETUPS, NOT_RUN], ids=["SETUPS", "NOT_RUN"])
def test_every_listed_block_exists_once_and_no_block_is_both_set_up_and_not_run(table):
    for (file, marker) in table:
        matches = [b for b in ALL_BLOCKS if b.path == ROOT / file and marker in b.source]
        assert len(matches) == 1, f"{file}: {marker!r} matches {len(matches)} blocks; make the marker unique"
    both = [b.where for b in ALL_BLOCKS if list(_entry(SETUPS, b)) and list(_entry(NOT_RUN, b))]
    assert both == []


@pytest.mark.parametrize("block", ALL_BLOCKS, ids=lambda b: b.where)
def test_the_code_block_runs(block, monkeypatch, tmp_path):
    code = compile(block.source, block.where, "exec")  # every block, listed ones too, is valid Python
    reasons = list(_entry(NOT_RUN, block))
    if reasons:
        pytest.skip(f"listed in NOT_RUN: {reasons[0]}")
    with contextlib.ExitStack() as stack:
        run = Run(block.source, {"__name__": "__docs__"}, monkeypatch, tmp_path, stack)
        for setup in _entry(SETUPS, block):
            setup(run)
            code = compile(run.source, block.where, "exec")
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(code, run.namespace)
        for check in run.checks:
            check(out.getvalue())


def test_no_page_hides_its_code_behind_an_include():
    """A literalinclude shows nothing in a repository browser's view of the raw file."""
    hidden = [f"{path.relative_to(ROOT)}" for path in rst_files() if ".. literalinclude::" in path.read_text("utf-8")]
    assert hidden == []


@pytest.mark.parametrize("block", COPIES, ids=lambda b: b.where)
def test_every_copied_example_equals_its_file_or_a_function_of_it(block):
    assert block.copy_of.is_file(), f"{block.where} links a missing file"
    source = block.copy_of.read_text("utf-8")
    if block.source.strip() == source.strip():
        return
    tree = ast.parse(source)
    lines = source.splitlines()
    pieces = []
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
            pieces.append("\n".join(lines[first - 1:node.end_lineno]).strip())
    assert block.source.strip() in pieces, f"{block.where} differs from {block.copy_of.name}: copy the file again"


def test_every_example_script_is_shown_in_the_docs():
    shown = {block.copy_of for block in COPIES}
    scripts = {p.resolve() for p in EXAMPLES.glob("*.py")}
    assert scripts - shown == set(), "examples no page shows"


def test_the_readme_is_valid_restructuredtext():
    docutils_core = pytest.importorskip("docutils.core", reason="docutils comes with Sphinx (the docs extra)")
    errors = io.StringIO()
    docutils_core.publish_doctree((ROOT / "README.rst").read_text("utf-8"),
                                  settings_overrides={"warning_stream": errors, "report_level": 2})
    assert errors.getvalue() == ""
