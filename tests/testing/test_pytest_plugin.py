"""The pytest plugin, run inside pytest (pytester): record, replay, drift, a missing cassette, xdist."""

from __future__ import annotations

import configparser
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


#: The inner runs load only this plugin (and xdist where asked): pytest's autoloading of every
#: installed plugin costs seconds per run on a loaded machine (see the ``no_autoload`` fixture);
#: that the entry point names this module is checked from setup.cfg below.
PLUGIN = ["-p", "agcore_sync.testing.pytest_plugin", "-p", "no:cacheprovider"]


@pytest.fixture(autouse=True)
def no_autoload(monkeypatch):
    """Inner pytest runs load no plugin by entry point (so none is registered twice either)."""
    monkeypatch.setenv("PYTEST_DISABLE_PLUGIN_AUTOLOAD", "1")


#: The tests pytester runs: the inner provider answers from the environment, so a replay can prove
#: it was not asked (its script is empty) and a drift can change the question.
TEST_FILE = '''
import os
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, MessageRequest

def inner():
    answers = [a for a in os.environ.get("AGCORE_TEST_ANSWERS", "").split("|") if a]
    return MockProvider([MockProvider.text(a) for a in answers])

def ask(provider, question=None):
    question = question or os.environ.get("AGCORE_TEST_QUESTION", "What is 2 + 2?")
    return provider.chat(MessageRequest(None, [Message.user(question)])).message.text

def test_answer(agcore_cassette):
    assert ask(agcore_cassette(inner())) == "4"
'''


@pytest.fixture
def project(pytester, monkeypatch):
    """A project with one test module, ``test_agent.py``, using the fixture."""
    monkeypatch.setenv("AGCORE_TEST_ANSWERS", "4")
    monkeypatch.delenv("AGCORE_TEST_QUESTION", raising=False)
    pytester.makepyfile(test_agent=TEST_FILE)
    return pytester


def run(pytester, *args):
    return pytester.runpytest(*PLUGIN, *args)


def cassette_of(pytester, test: str = "test_answer") -> Path:
    return pytester.path / "cassettes" / "test_agent" / f"{test}.jsonl"


def test_record_new_writes_the_cassette_and_a_replay_never_asks_the_provider(project, monkeypatch):
    run(project, "--agcore-record=new").assert_outcomes(passed=1)
    header, row = [json.loads(line) for line in cassette_of(project).read_text("utf-8").splitlines()]
    assert header["provider"] == "MockProvider" and row["response"]["message"]["content"][0]["text"] == "4"

    monkeypatch.setenv("AGCORE_TEST_ANSWERS", "")  # the provider has nothing left to say
    run(project).assert_outcomes(passed=1)
    run(project, "--agcore-record=new").assert_outcomes(passed=1)  # new: an existing cassette is replayed
    assert not list(project.path.glob("cassettes/test_agent/.*"))  # no temporary file, no lock left


def test_a_missing_cassette_fails_naming_the_option_to_record_it(project):
    result = run(project)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*CassetteError: no cassette at *test_answer.jsonl: record it by running "
                                 "this test with --agcore-record=new*"])
    assert not cassette_of(project).exists()


def test_a_drifting_request_fails_naming_the_json_path_and_both_values(project, monkeypatch):
    run(project, "--agcore-record=new").assert_outcomes(passed=1)
    monkeypatch.setenv("AGCORE_TEST_QUESTION", "What is 3 + 3?")
    result = run(project)
    result.assert_outcomes(failed=1)
    assert ("test_answer.jsonl, line 2: the request differs from the recorded one at $.messages[0].content[0].text: "
            "recorded 'What is 2 + 2?', sent 'What is 3 + 3?'") in result.stdout.str()
    assert "CassetteMismatchError" in result.stdout.str()


def test_record_all_records_every_cassette_again(project, monkeypatch):
    run(project, "--agcore-record=new").assert_outcomes(passed=1)
    monkeypatch.setenv("AGCORE_TEST_QUESTION", "What is 3 + 3?")
    run(project, "--agcore-record=all").assert_outcomes(passed=1)
    row = json.loads(cassette_of(project).read_text("utf-8").splitlines()[1])
    assert row["request"]["messages"][0]["content"][0]["text"] == "What is 3 + 3?"
    run(project).assert_outcomes(passed=1)


def test_a_drift_the_code_swallowed_still_fails_the_test_at_teardown(pytester, monkeypatch):
    monkeypatch.setenv("AGCORE_TEST_ANSWERS", "4")
    pytester.makepyfile(test_agent=TEST_FILE + '''
def test_swallows(agcore_cassette):
    provider = agcore_cassette(inner())
    try:
        ask(provider, "a question never recorded" if os.environ.get("DRIFT") else None)
    except Exception:
        pass
''')
    run(pytester, "--agcore-record=new").assert_outcomes(passed=2)
    monkeypatch.setenv("DRIFT", "1")
    result = run(pytester)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_swallows*", "*CassetteMismatchError*"])


