// The latency the plugin adds to an autonomous tool call: the hook entered → returned, with
// a real guard answering over the socket. Usage:
//   node plugin/bench/latency.mjs SOCKET TOKEN COUNT PATH
// Prints {"n","allowed","p50Ms","p99Ms","maxMs"} as one JSON line.
import { performance } from "node:perf_hooks";
import { makeHook, resolveConfig } from "../index.js";

const [socketPath, token, count, path] = process.argv.slice(2);
const n = Number(count);
const hook = makeHook(resolveConfig({ socketPath, token, askTimeoutMs: 10000 }));
const ctx = { agentId: "main", sessionKey: "agent:main:bench", sessionId: "bench", runId: "bench" };
const times = [];
let allowed = 0;
// A few calls first: the first connection and JIT warm-up are not what each call costs.
for (let i = 0; i < n + 20; i++) {
  const event = { toolName: "read", params: { path }, toolCallId: `bench-${i}`, runId: "bench" };
  const t0 = performance.now();
  const r = await hook(event, ctx);
  const dt = performance.now() - t0;
  if (i < 20) continue;
  times.push(dt);
  if (r && !r.block) allowed++;
}
times.sort((a, b) => a - b);
const q = (p) => times[Math.min(times.length - 1, Math.ceil((p / 100) * times.length) - 1)];
const r3 = (x) => Math.round(x * 1000) / 1000;
console.log(JSON.stringify({ n, allowed, p50Ms: r3(q(50)), p99Ms: r3(q(99)), maxMs: r3(times[times.length - 1]) }));
