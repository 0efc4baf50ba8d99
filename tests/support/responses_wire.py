"""Responses API SSE bodies shaped as the API documents them, for tests and benchmarks.

Each function returns the list of byte steps a :class:`~tests.support.stream_server.StreamServer`
plays: one ``event:`` / ``data:`` pair per step. The recorded-shape corpus
for the SDK oracle is in ``tests/llm/responses_corpus/``.
"""

from __future__ import annotations

import json
from typing import Any, Dict, List, Optional, Sequence, Tuple

__all__ = ["sse", "response_object", "text_stream", "calls_stream", "reasoning_calls_stream"]


def sse(event: Dict[str, Any]) -> bytes:
    """Return one SSE event for a stream event dict."""
    return f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode()


def response_object(response_id: str, status: str, output: List[Dict[str, Any]],
                    usage: Optional[Tuple[int, int]] = None, model: str = "gpt-5-mini") -> Dict[str, Any]:
    """Return a ``response`` object (the fields our provider and the SDK read)."""
    wire_usage = None
    if usage is not None:
        wire_usage = {"input_tokens": usage[0], "input_tokens_details": {"cached_tokens": 0},
                      "output_tokens": usage[1], "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": usage[0] + usage[1]}
    return {"id": response_id, "object": "response", "created_at": 1764547200, "status": status, "model": model,
            "output": output, "usage": wire_usage, "error": None, "incomplete_details": None}


def _stream(response_id: str, items: Sequence[Tuple[Dict[str, Any], List[Dict[str, Any]]]],
            usage: Tuple[int, int]) -> List[bytes]:
    steps = [sse({"type": "response.created", "response": response_object(response_id, "in_progress", [])})]
    done = []
    for index, (item, deltas) in enumerate(items):
        added = dict(item, status="in_progress")
        if item["type"] == "function_call":
            added["arguments"] = ""
        elif item["type"] == "message":
            added["content"] = []
        elif item["type"] == "reasoning":
            added["summary"] = []
        steps.append(sse({"type": "response.output_item.added", "output_index": index, "item": added}))
        steps.extend(sse(dict(delta, output_index=index, item_id=item["id"])) for delta in deltas)
        steps.append(sse({"type": "response.output_item.done", "output_index": index, "item": item}))
        done.append(item)
    steps.append(sse({"type": "response.completed",
                      "response": response_object(response_id, "completed", done, usage)}))
    return steps


def _message(pieces: Sequence[str]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    text = "".join(pieces)
    item = {"id": "msg_1", "type": "message", "role": "assistant", "status": "completed",
            "content": [{"type": "output_text", "text": text, "annotations": []}]}
    return item, [{"type": "response.output_text.delta", "content_index": 0, "delta": p} for p in pieces]


def _call(number: int, call_id: str, name: str,
          arguments: Dict[str, Any]) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    text = json.dumps(arguments)
    item = {"id": f"fc_{number}", "type": "function_call", "status": "completed", "call_id": call_id,
            "name": name, "arguments": text}
    return item, [{"type": "response.function_call_arguments.delta", "delta": text[:3]},
                  {"type": "response.function_call_arguments.delta", "delta": text[3:]}]


def text_stream(response_id: str, pieces: Sequence[str], usage: Tuple[int, int] = (10, 5)) -> List[bytes]:
    """Return a stream answering with text in ``pieces``."""
    return _stream(response_id, [_message(pieces)], usage)


def calls_stream(response_id: str, calls: Sequence[Tuple[str, str, Dict[str, Any]]],
                 usage: Tuple[int, int] = (10, 5)) -> List[bytes]:
    """Return a stream of function calls ``(call_id, name, arguments)``."""
    return _stream(response_id, [_call(n, *call) for n, call in enumerate(calls, 1)], usage)


def reasoning_calls_stream(response_id: str, summary: str, encrypted: str,
                           calls: Sequence[Tuple[str, str, Dict[str, Any]]],
                           usage: Tuple[int, int] = (10, 5)) -> List[bytes]:
    """Return a stream of a reasoning item (with ``encrypted_content``) then function calls."""
    reasoning = {"id": f"rs_{response_id}", "type": "reasoning", "encrypted_content": encrypted,
                 "summary": [{"type": "summary_text", "text": summary}]}
    deltas = [{"type": "response.reasoning_summary_text.delta", "summary_index": 0, "delta": summary}]
    return _stream(response_id, [(reasoning, deltas), *(_call(n, *c) for n, c in enumerate(calls, 1))], usage)