def test_names_follow_the_parameters_and_the_order_of_calls_and_the_class_is_checked(pytester, monkeypatch):
    monkeypatch.setenv("AGCORE_TEST_ANSWERS", "4|4")
    pytester.makepyfile(test_agent=TEST_FILE + '''
import pytest
from agcore_sync.testing import FunctionModel

@pytest.mark.parametrize("who", ["a/b", "c"])
def test_two(agcore_cassette, who):
    assert ask(agcore_cassette(inner())) == "4"
    assert ask(agcore_cassette(inner())) == "4"

def test_named(agcore_cassette):
    assert ask(agcore_cassette(inner(), name="shared answer")) == "4"

def test_other_class(agcore_cassette):
    provider = agcore_cassette(FunctionModel(lambda m, r: "4"), name="test_answer")
''')
    run(pytester, "--agcore-record=new", "-k", "not other_class").assert_outcomes(passed=4)
    names = sorted(p.name for p in (pytester.path / "cassettes" / "test_agent").iterdir())
    assert names == ["shared_answer.jsonl", "test_answer.jsonl", "test_two[a_b]-2.jsonl", "test_two[a_b].jsonl",
                     "test_two[c]-2.jsonl", "test_two[c].jsonl"]
    result = run(pytester, "-k", "other_class")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*was recorded with MockProvider, but the test passes FunctionModel: "
                                 "re-record it with --agcore-record=all*"])


def test_a_cassette_another_live_worker_is_recording_is_refused_and_a_dead_ones_lock_is_taken_over(project):
    folder = project.path / "cassettes" / "test_agent"
    folder.mkdir(parents=True)
    lock = folder / "test_answer.jsonl.lock"
    lock.write_text(json.dumps({"worker": "gw7", "pid": os.getpid()}))
    result = run(project, "--agcore-record=new")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*is being recorded by worker 'gw7' (pid*two tests may not record one cassette*"])
    assert lock.exists() and not cassette_of(project).exists()

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait(30)
    lock.write_text(json.dumps({"worker": "gw7", "pid": gone.pid}))
    run(project, "--agcore-record=new").assert_outcomes(passed=1)
    assert cassette_of(project).exists() and not lock.exists()


XDIST_FILE = '''
import pytest
from agcore_sync.llm.mock import MockProvider
from agcore_sync.llm.types import Message, MessageRequest

@pytest.mark.parametrize("n", range(8))
def test_each(agcore_cassette, n):
    provider = agcore_cassette(MockProvider([MockProvider.text(f"answer {n}")] * 3))
    for _ in range(3):
        assert provider.chat(MessageRequest(None, [Message.user(f"question {n}")])).message.text == f"answer {n}"
'''


def test_under_xdist_each_worker_writes_only_its_own_cassettes_whole(pytester):
    pytest.importorskip("xdist", reason="pytest-xdist (the test extra) runs the workers")
    pytester.makepyfile(test_agent=XDIST_FILE)
    result = pytester.runpytest_subprocess(*PLUGIN, "-p", "xdist.plugin", "-n", "2", "--agcore-record=new")
    result.assert_outcomes(passed=8)
    folder = pytester.path / "cassettes" / "test_agent"
    assert sorted(p.name for p in folder.iterdir()) == sorted(f"test_each[{n}].jsonl" for n in range(8))
    for n in range(8):
        header, *rows = [json.loads(line) for line in (folder / f"test_each[{n}].jsonl").read_text().splitlines()]
        assert header["agcore_cassette"] == 1 and len(rows) == 3
        assert {row["response"]["message"]["content"][0]["text"] for row in rows} == {f"answer {n}"}
    replay = pytester.runpytest_subprocess(*PLUGIN, "-p", "xdist.plugin", "-n", "2")
    replay.assert_outcomes(passed=8)


def test_the_plugin_is_declared_and_loads_nothing_but_itself_until_a_test_asks_for_the_fixture():
    config = configparser.ConfigParser()
    config.read(ROOT / "setup.cfg")
    assert "agcore_sync = agcore_sync.testing.pytest_plugin" in config["options.entry_points"]["pytest11"]
    assert "pytest-xdist" in config["options.extras_require"]["test"]
    code = ("import sys, agcore_sync.testing.pytest_plugin\n"
            "print(sorted(m for m in sys.modules if m.startswith('agcore_sync')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == str(["agcore_sync", "agcore_sync._version", "agcore_sync.testing",
                               "agcore_sync.testing.pytest_plugin"])


def test_the_option_and_the_fixture_are_listed_in_pytests_help(pytester):
    result = pytester.runpytest(*PLUGIN, "--help")
    result.stdout.fnmatch_lines(["*--agcore-record={none,new,all}*"])
    pytester.makepyfile(test_x="def test_x(): pass")
    fixtures = pytester.runpytest(*PLUGIN, "--fixtures")
    fixtures.stdout.fnmatch_lines(["*agcore_cassette*"])
