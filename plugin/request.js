// What the guard is asked about one tool call: the tool's name, the paths it touches and
// what a person must see to decide (a write's digest and preview, an edit's or a patch's
// text, a fetch's method and URL), plus OpenClaw's ids for the audit log. Pure: no I/O.
import { createHash, randomUUID } from "node:crypto";
import { PATH_TOOLS, readVariants, resolveToolPath } from "./paths.js";

/** Characters of a write's start (and of its end) sent when the whole content is too large. */
export const PREVIEW_CHARS = 2048;
/**
 * Largest JSON encoding of a write's content sent whole. The guard reads lines up to
 * 256,000 bytes (socket/wire.rs MAX_LINE_BYTES); this leaves room for the rest of the
 * frame. The content is measured as it travels (JSON-escaped, UTF-8), so control
 * characters (6 bytes each escaped) cannot push a frame past the limit. Sent whole, the
 * guard checks it against contentSha256 and a person can read every byte; beyond, only the
 * start and the end are sent, and the card says the middle never reached the guard.
 */
export const MAX_CONTENT_JSON_BYTES = 200_000;
/**
 * Longest edit or patch text sent in full. The guard reads lines up to 256,000 bytes and
 * JSON escaping can double a text, so a longer one is refused here (blocked), never cut:
 * a person must see every line that will be written.
 */
export const MAX_PATCH_CHARS = 100_000;

/** Tools the plugin does not ask about, and why. */
export const NOT_ASKED = {
  // The node host asks the guard for every command (and runs it confined).
  exec: "exec reaches the guard through its node host",
  // A deferred tool fires the hook again as the inner tool; that call is the one asked.
  tool_call: "the deferred tool's own call is asked",
};

const str = (v) => (typeof v === "string" ? v : undefined);

/** An edit's replacements as one diff-like text: `-` old lines, `+` new lines. */
export function editText(params) {
  const edits = Array.isArray(params.edits) ? params.edits.slice() : [];
  if (str(params.oldText) !== undefined || str(params.newText) !== undefined) {
    edits.push({ oldText: params.oldText, newText: params.newText });
  }
  const lines = [];
  edits.forEach((e, i) => {
    const oldText = str(e?.oldText) ?? str(e?.old_string) ?? "";
    const newText = str(e?.newText) ?? str(e?.new_string) ?? "";
    lines.push(`@@ edit ${i + 1}`);
    for (const l of oldText.split("\n")) lines.push(`-${l}`);
    for (const l of newText.split("\n")) lines.push(`+${l}`);
  });
  return lines.join("\n");
}

/** The first `n` characters (code points, never half a surrogate pair). */
function head(s, n) {
  let out = "";
  let count = 0;
  for (const c of s) {
    if (count++ >= n) break;
    out += c;
  }
  return out;
}

/** The last `n` characters (code points). */
function tail(s, n) {
  const cps = Array.from(s);
  return cps.slice(Math.max(0, cps.length - n)).join("");
}

/** A write's content as sent: whole when its encoding fits the frame, else head and tail. */
export function contentFields(content, opts = {}) {
  const bytes = Buffer.from(content, "utf8");
  const out = {
    contentSha256: createHash("sha256").update(bytes).digest("hex"),
    contentBytes: bytes.length,
  };
  const cap = opts.maxContentJsonBytes ?? MAX_CONTENT_JSON_BYTES;
  if (Buffer.byteLength(JSON.stringify(content), "utf8") <= cap) {
    out.content = content;
  } else {
    const n = opts.previewChars ?? PREVIEW_CHARS;
    out.preview = head(content, n);
    out.tail = tail(content, n);
  }
  return out;
}

/**
 * A file tool's params with each path as the tool will open it (`paths.js`), or `{ block }`.
 * `opts.cwdFor(agentId)` and `opts.home` are the tool's cwd and the gateway's home.
 */
