"""google-genai as the oracle for GeminiProvider's streams and plain responses.

Each recorded-shape stream in ``gemini_corpus/`` is served from a local
server twice, in the same byte chunks (whole, every 7 bytes, and for the
streams with multi-byte text or escapes every byte): once to google-genai's
own iterator (``client.models.generate_content_stream``), once to our
provider. Text, thought text, tool calls (name, arguments, the wire id),
thought signatures (in order), stop reason and usage must agree; a stream
that fails must fail with the same code on both sides. The stop reason and
usage of the SDK side are computed from its typed values with the mapping
DESIGN.md pins, written out here independently of the provider's code.
"""

from __future__ import annotations

import base64
import json
import re
from contextlib import closing
from pathlib import Path
from typing import Any, Dict, List, Optional

import pytest

from agcore_sync import GeminiProvider, LlmError, Message, MessageRequest
from agcore_sync.llm.events import CostUpdate, MessageComplete
from agcore_sync.llm.types import ThinkingBlock
from tests.support.gemini import our_signatures, sdk_client

genai = pytest.importorskip("google.genai")

CORPUS = Path(__file__).parent / "gemini_corpus"
STREAMS = sorted(p.name for p in CORPUS.glob("*.sse"))
MODEL = "gemini-2.5-flash"
FILTERED = {"SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY",
            "IMAGE_PROHIBITED_CONTENT", "IMAGE_RECITATION"}


def test_the_corpus_has_at_least_twenty_streams():
    assert len(STREAMS) >= 20


