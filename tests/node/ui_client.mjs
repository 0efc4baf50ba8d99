// The UI protocols' own client code, run against a server of the tests (tests/ui/).
//
//   node ui_client.mjs ai-sdk URL BODY_JSON   POST BODY to URL; parse the answer with the `ai`
//                                             package's parseJsonEventStream + uiMessageChunkSchema
//                                             and rebuild the message with readUIMessageStream
//                                             (continuing PREVIOUS_JSON, a 4th argument, if given).
//   node ui_client.mjs ag-ui URL INPUT_JSON   run @ag-ui/client's HttpAgent (its SSE parser, event
//                                             verifier and message reducer) with INPUT's threadId,
//                                             messages, runId and resume.
//
// Prints one JSON object on stdout: what the client library made of the stream.
import { parseJsonEventStream, readUIMessageStream, uiMessageChunkSchema } from "ai";
import { HttpAgent } from "@ag-ui/client";

const [mode, url, body, previous] = process.argv.slice(2);

async function aiSdk() {
  // UI_CLIENT_HEADERS: extra request headers as JSON (a CSRF token, a cookie).
  const extra = JSON.parse(process.env.UI_CLIENT_HEADERS || "{}");
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", ...extra }, body });
  const headers = Object.fromEntries(response.headers.entries());
  const chunks = [];
  const invalid = [];
  const parsed = parseJsonEventStream({ stream: response.body, schema: uiMessageChunkSchema });
  const checked = parsed.pipeThrough(new TransformStream({
    transform(result, controller) {
      if (result.success) { chunks.push(result.value); controller.enqueue(result.value); }
      else invalid.push(String(result.error && result.error.message || result.error).slice(0, 500));
    },
  }));
  let message = null;
  const errors = [];
  const start = previous ? { message: JSON.parse(previous) } : {};
  for await (const m of readUIMessageStream({ ...start, stream: checked, onError: (e) => errors.push(String(e)) })) {
    message = m;
  }
  return { status: response.status, headers, chunks, invalid, errors, message };
}

async function agUi() {
  const input = JSON.parse(body);
  const agent = new HttpAgent({ url, threadId: input.threadId, initialMessages: input.messages });
  const events = [];
  const errors = [];
  try {
    const result = await agent.runAgent(
      { runId: input.runId, ...(input.resume ? { resume: input.resume } : {}) },
      { onEvent: ({ event }) => { events.push(event); } },
    );
    return { result: result.result ?? null, outcome: result.outcome ?? null, messages: agent.messages, events, errors };
  } catch (e) {
    errors.push(String(e && e.message || e));
    return { messages: agent.messages, events, errors };
  }
}

const out = mode === "ai-sdk" ? await aiSdk() : await agUi();
process.stdout.write(JSON.stringify(out));
