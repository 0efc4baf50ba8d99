"""Write the recorded-shape Responses API streams of this folder (run it after changing one).

Each ``.sse`` file is the body a server sends for ``POST /responses`` with
``stream: true``: events shaped as the API reference and the ``openai`` SDK's
types under ``openai/types/responses/`` show them, every field the SDK reads
present. ``tests/llm/test_responses_sdk_oracle.py`` serves them to the SDK and
to our provider.

    python tests/llm/responses_corpus/build.py
"""

import json
import os

OUT = os.path.dirname(os.path.abspath(__file__))


def resp(status, output, usage=None, **kw):
    r = {
        "id": "resp_0a1b2c",
        "object": "response",
        "created_at": 1764547200,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "max_output_tokens": None,
        "model": "gpt-5-mini-2025-08-07",
        "output": output,
        "parallel_tool_calls": True,
        "previous_response_id": None,
        "reasoning": {"effort": "medium", "summary": None},
        "store": False,
        "temperature": 1.0,
        "text": {"format": {"type": "text"}},
        "tool_choice": "auto",
        "tools": [],
        "top_p": 1.0,
        "truncation": "disabled",
        "usage": usage,
        "metadata": {},
    }
    r.update(kw)
    return r


def usage(i, o, cached=0, reasoning=0):
    return {
        "input_tokens": i,
        "input_tokens_details": {"cached_tokens": cached},
        "output_tokens": o,
        "output_tokens_details": {"reasoning_tokens": reasoning},
        "total_tokens": i + o,
    }


class S:
    def __init__(self):
        self.events = []

    def add(self, type_, **kw):
        self.events.append({"type": type_, "sequence_number": len(self.events), **kw})

    def start(self):
        self.add("response.created", response=resp("in_progress", []))
        self.add("response.in_progress", response=resp("in_progress", []))

    def message(self, idx, mid, pieces, refusal=False):
        item = {"id": mid, "type": "message", "status": "in_progress", "content": [], "role": "assistant"}
        self.add("response.output_item.added", output_index=idx, item=item)
        text = "".join(pieces)
        if refusal:
            part0 = {"type": "refusal", "refusal": ""}
            part = {"type": "refusal", "refusal": text}
        else:
            part0 = {"type": "output_text", "annotations": [], "logprobs": [], "text": ""}
            part = {"type": "output_text", "annotations": [], "logprobs": [], "text": text}
        self.add("response.content_part.added", item_id=mid, output_index=idx, content_index=0, part=part0)
        for p in pieces:
            if refusal:
                self.add("response.refusal.delta", item_id=mid, output_index=idx, content_index=0, delta=p)
            else:
                self.add(
                    "response.output_text.delta", item_id=mid, output_index=idx, content_index=0, delta=p, logprobs=[]
                )
        if refusal:
            self.add("response.refusal.done", item_id=mid, output_index=idx, content_index=0, refusal=text)
        else:
            self.add(
                "response.output_text.done", item_id=mid, output_index=idx, content_index=0, text=text, logprobs=[]
            )
        self.add("response.content_part.done", item_id=mid, output_index=idx, content_index=0, part=part)
        done = {"id": mid, "type": "message", "status": "completed", "content": [part], "role": "assistant"}
        self.add("response.output_item.done", output_index=idx, item=done)
        return done

    def call(self, idx, fid, cid, name, pieces):
        item = {
            "id": fid,
            "type": "function_call",
            "status": "in_progress",
            "arguments": "",
            "call_id": cid,
            "name": name,
        }
        self.add("response.output_item.added", output_index=idx, item=item)
        for p in pieces:
            self.add("response.function_call_arguments.delta", item_id=fid, output_index=idx, delta=p)
        args = "".join(pieces)
        self.add("response.function_call_arguments.done", item_id=fid, output_index=idx, arguments=args)
        done = dict(item, status="completed", arguments=args)
        self.add("response.output_item.done", output_index=idx, item=done)
        return done

    def reasoning(self, idx, rid, summaries, enc, raw=None):
        self.add("response.output_item.added", output_index=idx, item={"id": rid, "type": "reasoning", "summary": []})
        for si, pieces in enumerate(summaries):
            self.add(
                "response.reasoning_summary_part.added",
                item_id=rid,
                output_index=idx,
                summary_index=si,
                part={"type": "summary_text", "text": ""},
            )
            for p in pieces:
                self.add(
                    "response.reasoning_summary_text.delta", item_id=rid, output_index=idx, summary_index=si, delta=p
                )
            text = "".join(pieces)
            self.add("response.reasoning_summary_text.done", item_id=rid, output_index=idx, summary_index=si, text=text)
            self.add(
                "response.reasoning_summary_part.done",
                item_id=rid,
                output_index=idx,
                summary_index=si,
                part={"type": "summary_text", "text": text},
            )
        done = {
            "id": rid,
            "type": "reasoning",
            "summary": [{"type": "summary_text", "text": "".join(p)} for p in summaries],
        }
        if raw is not None:
            for p in raw:
                self.add("response.reasoning_text.delta", item_id=rid, output_index=idx, content_index=0, delta=p)
            done["content"] = [{"type": "reasoning_text", "text": "".join(raw)}]
        if enc is not None:
            done["encrypted_content"] = enc
        self.add("response.output_item.done", output_index=idx, item=done)
        return done

    def end(self, type_, output, u, **kw):
        st = {"response.completed": "completed", "response.incomplete": "incomplete", "response.failed": "failed"}[
            type_
        ]
        self.add(type_, response=resp(st, output, u, **kw))

    def write(self, name):
        with open(os.path.join(OUT, name + ".sse"), "w", encoding="utf-8", newline="") as f:
            for e in self.events:
                f.write(f"event: {e['type']}\ndata: {json.dumps(e, ensure_ascii=False)}\n\n")


