// The approvals socket client: one JSON line out (then half-close, as OpenClaw's own client),
// the first line back. It never throws: anything but a well-formed decision for this
// request's id is an `error`, which the hook turns into a block (fail closed).
import net from "node:net";

/** Longest reply line read (the guard's are a few hundred bytes). */
const MAX_REPLY_BYTES = 64 * 1024;

/**
 * Sends `frame` to the guard at `socketPath`; resolves to `{ decision, reason, message }`
 * or `{ error }` within `timeoutMs`.
 */
export function askGuard(socketPath, frame, timeoutMs) {
  return new Promise((resolve) => {
    let done = false;
    let buf = "";
    const finish = (result) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      resolve(result);
    };
    const timer = setTimeout(() => finish({ error: `no answer within ${timeoutMs} ms` }), timeoutMs);
    const sock = net.createConnection({ path: socketPath });
    sock.setEncoding("utf8");
    sock.on("connect", () => {
      sock.end(JSON.stringify(frame) + "\n");
    });
    sock.on("data", (chunk) => {
      buf += chunk;
      const nl = buf.indexOf("\n");
      if (nl >= 0) finish(parseReply(buf.slice(0, nl), frame.id));
      else if (buf.length > MAX_REPLY_BYTES) finish({ error: "reply line too long" });
    });
    sock.on("end", () => finish({ error: "the guard closed the connection without a decision" }));
    sock.on("error", (e) => finish({ error: `guard unreachable (${e.code ?? e.message})` }));
  });
}

/** A reply line: a decision for request `id`, or why it is not one. */
export function parseReply(line, id) {
  let r;
  try {
    r = JSON.parse(line);
  } catch {
    return { error: "the guard's reply is not JSON" };
  }
  if (!r || typeof r !== "object" || r.type !== "decision") return { error: "the guard's reply is not a decision" };
  if (r.id !== id) return { error: "the guard's decision is for another request" };
  if (!["allow-once", "allow-always", "deny"].includes(r.decision)) {
    return { error: "the guard's decision is not one it may give" };
  }
  return {
    decision: r.decision,
    reason: typeof r.reason === "string" ? r.reason : undefined,
    message: typeof r.message === "string" ? r.message : undefined,
  };
}
