"""``demo --output`` (a JSON Schema file or module:Class) and ``chat``'s ``/image PATH``, run as a user runs them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli.helpers import EXIT_TIMEOUT, child_env

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n" + bytes(24)


def run(args, cwd, stdin=""):
    env = child_env()
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p)
    return subprocess.run([sys.executable, "-m", "agcore_sync", *args], input=stdin, capture_output=True,
                          text=True, env=env, cwd=str(cwd), timeout=EXIT_TIMEOUT)


def test_demo_output_with_a_json_schema_file_prints_the_validated_object(tmp_path):
    schema = {"type": "object", "properties": {"product": {"type": "integer"}, "words": {"type": "integer"},
                                               "summary": {"type": "string"}},
              "required": ["product", "words", "summary"], "additionalProperties": False}
    (tmp_path / "schema.json").write_text(json.dumps(schema))
    result = run(["demo", "--output", "schema.json"], tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(line for line in result.stdout.splitlines() if line.startswith("[output] "))
    value = json.loads(line[len("[output] "):])
    assert value["product"] == 391 and value["words"] == 9
    assert "391" in value["summary"]


def test_demo_output_with_a_dataclass_path_prints_the_instance(tmp_path):
    (tmp_path / "answers.py").write_text(
        "import dataclasses\n\n"
        "@dataclasses.dataclass\n"
        "class Answer:\n"
        '    """The demo answer."""\n\n'
        "    product: int\n"
        "    words: int\n"
    )
    result = run(["demo", "--output", "answers:Answer"], tmp_path)
    assert result.returncode == 0, result.stderr
    assert "[output] Answer(product=391, words=9)" in result.stdout


def test_demo_output_mistakes_are_one_line_with_exit_status_2(tmp_path):
    (tmp_path / "bad.json").write_text('{"type": "objekt"}')
    for spec, needle in [("bad.json", "not a usable output schema"), ("missing.json", "cannot read"),
                         ("nomodule_xyz:Thing", "cannot import"), ("json:Nope", "has no 'Nope'")]:
        result = run(["demo", "--output", spec], tmp_path)
        assert result.returncode == 2, (spec, result.stderr)
        lines = result.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("agcore-sync: error: --output") and needle in lines[0], lines
        assert "Traceback" not in result.stderr


def test_chat_image_attaches_a_picture_to_the_next_message(tmp_path):
    (tmp_path / "dot.png").write_bytes(PNG)
    (tmp_path / "notes.txt").write_text("not an image")
    lines = ["/image dot.png", "what is this?", "/image notes.txt", "/image absent.png", "and now?", "/exit"]
    result = run(["chat"], tmp_path, stdin="\n".join(lines) + "\n")
    assert result.returncode == 0, result.stderr
    out = result.stdout
    assert "attached dot.png (image/png, 32 bytes)" in out
    assert "I got 1 image(s) (image/png)" in out
    assert out.count("I got 1 image(s)") == 1, "the image goes with one message only"
    errors = result.stderr.splitlines()
    assert len(errors) == 2, result.stderr
    assert errors[0].startswith("error: /image: ValueError:") and "notes.txt" in errors[0]
    assert errors[1].startswith("error: /image: ValueError:") and "absent.png" in errors[1]