ENC = "gAAAAABpLx7Q" + "Zm9vYmFyYmF6" * 20 + "=="

s = S()
s.start()
m = s.message(0, "msg_01", ["Hel", "lo", ", world", "!"])
s.end("response.completed", [m], usage(12, 4))
s.write("01_text")
s = S()
s.start()
m = s.message(0, "msg_01", ["Grü", "ße ", "👋", " 世界", "\n", "naïve café"])
s.end("response.completed", [m], usage(15, 9))
s.write("02_text_multibyte")
s = S()
s.start()
m = s.message(0, "msg_01", ["I'm sorry, ", "I can't help with that."], refusal=True)
s.end("response.completed", [m], usage(20, 8))
s.write("03_refusal")
s = S()
s.start()
c = s.call(0, "fc_01", "call_abc123", "get_weather", ['{"ci', 'ty": "Pa', 'ris", "unit":', ' "celsius"}'])
s.end("response.completed", [c], usage(40, 18))
s.write("04_one_call")
s = S()
s.start()
c = s.call(
    0,
    "fc_01",
    "call_u1",
    "get_weather",
    ['{"city": "Z\\u00', 'fcrich", "note": "Gr', "üße 👋", " \\ud83d", '\\udc4b", "q": "a\\\\', '\\"b"}'],
)
s.end("response.completed", [c], usage(41, 30))
s.write("05_call_escapes_split")
s = S()
s.start()
c1 = s.call(0, "fc_01", "call_p1", "get_weather", ['{"city":', ' "Paris"}'])
c2 = s.call(1, "fc_02", "call_p2", "get_weather", ['{"city": "T', 'okyo"}'])
c3 = s.call(2, "fc_03", "call_p3", "get_time", ['{"tz": "Asia/Tokyo"}'])
s.end("response.completed", [c1, c2, c3], usage(60, 45))
s.write("06_parallel_calls")
s = S()
s.start()
m = s.message(0, "msg_01", ["Let me ", "check."])
c = s.call(1, "fc_01", "call_t1", "search", ['{"q": "weather"}'])
s.end("response.completed", [m, c], usage(30, 20))
s.write("07_text_then_call")
s = S()
s.start()
r = s.reasoning(0, "rs_01", [["**Plan**\n\nI need ", "the weather."], ["Then ", "answer."]], ENC)
c = s.call(1, "fc_01", "call_r1", "get_weather", ['{"city": "Oslo"}'])
s.end("response.completed", [r, c], usage(80, 200, cached=64, reasoning=150))
s.write("08_reasoning_summary_call")
s = S()
s.start()
r = s.reasoning(0, "rs_01", [], ENC)
m = s.message(1, "msg_01", ["42"])
s.end("response.completed", [r, m], usage(25, 70, reasoning=64))
s.write("09_reasoning_no_summary_text")
s = S()
s.start()
m = s.message(0, "msg_01", ["The answer is", " long and"])
m["status"] = "incomplete"
s.end("response.incomplete", [m], usage(10, 16), incomplete_details={"reason": "max_output_tokens"})
s.write("10_incomplete_length")
s = S()
s.start()
m = s.message(0, "msg_01", ["Some"])
s.end("response.incomplete", [m], usage(10, 1), incomplete_details={"reason": "content_filter"})
s.write("11_incomplete_content_filter")
s = S()
s.start()
m = s.message(0, "msg_01", ["partial"])
s.end(
    "response.failed",
    [m],
    usage(10, 2),
    error={"code": "server_error", "message": "The server had an error while processing your request."},
)
s.write("12_failed")
s = S()
s.start()
s.add(
    "response.output_item.added",
    output_index=0,
    item={"id": "msg_01", "type": "message", "status": "in_progress", "content": [], "role": "assistant"},
)
s.add(
    "response.content_part.added",
    item_id="msg_01",
    output_index=0,
    content_index=0,
    part={"type": "output_text", "annotations": [], "logprobs": [], "text": ""},
)
s.add("response.output_text.delta", item_id="msg_01", output_index=0, content_index=0, delta="Hi", logprobs=[])
s.add("error", code="rate_limit_exceeded", message="Rate limit reached for gpt-5-mini.", param=None)
s.write("13_error_midstream")
s = S()
s.start()
s.add("keepalive")
s.add("response.future_event", payload={"x": 1})
m = s.message(0, "msg_01", ["See ", "the docs."])
s.add("keepalive")
s.add(
    "response.output_text.annotation.added",
    item_id="msg_01",
    output_index=0,
    content_index=0,
    annotation_index=0,
    annotation={"type": "url_citation", "url": "https://example.com", "title": "Ex", "start_index": 0, "end_index": 3},
)
s.end("response.completed", [m], usage(9, 3))
s.write("14_keepalive_unknown_events")
s = S()
s.start()
m = s.message(0, "msg_01", ["cached"])
s.end("response.completed", [m], usage(2048, 5, cached=1920, reasoning=0))
s.write("15_cached_usage")
s = S()
s.start()
c = s.call(0, "fc_01", "call_e1", "list_files", [])
s.end("response.completed", [c], usage(30, 7))
s.write("16_empty_arguments")
s = S()
s.start()
r = s.reasoning(0, "rs_01", [], None, raw=["The user ", "wants 2+2."])
m = s.message(1, "msg_01", ["4"])
s.end("response.completed", [r, m], usage(20, 12, reasoning=8))
s.write("17_reasoning_text")
s = S()
s.start()
r1 = s.reasoning(0, "rs_01", [["First."]], ENC)
c1 = s.call(1, "fc_01", "call_m1", "a", ["{}"])
r2 = s.reasoning(2, "rs_02", [["Second."]], ENC + "x")
c2 = s.call(3, "fc_02", "call_m2", "b", ['{"n": 1}'])
s.end("response.completed", [r1, c1, r2, c2], usage(50, 90, reasoning=60))
s.write("18_two_reasonings_two_calls")
s = S()
s.start()
r = s.reasoning(0, "rs_01", [["Search first."]], ENC)
ws = {
    "id": "ws_01",
    "type": "web_search_call",
    "status": "completed",
    "action": {"type": "search", "query": "oslo weather"},
}
s.add(
    "response.output_item.added",
    output_index=1,
    item={"id": "ws_01", "type": "web_search_call", "status": "in_progress"},
)
s.add("response.web_search_call.in_progress", item_id="ws_01", output_index=1)
s.add("response.web_search_call.searching", item_id="ws_01", output_index=1)
s.add("response.web_search_call.completed", item_id="ws_01", output_index=1)
s.add("response.output_item.done", output_index=1, item=ws)
r2 = s.reasoning(2, "rs_02", [], ENC + "y")
m = s.message(3, "msg_01", ["It is ", "sunny."])
s.end("response.completed", [r, ws, r2, m], usage(70, 40, reasoning=20))
s.write("19_reasoning_builtin_tool_text")
print(sorted(name for name in os.listdir(OUT) if name.endswith(".sse")))
