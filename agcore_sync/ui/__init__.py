"""The UI protocols browsers already speak: the Vercel AI SDK and AG-UI.

One turn's events become the stream a front end reads, and the front end's
request body becomes the library's messages and approval decisions:

- :func:`to_ai_sdk` / :data:`AI_SDK_HEADERS` / :func:`from_ai_sdk` /
  :func:`ai_sdk_decisions`: the AI SDK UI message stream (``useChat``).
- :func:`to_ag_ui` / :func:`from_ag_ui` / :func:`ag_ui_decisions`: AG-UI 1.0
  (CopilotKit and other AG-UI clients).

Any iterable of stream events works (a ``TurnStream``, or a background
turn's events read from a ``RedisEventRelay``), and closing the returned
iterator closes the events, so a browser that leaves ends the turn.

.. versionadded:: 0.3
"""

from __future__ import annotations

from agcore_sync.ui._messages import UiRequestError
from agcore_sync.ui.ag_ui import ag_ui_decisions, from_ag_ui, to_ag_ui
from agcore_sync.ui.ai_sdk import AI_SDK_HEADERS, ai_sdk_decisions, from_ai_sdk, to_ai_sdk

__all__ = ["AI_SDK_HEADERS", "to_ai_sdk", "from_ai_sdk", "ai_sdk_decisions", "to_ag_ui", "from_ag_ui",
           "ag_ui_decisions", "UiRequestError"]
