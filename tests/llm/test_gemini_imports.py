"""What GeminiProvider costs at import: nothing at ``import agcore_sync``, no SDK, no stream module until a stream.

Each check runs in a fresh interpreter.
"""

from __future__ import annotations

import json
import subprocess
import sys


def loaded_after(code: str) -> list:
    script = code + "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout
    return json.loads(out.splitlines()[-1])


def test_import_agcore_sync_loads_nothing_of_gemini():
    loaded = loaded_after("import agcore_sync")
    assert not [m for m in loaded if "gemini" in m or m.startswith("google")]


def test_a_first_use_of_gemini_provider_loads_no_stream_module_and_no_google_package():
    loaded = loaded_after("from agcore_sync import AgentSession, GeminiProvider, ToolRegistry, tool\n"
                          "GeminiProvider('gemini-2.5-flash', api_key='k')")
    assert "agcore_sync.llm.gemini" in loaded
    assert not [m for m in loaded if m.startswith("google")]
    assert "agcore_sync.llm._gemini_stream" not in loaded and "agcore_sync._http.sse" not in loaded
    # No module the other providers do not load already.
    others = loaded_after("from agcore_sync import AgentSession, OpenAIProvider, ToolRegistry, tool")
    extra = sorted(set(loaded) - set(others))
    assert [m for m in extra if not m.startswith("agcore_sync.llm.")] == [], extra
