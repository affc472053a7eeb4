// A scripted OpenAI-compatible chat-completions server (streaming SSE, as OpenClaw calls it):
// real agent turns with no real model. Each user message carries its own script line,
//   SCRIPT {"name":"exec","arguments":{"command":"ls"}}
// and the model answers that turn with exactly that tool call; once the tool result is back it
// answers with text quoting the result. Every request is appended to $MODEL_LOG (JSON Lines),
// so a test sees what reached the agent. Prints "listening <port>" when ready.
// A message without a script line gets the call of the first $SCRIPTED_MODEL_RULES entry
// (a JSON list of [text the message contains, a script line's JSON]) it matches, else
// $SCRIPTED_MODEL_DEFAULT (a script line's JSON) when set, so a recipe written for people
// ("List my workspace with ls", "Create notes.md") drives real turns too.
// With $SCRIPTED_MODEL_KEY set, a request without `Authorization: Bearer <that key>` gets 401
// (and a log line saying so, without the header): a provider whose key must arrive.
// With $SCRIPTED_MODEL_TLS_CERT and $SCRIPTED_MODEL_TLS_KEY (PEM files) it speaks HTTPS, as a
// real provider does (the compose test's egress route verifies its certificate).
// Usage: node scripted_model.mjs <port> <logfile>
import http from "node:http";
import https from "node:https";
import fs from "node:fs";

const port = Number(process.argv[2] || 0);
const log = process.argv[3];
const INTERNAL = "<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>";

const text = (m) =>
  typeof m.content === "string"
    ? m.content
    : Array.isArray(m.content)
      ? m.content.map((p) => p.text ?? "").join("")
      : "";

function nextStep(messages) {
  // Skip OpenClaw's internal context message appended after a tool result (research §E).
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i];
    if (m.role === "user" && text(m).includes(INTERNAL)) continue;
    if (m.role === "tool") return { kind: "final", result: text(m) };
    if (m.role === "user") {
      const t = text(m);
      const at = t.indexOf("SCRIPT ");
      if (at < 0) {
        const rules = JSON.parse(process.env.SCRIPTED_MODEL_RULES || "[]");
        const rule = rules.find(([needle]) => t.includes(needle));
        if (rule) return { kind: "call", call: rule[1] };
        const d = process.env.SCRIPTED_MODEL_DEFAULT;
        return d ? { kind: "call", call: JSON.parse(d) } : { kind: "final", result: "no script" };
      }
      const line = t.slice(at + 7).split("\n")[0];
      return { kind: "call", call: JSON.parse(line) };
    }
  }
  return { kind: "final", result: "empty" };
}

let n = 0;
const handler = (req, res) => {
  let body = "";
  req.on("data", (c) => (body += c));
  req.on("end", () => {
    const key = process.env.SCRIPTED_MODEL_KEY;
    if (key && req.headers.authorization !== `Bearer ${key}`) {
      if (log) fs.appendFileSync(log, JSON.stringify({ unauthorized: req.url }) + "\n");
      res.writeHead(401, { "content-type": "application/json" });
      res.end(JSON.stringify({ error: { message: "invalid api key", type: "invalid_request_error" } }));
      return;
    }
    if (req.method === "GET") {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ object: "list", data: [{ id: "fake-1", object: "model" }] }));
      return;
    }
    let parsed = {};
    try {
      parsed = JSON.parse(body);
    } catch {}
    const messages = parsed.messages ?? [];
    const step = nextStep(messages);
    if (log) fs.appendFileSync(log, JSON.stringify({ step, messages }) + "\n");
    const id = `chatcmpl-${++n}`;
    const created = Math.floor(Date.now() / 1000);
    const chunk = (delta, finish) =>
      `data: ${JSON.stringify({ id, object: "chat.completion.chunk", created, model: "fake-1",
        choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
    if (step.kind === "call") {
      res.write(chunk({ role: "assistant", content: null, tool_calls: [{ index: 0, id: `call_${n}`,
        type: "function", function: { name: step.call.name, arguments: JSON.stringify(step.call.arguments) } }] }, null));
      res.write(chunk({}, "tool_calls"));
    } else {
      res.write(chunk({ role: "assistant", content: `TOOL RESULT: ${step.result}` }, null));
      res.write(chunk({}, "stop"));
    }
    res.write("data: [DONE]\n\n");
    res.end();
  });
};
const tls = process.env.SCRIPTED_MODEL_TLS_CERT
  ? { cert: fs.readFileSync(process.env.SCRIPTED_MODEL_TLS_CERT), key: fs.readFileSync(process.env.SCRIPTED_MODEL_TLS_KEY) }
  : null;
const server = tls ? https.createServer(tls, handler) : http.createServer(handler);
// Loopback unless $SCRIPTED_MODEL_HOST says otherwise (the compose test's model container).
server.listen(port, process.env.SCRIPTED_MODEL_HOST || "127.0.0.1", () => {
  console.log(`listening ${server.address().port}`);
});
