"""Prompts: templates with named fields, a sectioned system-prompt builder, JSON bundles.

- :class:`PromptTemplate`: ``str.format``-style text with named variables,
  some bound ahead of time.
- :class:`PromptBuilder`: ordered, titled sections (role, context,
  instructions, tools, examples, output format, custom ones) rendered as a
  system prompt.
- :class:`PromptBundle`: a named set of templates plus defaults, loaded from a
  dict or a JSON file and validated against :data:`~agcore_sync.prompt.bundle.BUNDLE_SCHEMA`.
- :class:`PromptError`: every failure of the above.

``LlmCycle`` and ``AgentSession`` take a str, a ``PromptBuilder`` or a fully
bound ``PromptTemplate`` as ``system_prompt``.
"""

from __future__ import annotations

from agcore_sync.prompt.builder import PromptBuilder
from agcore_sync.prompt.bundle import BUNDLE_SCHEMA, PromptBundle
from agcore_sync.prompt.errors import PromptError
from agcore_sync.prompt.template import PromptTemplate

__all__ = ["PromptTemplate", "PromptBuilder", "PromptBundle", "PromptError", "BUNDLE_SCHEMA"]