export function normalizeParams(name, params, ctx, opts = {}) {
  if (!PATH_TOOLS.has(name)) return { params };
  const resolve = { cwd: opts.cwdFor?.(str(ctx?.agentId) ?? "main"), home: opts.home };
  let out = params;
  for (const key of ["path", "file_path"]) {
    const v = params[key];
    if (typeof v !== "string") continue;
    const r = resolveToolPath(v, resolve);
    if (r.block) return { block: r.block };
    if (r.path !== v) {
      out = out === params ? { ...params } : out;
      out[key] = r.path;
    }
  }
  return { params: out };
}

/**
 * The guard's `tool` object for one call and the params the tool is to get, or `{ skip }`
 * (not asked) or `{ block }` (refused here: the call cannot be shown to a person whole).
 */
export function toolRequest(event, ctx, opts = {}) {
  const name = str(event?.toolName) ?? str(ctx?.toolName);
  if (!name) return { block: "the tool call has no name" };
  if (Object.hasOwn(NOT_ASKED, name)) return { skip: NOT_ASKED[name] };
  const raw = event.params && typeof event.params === "object" ? event.params : {};
  const normalized = normalizeParams(name, raw, ctx, opts);
  if (normalized.block) return { block: normalized.block };
  const params = normalized.params;
  const tool = { name };
  const path = str(params.path) ?? str(params.file_path);
  if (path !== undefined) tool.paths = [path];
  // `read` falls back to another spelling of the name when the exact one is missing.
  if (name === "read" && path !== undefined) tool.paths.push(...readVariants(path));
  switch (name) {
    case "write": {
      const content = str(params.content);
      if (content !== undefined) Object.assign(tool, contentFields(content, opts));
      break;
    }
    case "edit":
      tool.patch = editText(params);
      break;
    case "apply_patch": {
      tool.patch = str(params.input) ?? str(params.patch) ?? "";
      const derived = Array.isArray(event.derivedPaths) ? event.derivedPaths.filter((p) => typeof p === "string") : [];
      if (derived.length) tool.paths = [...(tool.paths ?? []), ...derived];
      break;
    }
    case "web_fetch":
      tool.method = (str(params.method) ?? "GET").toUpperCase();
      tool.url = str(params.url);
      break;
    case "web_search":
      tool.method = "GET";
      tool.query = str(params.query);
      break;
    case "browser":
      tool.action = str(params.action);
      tool.url = str(params.url) ?? str(params.targetUrl);
      break;
    case "process":
      tool.action = str(params.action);
      tool.signal = str(params.signal);
      break;
    case "ls":
      if (!tool.paths) tool.paths = ["."];
      break;
    default:
      tool.action = str(params.action);
      tool.url = str(params.url);
  }
  if (tool.patch !== undefined && tool.patch.length > MAX_PATCH_CHARS) {
    return { block: `the ${name} text is ${tool.patch.length} characters, more than a person can review here (${MAX_PATCH_CHARS})` };
  }
  const toolCallId = str(event.toolCallId) ?? str(ctx?.toolCallId);
  if (toolCallId) tool.toolCallId = toolCallId;
  const sessionId = str(ctx?.sessionId);
  if (sessionId) tool.sessionId = sessionId;
  for (const k of Object.keys(tool)) if (tool[k] === undefined) delete tool[k];
  return { tool, params };
}

/** One line naming the call (the frame's required `command`; lists and logs show it). */
export function summary(tool) {
  return ["tool", tool.name, ...(tool.paths ?? []), tool.method ?? "", tool.url ?? "", tool.action ?? ""]
    .filter((s) => s !== "")
    .join(" ");
}

/** The socket `request` frame carrying `tool` (one JSON line). */
export function requestFrame(tool, event, ctx, cfg) {
  const request = {
    command: summary(tool),
    source: "plugin",
    agentId: str(ctx?.agentId) ?? "main",
    timeoutMs: cfg.askTimeoutMs,
    tool,
  };
  const sessionKey = str(ctx?.sessionKey);
  if (sessionKey) request.sessionKey = sessionKey;
  const runId = str(event?.runId) ?? str(ctx?.runId);
  if (runId) request.runId = runId;
  return { type: "request", token: cfg.token, id: randomUUID(), request };
}
