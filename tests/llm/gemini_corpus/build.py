"""Write the recorded-shape Gemini streams of this folder (run it after changing one).

Each ``.sse`` file is the body Gemini sends for ``POST
.../models/{model}:streamGenerateContent?alt=sse``: ``data:`` lines whose JSON
is a whole ``GenerateContentResponse`` chunk, shaped as the API reference
(``ai.google.dev/api/generate-content``) and google-genai's
``types.GenerateContentResponse`` show them: ``candidates[].content.parts``,
``finishReason``, ``safetyRatings``, ``usageMetadata`` with its
``promptTokensDetails``, ``modelVersion``, ``responseId``. The service frames
events with ``\\r\\n\\r\\n``; one file uses ``\\n\\n`` to cover both.
``tests/llm/test_gemini_sdk_oracle.py`` serves them to google-genai and to
our provider.

    python tests/llm/gemini_corpus/build.py
"""

import base64
import hashlib
import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))
MODEL = "gemini-2.5-flash"


def _signature(seed, size):
    """An opaque signature as Gemini sends it: base64 of bytes (here made from a seed, stable)."""
    data = b"".join(hashlib.sha256(f"{seed}-{i}".encode()).digest() for i in range(size // 32 + 1))[:size]
    return base64.b64encode(data).decode()


SIG_A = _signature("a", 146)
SIG_B = _signature("b", 301)
SIG_C = _signature("c", 58)


def usage(prompt, candidates=None, thoughts=None, cached=None, tool_prompt=None):
    u = {"promptTokenCount": prompt}
    total = prompt
    if candidates is not None:
        u["candidatesTokenCount"] = candidates
        total += candidates
    if cached is not None:
        u["cachedContentTokenCount"] = cached
    if tool_prompt is not None:
        u["toolUsePromptTokenCount"] = tool_prompt
        total += tool_prompt
    if thoughts is not None:
        u["thoughtsTokenCount"] = thoughts
        total += thoughts
    u["totalTokenCount"] = total
    u["promptTokensDetails"] = [{"modality": "TEXT", "tokenCount": prompt}]
    if cached is not None:
        u["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": cached}]
    return u


RATINGS = [
    {"category": "HARM_CATEGORY_HATE_SPEECH", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_HARASSMENT", "probability": "NEGLIGIBLE"},
    {"category": "HARM_CATEGORY_SEXUALLY_EXPLICIT", "probability": "NEGLIGIBLE"},
]


def chunk(parts, finish=None, use=None, rid="h2ouaPj5Dq6Oz7IP9dfQ0Ak", ratings=None, **extra):
    candidate = {"content": {"parts": parts, "role": "model"}}
    if finish is not None:
        candidate["finishReason"] = finish
    if ratings is not None:
        candidate["safetyRatings"] = ratings
    candidate["index"] = 0
    candidate.update(extra)
    c = {"candidates": [candidate]}
    c["usageMetadata"] = use if use is not None else usage(9)
    c["modelVersion"] = MODEL
    c["responseId"] = rid
    return c


def call(name, args, **kw):
    fc = {"name": name}
    if args is not None:
        fc["args"] = args
    if "id" in kw:
        fc = {"id": kw.pop("id"), **fc}
    part = {"functionCall": fc}
    part.update(kw)
    return part


def write(name, chunks, sep="\r\n\r\n"):
    body = "".join("data: " + json.dumps(c, ensure_ascii=False, separators=(",", ":")) + sep for c in chunks)
    with open(os.path.join(OUT, name + ".sse"), "w", encoding="utf-8", newline="") as f:
        f.write(body)


STREAMS = {
    "01_text": [
        chunk([{"text": "The capital"}]),
        chunk([{"text": " of France is"}]),
        chunk([{"text": " Paris."}], "STOP", usage(9, 7)),
    ],
    "02_text_unicode": [
        chunk([{"text": "Grüße aus Köln 🇩🇪 — "}]),
        chunk([{"text": "東京は晴れ☀️, \"quoted\" \\ back\\slash\n"}]),
        chunk([{"text": "e\u0301 and 👩‍👩‍👧"}], "STOP", usage(12, 30)),
    ],
    "03_one_call": [
        chunk([call("get_weather", {"city": "Oslo", "unit": "celsius"})], "STOP", usage(40, 8)),
    ],
    "04_parallel_calls_one_chunk": [
        chunk([call("get_weather", {"city": "Oslo"}), call("get_weather", {"city": "Lima"})], "STOP",
              usage(41, 16)),
    ],
    "05_parallel_calls_two_chunks": [
        chunk([call("get_time", {"zone": "Europe/Oslo"})]),
        chunk([call("get_weather", {"city": "Oslo"})], "STOP", usage(41, 16)),
    ],
    "06_call_with_id": [
        chunk([call("lookup", {"q": "agcore"}, id="fc_7f3a9b2c")], "STOP", usage(30, 6)),
    ],
    "07_empty_args": [
        chunk([call("list_files", {}), call("get_time", None)], "STOP", usage(25, 4)),
    ],
    "08_thinking_text_signature": [
        chunk([{"text": "**Weighing the options**\n\nThe user wants", "thought": True}], use=usage(15)),
        chunk([{"text": " a short answer.", "thought": True}], use=usage(15)),
        chunk([{"text": "Short answer: yes.", "thoughtSignature": SIG_A}], use=usage(15)),
        chunk([{"text": " Really."}], "STOP", usage(15, 6, thoughts=120)),
    ],
    "09_thinking_call_signature": [
        chunk([{"text": "**Planning the call**\n\nI need the weather.", "thought": True}], use=usage(52)),
        chunk([call("get_weather", {"city": "Paris"}, thoughtSignature=SIG_B)], "STOP",
              usage(52, 10, thoughts=88)),
    ],
    "10_parallel_calls_signature_on_first": [
        chunk([call("get_weather", {"city": "Paris"}, thoughtSignature=SIG_B),
               call("get_weather", {"city": "London"})], "STOP", usage(60, 20, thoughts=64)),
    ],
    "11_signature_in_last_empty_part": [
        chunk([{"text": "Here is"}]),
        chunk([{"text": " the answer."}]),
        chunk([{"text": "", "thoughtSignature": SIG_C}], "STOP", usage(20, 5, thoughts=40)),
    ],
    "12_cached_usage": [
        chunk([{"text": "Cached"}], use=usage(2100)),
        chunk([{"text": " reply."}], "STOP", usage(2100, 3, cached=2048)),
    ],
    "13_max_tokens": [
        chunk([{"text": "This answer is cut"}]),
        chunk([{"text": " short"}], "MAX_TOKENS", usage(10, 16)),
    ],
    "14_safety_block": [
        chunk([{"text": "I can tell you that"}], ratings=RATINGS),
        {"candidates": [{"content": {"parts": [], "role": "model"}, "finishReason": "SAFETY", "index": 0,
                         "safetyRatings": [{"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH",
                                            "blocked": True}]}],
         "usageMetadata": usage(14, 5), "modelVersion": MODEL, "responseId": "h2ouaPj5Dq6Oz7IP9dfQ0Ak"},
    ],
    "15_prompt_blocked": [
        {"promptFeedback": {"blockReason": "PROHIBITED_CONTENT"},
         "usageMetadata": usage(11), "modelVersion": MODEL, "responseId": "h2ouaPj5Dq6Oz7IP9dfQ0Ak"},
    ],
    "16_recitation": [
        chunk([{"text": "It was the best of times,"}]),
        chunk([], "RECITATION", usage(8, 9)),
    ],
    "17_error_midstream": [
        chunk([{"text": "Partial"}]),
        {"error": {"code": 503, "message": "The model is overloaded. Please try again later.",
                   "status": "UNAVAILABLE"}},
    ],
    "18_tool_use_prompt_tokens": [
        chunk([{"text": "Searched and found it."}], "STOP", usage(30, 6, tool_prompt=210)),
    ],
    "19_text_then_call": [
        chunk([{"text": "Let me check that."}]),
        chunk([call("get_weather", {"city": "Rome", "days": 3, "detail": {"hourly": False, "units": ["C", "%"]}})],
              "STOP", usage(35, 14)),
    ],
    "20_lf_framing": [
        chunk([{"text": "Framed"}]),
        chunk([{"text": " with LF."}], "STOP", usage(5, 3)),
    ],
    "21_malformed_function_call": [
        chunk([], "MALFORMED_FUNCTION_CALL", usage(33, 0), finishMessage="Malformed function call: get_weather{"),
    ],
    "22_json_output": [
        chunk([{"text": "{\"name\": \"Os"}]),
        chunk([{"text": "lo\", \"note\": \"a \\\"quote\\\" and \\u00e9\", "}]),
        chunk([{"text": "\"population\": 709037}"}], "STOP", usage(44, 20)),
    ],
    "23_rate_limited_midstream": [
        chunk([{"text": "Start"}]),
        {"error": {"code": 429, "message": "Resource has been exhausted (e.g. check quota).",
                   "status": "RESOURCE_EXHAUSTED"}},
    ],
    "24_thinking_signature_on_thought": [
        chunk([{"text": "**Checking**", "thought": True, "thoughtSignature": SIG_A}], use=usage(9)),
        chunk([{"text": "Done."}], "STOP", usage(9, 2, thoughts=30)),
    ],
}


if __name__ == "__main__":
    for name, chunks in STREAMS.items():
        write(name, chunks, "\n\n" if name == "20_lf_framing" else "\r\n\r\n")
    print(f"wrote {len(STREAMS)} streams to {OUT}")
