"""Helpers for the Gemini tests: google-genai pointed at a local server, wire builders, key normalising.

google-genai (3.x) sends some nested objects with their protobuf field
names (``inlineData: {"mime_type": ...}``, ``parameters_json_schema``,
``thinkingConfig: {"thinking_budget": ...}``) and others in the JSON names
(``functionCall``, ``generationConfig``); the API reads both spellings
(proto3 JSON). Our provider sends the JSON names everywhere, as the API
reference writes them. :func:`camel_keys` brings a body to those names so
two bodies compare as JSON; it leaves user data alone (function ``args``,
a ``functionResponse``'s ``response``, JSON schemas). Two more spellings
the API reads alike are brought to one form: google-genai re-encodes a
``thoughtSignature`` in the URL-safe base64 alphabet (we send the
server's own string back, in the standard one), and it sends an empty
``generationConfig: {}`` when only tools are configured (we leave it out).
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional

from agcore_sync.llm._gemini_wire import gemini_item
from agcore_sync.llm.types import Message, ThinkingBlock

__all__ = ["sdk_client", "our_signatures", "camel_keys", "gemini_chunk", "gemini_sse", "gemini_usage"]

#: Keys whose values are user data, copied as they are.
_OPAQUE = {"args", "response", "parametersJsonSchema", "responseJsonSchema", "parameters", "responseSchema"}


def sdk_client(url: str, *, vertex: bool = False, api_version: Optional[str] = None) -> Any:
    """Return a google-genai client that talks to ``url`` (a fake key, or a fixed bearer token on Vertex)."""
    from google import genai
    from google.genai import types

    if vertex:
        options = types.HttpOptions(base_url=url, api_version=api_version or "v1",
                                    headers={"Authorization": "Bearer test-token"})
        return genai.Client(vertexai=True, project="test-project", location="us-central1",
                            credentials=_StaticCredentials(), http_options=options)
    options = types.HttpOptions(base_url=url, api_version=api_version or "v1beta")
    return genai.Client(api_key="test-key", http_options=options)


class _StaticCredentials:
    """What google-genai asks of google-auth credentials, answered without a network."""

    token = "test-token"
    valid = True
    expired = False
    quota_project_id = None

    def refresh(self, request: Any) -> None:
        """Nothing to refresh: the token never expires."""

    def before_request(self, request: Any, method: str, url: str, headers: Dict[str, str]) -> None:
        """Add the bearer header as google-auth does."""
        headers["authorization"] = "Bearer test-token"


def our_signatures(message: Message) -> List[str]:
    """Return the thoughtSignature values a message's Gemini thinking blocks hold, in order."""
    signatures = []
    for block in message.content:
        if isinstance(block, ThinkingBlock):
            item = gemini_item(block)
            assert item is not None, "a thinking block without a Gemini envelope"
            signature = item.get("thoughtSignature") or item.get("part", {}).get("thoughtSignature")
            if signature:
                signatures.append(signature)
    return signatures


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(word[:1].upper() + word[1:] for word in rest)


def camel_keys(value: Any) -> Any:
    """Return ``value`` with every key in its JSON (camelCase) name, user data untouched."""
    if isinstance(value, list):
        return [camel_keys(v) for v in value]
    if not isinstance(value, dict):
        return value
    out = {}
    for key, item in value.items():
        name = _camel(key)
        if name == "generationConfig" and item == {}:
            continue
        if name == "thoughtSignature" and isinstance(item, str):
            item = item.replace("-", "+").replace("_", "/")
        out[name] = item if name in _OPAQUE else camel_keys(item)
    return out


def gemini_usage(prompt: int, candidates: int = 0, **extra: int) -> Dict[str, Any]:
    """Return a ``usageMetadata`` object as the API documents it."""
    usage = {"promptTokenCount": prompt, "candidatesTokenCount": candidates,
             "totalTokenCount": prompt + candidates + sum(extra.values())}
    usage.update(extra)
    return usage


def gemini_chunk(parts: List[Dict[str, Any]], finish: Optional[str] = None, *,
                 usage: Optional[Dict[str, Any]] = None, model: str = "gemini-2.5-flash") -> Dict[str, Any]:
    """Return one ``GenerateContentResponse`` (a stream chunk, or a whole plain response)."""
    candidate: Dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish is not None:
        candidate["finishReason"] = finish
    return {"candidates": [candidate], "usageMetadata": usage or gemini_usage(5),
            "modelVersion": model, "responseId": "resp-1"}


def gemini_sse(*chunks: Dict[str, Any]) -> bytes:
    """Return the SSE body of ``chunks`` as Gemini frames it (``\\r\\n\\r\\n``)."""
    return b"".join(b"data: " + json.dumps(c, separators=(",", ":")).encode() + b"\r\n\r\n" for c in chunks)
