"""Which provider made a :class:`ThinkingBlock`'s opaque data (pure, no I/O).

A thinking block may carry data only the provider that made it can read:
Anthropic's ``signature`` (base64) and ``redacted_data``, and the Responses
API's reasoning item (with its ``encrypted_content``). When a session
switches provider, each provider sends only its own blobs and drops the
others' (a foreign blob is refused by the API, or worse, misread).

The origin is marked inside the signature, so :class:`ThinkingBlock` and
its ``to_dict`` keep their shape: a Responses reasoning item is kept as a
JSON *envelope* ``{"agcore_origin": "openai-responses", "item": {...},
"next_item_id": ...}`` whose ``item`` is the reasoning item as the server
sent it. Anthropic signatures are base64 and never begin with ``{``, so any
other signature, and any ``redacted_data``, is Anthropic's (the only
provider that made them before the origin was marked, so sessions saved
earlier keep working).
"""

from __future__ import annotations

import json
from typing import Any, Dict, Optional

from agcore_sync._http import peer_json
from agcore_sync.llm.types import ThinkingBlock

__all__ = ["ANTHROPIC", "OPENAI_RESPONSES", "BEDROCK", "GEMINI", "origin_of", "make_envelope", "read_envelope"]

#: The origin of Anthropic signatures and redacted thinking.
ANTHROPIC = "anthropic"
#: The origin of Responses API reasoning items.
OPENAI_RESPONSES = "openai-responses"
#: The origin of Amazon Bedrock reasoning (its ``signature`` or ``redactedContent``
#: kept as the envelope's ``item``).
BEDROCK = "aws-bedrock"
#: The origin of Gemini thought parts and ``thoughtSignature`` values (Gemini API and Vertex AI).
GEMINI = "gemini"

_ORIGIN_KEY = "agcore_origin"


def make_envelope(origin: str, item: Dict[str, Any], next_item_id: Optional[str]) -> str:
    """Return the signature text keeping ``item`` (as sent) and the id of the item after it."""
    return json.dumps({_ORIGIN_KEY: origin, "item": item, "next_item_id": next_item_id},
                      ensure_ascii=False, separators=(",", ":"))


def read_envelope(signature: Optional[str]) -> Optional[Dict[str, Any]]:
    """Return the envelope dict of ``signature``, or None if it is not one."""
    if not signature or not signature.startswith("{"):
        return None
    try:
        value = peer_json.loads(signature)
    except ValueError:
        return None
    if not isinstance(value, dict) or not isinstance(value.get(_ORIGIN_KEY), str):
        return None
    if not isinstance(value.get("item"), dict):
        return None
    return value


def origin_of(block: ThinkingBlock) -> Optional[str]:
    """Return who made ``block``'s opaque data, or None for plain reasoning text."""
    if block.signature is not None:
        envelope = read_envelope(block.signature)
        return envelope[_ORIGIN_KEY] if envelope is not None else ANTHROPIC
    if block.redacted_data is not None:
        return ANTHROPIC
    return None
