// The chat page of the AI SDK examples: useChat from @ai-sdk/react against the app's /api/chat.
//
// The chat id is in the page's URL (?chat=...), so a reload finds the same chat: the page loads
// the messages the server kept (GET /api/chat/<id>) and, with `resume: true`, useChat asks for the
// stream of a turn still running (GET /api/chat/<id>/stream) and shows it from its start.
// Tools that need a human show Approve / Deny; the answer is posted back automatically.
import React, { useState } from "react";
import { createRoot } from "react-dom/client";
import { useChat } from "@ai-sdk/react";
import { DefaultChatTransport, lastAssistantMessageIsCompleteWithApprovalResponses } from "ai";

const api = document.body.dataset.api || "/api/chat";
const params = new URLSearchParams(location.search);
const chatId = params.get("chat") || crypto.randomUUID();
if (!params.get("chat")) history.replaceState(null, "", `?chat=${chatId}`);

// Django wants its CSRF token in a header; Flask ignores it.
function csrfHeaders() {
  const token = document.cookie.split("; ").find((c) => c.startsWith("csrftoken="));
  return token ? { "X-CSRFToken": token.slice("csrftoken=".length) } : {};
}

function ToolPart({ part, onDecide }) {
  const name = part.type === "dynamic-tool" ? part.toolName : part.type.slice("tool-".length);
  const input = part.input === undefined ? "" : JSON.stringify(part.input);
  const output = part.state === "output-available" ? ` -> ${typeof part.output === "string" ? part.output : JSON.stringify(part.output)}`
    : part.state === "output-error" ? ` -> error: ${part.errorText}` : "";
  return (
    <div className="tool" data-state={part.state} data-call={part.toolCallId}>
      <code>{`${name}(${input})${output}`}</code>
      {part.state === "approval-requested" && (
        <span>
          <button className="approve" onClick={() => onDecide(part.approval.id, true)}>Approve</button>
          <button className="deny" onClick={() => onDecide(part.approval.id, false)}>Deny</button>
        </span>
      )}
    </div>
  );
}

function Message({ message, onDecide }) {
  return (
    <div className={`message ${message.role}`} data-id={message.id}>
      {message.parts.map((part, i) => {
        if (part.type === "text") return <p className="text" key={i}>{part.text}</p>;
        if (part.type === "reasoning") return <p className="reasoning" key={i}>{part.text}</p>;
        if (part.type === "dynamic-tool" || part.type.startsWith("tool-")) {
          return <ToolPart part={part} onDecide={onDecide} key={i} />;
        }
        return null;
      })}
    </div>
  );
}

function App({ initialMessages }) {
  const [input, setInput] = useState("");
  const { messages, sendMessage, status, error, addToolApprovalResponse } = useChat({
    id: chatId,
    messages: initialMessages,
    resume: true,
    transport: new DefaultChatTransport({ api, headers: csrfHeaders }),
    sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses,
  });
  window.agcoreChat = { messages, status };
  const onDecide = (id, approved) => addToolApprovalResponse({ id, approved });
  return (
    <main>
      <h1>agcore_sync + useChat</h1>
      <div id="messages">{messages.map((m) => <Message message={m} onDecide={onDecide} key={m.id} />)}</div>
      <form id="form" onSubmit={(e) => { e.preventDefault(); if (input.trim()) { sendMessage({ text: input }); setInput(""); } }}>
        <input id="message" value={input} onChange={(e) => setInput(e.target.value)} placeholder="What is 17 * 23?" />
        <button id="send" type="submit" disabled={status === "streaming" || status === "submitted"}>Send</button>
      </form>
      <p id="status">{status}</p>
      {error && <p id="error">{String(error.message || error)}</p>}
    </main>
  );
}

fetch(`${api}/${chatId}`).then((r) => r.json()).then(({ messages }) => {
  createRoot(document.getElementById("root")).render(<App initialMessages={messages} />);
});
