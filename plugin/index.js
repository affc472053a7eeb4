// The Sanctum plugin for OpenClaw: on `before_tool_call` it asks sanctum-guard about the call
// (over the approvals socket, as a `request` frame with `source:"plugin"` and a `tool`
// object) and lets it run only on the guard's allow. Fail closed: no configuration, no
// guard, no answer in time or an answer it cannot read blocks the call with the reason.
//
// Install: `openclaw plugins install --link --force <this dir>`, then in OpenClaw's config
//   plugins.entries.sanctum.config = { socketPath, token | tokenFile, askTimeoutMs }
//   plugins.entries.sanctum.hooks.timeouts.before_tool_call = askTimeoutMs + 10000
// The hook also asks for that timeout itself; OpenClaw's config value wins when set, and
// without either OpenClaw gives up after 15 s (and blocks the call).
import fs from "node:fs";
import { askGuard } from "./client.js";
import { requestFrame, toolRequest, PREVIEW_CHARS } from "./request.js";
import { agentWorkspace, gatewayHome } from "./paths.js";

export const PLUGIN_ID = "sanctum";
/** How long a gated call waits for a person when the config does not say. */
export const DEFAULT_ASK_TIMEOUT_MS = 120_000;
/** Time the plugin gives the guard past its own deadline to send the fallback's answer. */
export const ANSWER_MARGIN_MS = 5_000;
/** OpenClaw's ceiling for a hook timeout. */
export const MAX_HOOK_TIMEOUT_MS = 600_000;

/** The plugin's settings from `plugins.entries.sanctum.config`, or `{ error }`. */
export function resolveConfig(raw) {
  const c = raw && typeof raw === "object" ? raw : {};
  if (typeof c.socketPath !== "string" || c.socketPath === "") {
    return { error: "the sanctum plugin has no socketPath configured" };
  }
  let token = typeof c.token === "string" ? c.token.trim() : "";
  if (!token && typeof c.tokenFile === "string") {
    try {
      token = fs.readFileSync(c.tokenFile, "utf8").trim();
    } catch (e) {
      return { error: `the sanctum plugin cannot read its tokenFile (${e.code ?? e.message})` };
    }
  }
  if (!token) return { error: "the sanctum plugin has no token configured" };
  const ask = Number.isSafeInteger(c.askTimeoutMs) && c.askTimeoutMs > 0 ? c.askTimeoutMs : DEFAULT_ASK_TIMEOUT_MS;
  const askTimeoutMs = Math.min(ask, MAX_HOOK_TIMEOUT_MS - 2 * ANSWER_MARGIN_MS);
  return {
    socketPath: c.socketPath,
    token,
    askTimeoutMs,
    // The guard answers by askTimeoutMs; the socket read waits a margin longer, the hook
    // longer still, so the guard's answer (or its fallback's) is what the agent gets.
    clientTimeoutMs: askTimeoutMs + ANSWER_MARGIN_MS,
    hookTimeoutMs: askTimeoutMs + 2 * ANSWER_MARGIN_MS,
    previewChars: Number.isSafeInteger(c.previewChars) && c.previewChars >= 0 ? c.previewChars : PREVIEW_CHARS,
  };
}

const blocked = (why) => ({ block: true, blockReason: `SANCTUM_DENIED: ${why}` });

/** The hook: the guard's answer as OpenClaw's hook result (`undefined` lets the call run). */
export function makeHook(cfg, ask = askGuard) {
  async function decide(event, ctx) {
    if (cfg.error) return blocked(`${cfg.error}; the tool did not run`);
    const built = toolRequest(event, ctx, cfg);
    if (built.skip) return undefined;
    if (built.block) return blocked(`${built.block}; the tool did not run`);
    const frame = requestFrame(built.tool, event, ctx, cfg);
    const answer = await ask(cfg.socketPath, frame, cfg.clientTimeoutMs);
    if (answer.error) return blocked(`no decision from sanctum-guard: ${answer.error}; the tool did not run`);
    if (answer.decision === "allow-once" || answer.decision === "allow-always") {
      // Each hook sees the call's original params, and the last params returned are the ones
      // the tool gets: returning the params judged here (this hook runs last, paths already
      // as OpenClaw would rewrite them) makes an earlier plugin's rewrite, or OpenClaw's own
      // after the hook, unable to open a file that was not judged.
      return event.params && typeof event.params === "object" ? { params: built.params } : undefined;
    }
    const why = answer.message ?? answer.reason ?? "denied";
    return blocked(`${why}. This is final: do not retry this call`);
  }
  return async function beforeToolCall(event, ctx) {
    try {
      return await decide(event, ctx);
    } catch (e) {
      return blocked(`the sanctum plugin failed (${e?.message ?? e}); the tool did not run`);
    }
  };
}

export default {
  id: PLUGIN_ID,
  name: "Sanctum guard",
  description: "Asks sanctum-guard before every tool call other than exec",
  register(api) {
    const cfg = resolveConfig(api.pluginConfig);
    // A file tool's cwd is its agent's workspace; `~` is the gateway's home (OpenClaw's).
    cfg.home = gatewayHome();
    cfg.cwdFor = (agentId) => agentWorkspace(api.config, agentId, cfg.home);
    if (cfg.error) api.logger?.warn?.(`sanctum: ${cfg.error}; every tool call is blocked`);
    // Lowest priority: it runs after every other plugin's hook, so it judges the params the
    // tool will actually get.
    api.on("before_tool_call", makeHook(cfg), {
      priority: -1_000_000,
      timeoutMs: cfg.hookTimeoutMs ?? DEFAULT_ASK_TIMEOUT_MS + 2 * ANSWER_MARGIN_MS,
    });
  },
};
