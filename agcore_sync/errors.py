"""The root of every exception agcore_sync raises.

The tree, with the module that defines each branch::

    AgcoreError                      errors.py
    +-- ContextOverflowError         errors.py (compaction could not fit a request)
    +-- LlmError                     llm/provider.py (retryable flag)
    |   +-- ProviderError            any HTTP error status
    |   |   +-- AuthenticationError  401 / 403
    |   |   +-- RateLimitError       429
    |   |   +-- ServerError          5xx
    |   +-- LlmTimeoutError
    |   +-- LlmConnectionError
    |   +-- ResponseParseError
    |   +-- MaxToolTurnsExceeded
    |   +-- OutputValidationError
    |   +-- OutputRefusedError
    +-- ToolError                    tools/error.py (recoverable flag)
    +-- HookError                    hooks.py
    +-- PromptError                  prompt/errors.py
    +-- AgentError                   agent/errors.py

Catch ``AgcoreError`` to catch everything the library raises on purpose.
"""

from __future__ import annotations

__all__ = ["AgcoreError", "ContextOverflowError"]


class AgcoreError(Exception):
    """Base class of every exception raised by agcore_sync.

    Subclasses keep their facts as attributes (never only in the text), and
    pickle with those attributes intact.
    """

    def __reduce__(self):
        # Exception pickles only ``self.args``; keyword-only facts live in
        # ``__dict__`` and are restored from the state item.
        return (self.__class__, self.args[:1], self.__dict__.copy())


class ContextOverflowError(AgcoreError):
    """A request is larger than the context limit even after compaction.

    Nothing was sent to the provider.
    """
