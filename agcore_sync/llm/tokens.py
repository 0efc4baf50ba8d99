"""A request's token estimate, the one rule of thumb compaction and rate limits share.

``ceil(characters of the request's JSON / 4)``: about right for English
text, with no tokenizer to install. :class:`~agcore_sync.agent.compact.CompactConfig`
uses it to fit a request under the context limit (unless given a
``token_counter``), :class:`~agcore_sync.llm.ratelimit.RateLimitedProvider`
to charge a request against a tokens-per-minute budget before it is sent
(then corrected to the response's usage).
"""

from __future__ import annotations

import json
import math

from agcore_sync.llm.types import MessageRequest

__all__ = ["estimate_tokens"]


def estimate_tokens(request: MessageRequest) -> int:
    """Return ``ceil(characters of the request's JSON / 4)``: an estimate.

    .. versionadded:: 0.2 (it was :func:`agcore_sync.agent.compact.estimate_tokens`, still importable there)
    """
    return math.ceil(len(json.dumps(request.to_dict(), ensure_ascii=False)) / 4)