def _chunks(data: bytes, size: int) -> List[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def _cuts(name: str, data: bytes) -> List[List[bytes]]:
    cuts = [[data], _chunks(data, 7)]
    if name.startswith(("02_", "09_", "22_")):
        cuts.append(_chunks(data, 1))
    return cuts


def _sdk_stop(finish: Optional[str], blocked: bool, has_calls: bool) -> str:
    if blocked:
        return "content_filter"
    if finish in (None, "STOP"):
        return "tool_use" if has_calls else "stop"
    if finish == "MAX_TOKENS":
        return "length"
    return "content_filter" if finish in FILTERED else "error"


def _value(enum_or_none: Any) -> Optional[str]:
    return None if enum_or_none is None else getattr(enum_or_none, "value", enum_or_none)


def _sdk_stream(url: str) -> Dict[str, Any]:
    """Read a stream with google-genai's iterator; return its summary, or its failure code."""
    text, thoughts, calls, signatures = [], [], [], []
    finish, blocked, usage = None, False, None
    client = sdk_client(url)
    try:
        for response in client.models.generate_content_stream(model=MODEL, contents="hi"):
            if response.usage_metadata is not None:
                usage = response.usage_metadata
            if response.prompt_feedback is not None and response.prompt_feedback.block_reason is not None:
                blocked = not response.candidates
            for candidate in (response.candidates or [])[:1]:
                if candidate.finish_reason is not None:
                    finish = _value(candidate.finish_reason)
                for part in (candidate.content.parts or []) if candidate.content else []:
                    if part.thought_signature is not None:
                        signatures.append(base64.b64encode(part.thought_signature).decode())
                    if part.function_call is not None:
                        call = part.function_call
                        calls.append((call.id, call.name, call.args or {}))
                    elif part.text is not None and part.thought:
                        thoughts.append(part.text)
                    elif part.text is not None:
                        text.append(part.text)
    except genai.errors.APIError as exc:
        return {"error": exc.code}
    finally:
        client.close()
    u = usage
    return {
        "text": "".join(text),
        "thoughts": "".join(thoughts),
        "calls": calls,
        "signatures": signatures,
        "stop": _sdk_stop(finish, blocked, bool(calls)),
        "usage": ((u.prompt_token_count or 0) + (u.tool_use_prompt_token_count or 0),
                  (u.candidates_token_count or 0) + (u.thoughts_token_count or 0),
                  u.cached_content_token_count or 0),
    }


def _our_summary(response: Any) -> Dict[str, Any]:
    return {
        "text": response.message.text,
        "thoughts": "".join(b.text for b in response.message.content if isinstance(b, ThinkingBlock)),
        "calls": [(None if b.id.startswith("gcall_") else b.id, b.name, b.input)
                  for b in response.message.tool_uses],
        "signatures": our_signatures(response.message),
        "stop": response.stop_reason.value,
        "usage": (response.usage.prompt_tokens, response.usage.completion_tokens, response.usage.cache_read_tokens),
    }


def _our_stream(provider: GeminiProvider) -> Dict[str, Any]:
    events = []
    try:
        for event in provider.chat_stream(MessageRequest(None, [Message.user("hi")])):
            events.append(event)
    except LlmError as exc:
        return {"error": exc.status_code}
    complete = events[-1]
    assert isinstance(complete, MessageComplete)
    assert isinstance(events[-2], CostUpdate)
    return _our_summary(complete.full_response)


@pytest.mark.parametrize("name", STREAMS)
def test_google_genai_and_the_provider_read_each_recorded_stream_alike(name, stream_server):
    data = (CORPUS / name).read_bytes()
    for steps in _cuts(name, data):
        stream_server.add_response(steps)
        stream_server.add_response(steps)
        expected = _sdk_stream(stream_server.url)
        with closing(GeminiProvider(MODEL, api_key="test-key", base_url=stream_server.url)) as provider:
            got = _our_stream(provider)
        assert got == expected, f"{name}, {len(steps)} chunks"
    # google-genai may close its response once it has read a finish reason, before the server's last
    # write: on a loaded machine that write fails, and only that is allowed here.
    assert [e for e in stream_server.errors if "client went away" not in e] == []
    paths = {r.path for r in stream_server.requests}
    assert paths == {f"/v1beta/models/{MODEL}:streamGenerateContent?alt=sse"}


def _merged_response(name: str) -> Optional[Dict[str, Any]]:
    """The stream's chunks as one plain response: parts in order, the last chunk's other fields."""
    chunks = [json.loads(line[6:]) for line in (CORPUS / name).read_text(encoding="utf-8").splitlines()
              if line.startswith("data: ")]
    if any("error" in c for c in chunks):
        return None
    merged = json.loads(json.dumps(chunks[-1]))
    if merged.get("candidates"):
        merged["candidates"][0]["content"]["parts"] = [
            p for c in chunks for p in c["candidates"][0]["content"]["parts"]]
    return merged


@pytest.mark.parametrize("name", [n for n in STREAMS if _merged_response(n) is not None])
def test_google_genai_and_the_provider_read_each_plain_response_alike(name, stream_server):
    body = json.dumps(_merged_response(name)).encode()
    headers = {"Content-Type": "application/json"}
    stream_server.add_response([body], headers=headers)
    stream_server.add_response([body], headers=headers)
    client = sdk_client(stream_server.url)
    try:
        sdk = client.models.generate_content(model=MODEL, contents="hi")
    finally:
        client.close()
    with closing(GeminiProvider(MODEL, api_key="test-key", base_url=stream_server.url)) as provider:
        ours = provider.chat(MessageRequest(None, [Message.user("hi")]))
    candidate = sdk.candidates[0] if sdk.candidates else None
    parts = (candidate.content.parts or []) if candidate is not None and candidate.content else []
    calls = [(p.function_call.id, p.function_call.name, p.function_call.args or {}) for p in parts
             if p.function_call is not None]
    u = sdk.usage_metadata
    expected = {
        "text": "".join(p.text for p in parts if p.text is not None and not p.thought),
        "thoughts": "".join(p.text for p in parts if p.text is not None and p.thought),
        "calls": calls,
        "signatures": [base64.b64encode(p.thought_signature).decode() for p in parts if p.thought_signature],
        "stop": _sdk_stop(_value(candidate.finish_reason) if candidate is not None else None,
                          candidate is None and sdk.prompt_feedback is not None, bool(calls)),
        "usage": ((u.prompt_token_count or 0) + (u.tool_use_prompt_token_count or 0),
                  (u.candidates_token_count or 0) + (u.thoughts_token_count or 0),
                  u.cached_content_token_count or 0),
    }
    assert _our_summary(ours) == expected


def _translate(pieces: List[bytes]) -> Any:
    from agcore_sync._http.masking import Masker
    from agcore_sync._http.sse import SseParser
    from agcore_sync.llm._gemini_stream import GeminiStreamTranslator

    translator = GeminiStreamTranslator(MODEL, pricing=None, masker=Masker(None))
    parser = SseParser()
    events: List[Any] = []
    for piece in pieces:
        for sse_event in parser.feed(piece):
            events.extend(translator.feed(sse_event))
    for sse_event in parser.close():
        events.extend(translator.feed(sse_event))
    assert translator.done
    # Ids made up for calls without one are new each run; everything else must be the same.
    return re.sub(r"gcall_[0-9a-f]{24}", "gcall_*", json.dumps([e.to_dict() for e in events]))


@pytest.mark.parametrize("name", ["02_text_unicode.sse", "09_thinking_call_signature.sse",
                                  "11_signature_in_last_empty_part.sse", "22_json_output.sse"])
def test_a_stream_cut_in_two_at_every_byte_boundary_gives_the_same_events(name):
    from tests.support.sse import split_at

    data = (CORPUS / name).read_bytes()
    whole = _translate([data])
    for point in range(1, len(data)):
        assert _translate(split_at(data, [point])) == whole, point
    assert '"message_complete"' in whole
