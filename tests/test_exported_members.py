"""The top-level public API: every name listed, importable and documented."""

from __future__ import annotations

import agcore_sync


def test_every_name_in_all_is_importable_from_the_package():
    missing = [name for name in agcore_sync.__all__ if not hasattr(agcore_sync, name)]
    assert not missing


def test_all_has_no_duplicates():
    assert len(agcore_sync.__all__) == len(set(agcore_sync.__all__))


def test_every_public_name_has_a_docstring():
    undocumented = [name for name in agcore_sync.__all__
                    if name != "__version__" and not (getattr(agcore_sync, name).__doc__ or "").strip()]
    assert not undocumented


def test_the_pinned_names_are_exported():
    pinned = {
        "AgcoreError", "Message", "MessageRequest", "MessageResponse", "StreamEvent", "TextDelta", "Error",
        "OpenAIProvider", "AnthropicProvider", "MockProvider", "RetryProvider", "LlmCycle", "CycleConfig",
        "ToolRegistry", "tool", "PermissionChecker", "AgentSession", "Hooks", "HookEvent", "Deny", "CompactConfig",
    }
    assert pinned <= set(agcore_sync.__all__)


def test_importing_the_package_does_not_import_jsonschema():
    import subprocess
    import sys

    code = "import sys, agcore_sync; print('jsonschema' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
