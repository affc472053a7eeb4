// The path a file tool will open, as OpenClaw 2026.9.6 rewrites it AFTER `before_tool_call`
// (docs/openclaw-param-rewrites.md lists each rewrite and its place in OpenClaw's dist/).
// The plugin judges and returns the rewritten path, so the tool gets exactly what was asked
// about; a path OpenClaw would rewrite yet again is refused. Each function mirrors the
// OpenClaw function named in its comment, no more and no less.
import fs from "node:fs";
import path from "node:path";
import os from "node:os";
import { fileURLToPath } from "node:url";

/** Tools whose `path` OpenClaw rewrites (read, write, edit: the param validation; ls: its path resolution). */
export const PATH_TOOLS = new Set(["read", "write", "edit", "ls"]);

// agent-tools.params.ts: XML_ARG_VALUE_SUFFIX_RE, HALLUCINATED_OFFICE_PATH_EXTENSION_RE.
const XML_ARG_VALUE_SUFFIX_RE = /<\/arg_value>>+$/;
const OFFICE_RE = /\.(doc|ppt|xls)(?:odex|codex|xodex|xcodex)$/i;
const OFFICE_EXT = { doc: ".docx", ppt: ".pptx", xls: ".xlsx" };

/** stripMalformedXmlArgValueSuffix: one trailing `</arg_value>>…` run, once. */
export function stripXmlSuffix(v) {
  return v.includes("</arg_value>") ? v.replace(XML_ARG_VALUE_SUFFIX_RE, "") : v;
}

/** normalizeHallucinatedOfficePathExtension: `.docodex` → `.docx` and its kin. */
export function officeExtension(v) {
  return v.replace(OFFICE_RE, (m, family) => OFFICE_EXT[family.toLowerCase()] ?? m);
}

/**
 * preserveAtPrefixedRelativePath (host filesystem, no sandbox bridge): `@rel` stays a
 * literal `./@rel` when that file, or its top directory, exists in `cwd`.
 */
export function preserveAtLiteral(v, cwd) {
  if (!v.startsWith("@") || !cwd) return v;
  const stripped = v.slice(1);
  if (!stripped || stripped === "~" || stripped.startsWith("~/") || stripped.startsWith("~\\") || /^file:\/\//i.test(stripped) || path.posix.isAbsolute(stripped) || path.win32.isAbsolute(stripped)) return v;
  const literal = `./${v}`;
  let ancestor = v;
  for (;;) {
    const parent = path.dirname(ancestor);
    if (parent === "." || parent === ancestor) break;
    ancestor = parent;
  }
  const exists = (p) => {
    try {
      fs.statSync(p);
      return true;
    } catch {
      return false;
    }
  };
  const anc = ancestor === v ? undefined : path.resolve(cwd, `./${ancestor}`);
  return exists(path.resolve(cwd, literal)) || (anc && exists(anc)) ? literal : v;
}

/** normalizeFileReferencePrefix: one `@` consumed; a second stays literal as `./@…`. */
export function fileReferencePrefix(v) {
  const referenced = v.startsWith("@") ? v.slice(1) : v;
  return referenced.startsWith("@") ? `./${referenced}` : referenced;
}

/** resolveOsHomeDir: HOME, USERPROFILE, then the OS's idea (Termux aside). */
export function gatewayHome(env = process.env) {
  const norm = (x) => {
    const t = x?.trim();
    return t && t !== "undefined" && t !== "null" ? t : undefined;
  };
  let raw = norm(env.HOME) ?? norm(env.USERPROFILE);
  if (!raw) {
    try {
      raw = norm(os.homedir());
    } catch {
      raw = undefined;
    }
  }
  return raw ? path.resolve(raw) : undefined;
}

/** expandPath (sessions/tools/path-utils.ts): `@`, then `file://` URL, then `~`. */
export function expandPath(v, home) {
  const n = fileReferencePrefix(v);
  if (n.startsWith("file://")) {
    try {
      return fileURLToPath(n);
    } catch {
      return n;
    }
  }
  if ((n === "~" || n.startsWith("~/")) && home) return home + n.slice(1);
  return n;
}

/** One pass of what OpenClaw does to a file tool's `path` between the hook and the open. */
export function openClawPath(v, { cwd, home } = {}) {
  const repaired = officeExtension(stripXmlSuffix(v));
  return expandPath(preserveAtLiteral(repaired, cwd), home);
}

/**
 * The path to judge and hand the tool, or `{ block }`: the result must be one OpenClaw
 * leaves alone, as its wrappers apply the rewrite again (two or three times, by config).
 */
export function resolveToolPath(v, opts = {}) {
  let out = openClawPath(v, opts);
  if (out === "") out = ".";
  if (openClawPath(out, opts) !== out) {
    return { block: `the path ${JSON.stringify(v)} is rewritten by OpenClaw more than once (${JSON.stringify(out)} would change again); name the file plainly` };
  }
  return { path: out };
}

// path-utils.ts collectReadPathVariants: when the exact read path misses, `read` opens the
// one existing spelling of its file name with ASCII spaces, a narrow no-break space before
// AM/PM, straight or curly quotes, NFC or NFD.
const UNICODE_SPACES = /[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g;

/** getReadQueuePaths minus the path itself: every other name `read` may fall back to. */
export function readVariants(p) {
  const name = path.basename(p);
  const parent = p.slice(0, p.length - name.length);
  const out = new Set();
  const ascii = name.replace(UNICODE_SPACES, " ");
  for (const spaced of [ascii, ascii.replace(/ (?=(?:AM|PM)(?:\b|\.))/gi, "\u202F")]) {
    for (const quoted of [spaced.replace(/[\u2018\u2019]/g, "'"), spaced.replace(/['\u2018]/g, "\u2019")]) {
      out.add(`${parent}${quoted.normalize("NFC")}`);
      out.add(`${parent}${quoted.normalize("NFD")}`);
    }
  }
  out.delete(p);
  return [...out];
}

/** The workspace OpenClaw gives `agentId`'s tools as their cwd, from its config, if set. */
export function agentWorkspace(config, agentId, home) {
  const list = Array.isArray(config?.agents?.list) ? config.agents.list : [];
  const own = list.find((a) => a && a.id === agentId)?.workspace;
  const ws = typeof own === "string" ? own : config?.agents?.defaults?.workspace;
  if (typeof ws !== "string" || ws === "") return undefined;
  return path.resolve(expandPath(ws, home));
}
