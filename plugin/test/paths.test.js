// The paths a file tool opens, as OpenClaw 2026.9.6 rewrites them after `before_tool_call`
// (docs/openclaw-param-rewrites.md): each spelling is what OpenClaw's own code makes of it,
// the plugin judges that, hands it to the tool, and refuses what OpenClaw would rewrite again.
import { test } from "node:test";
import assert from "node:assert/strict";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { agentWorkspace, gatewayHome, openClawPath, readVariants, resolveToolPath } from "../paths.js";
import { normalizeParams, toolRequest } from "../request.js";

const home = "/home/agent";
const ws = fs.mkdtempSync(path.join(os.tmpdir(), "sg-paths-"));
fs.writeFileSync(path.join(ws, "@literal.txt"), "x");
fs.mkdirSync(path.join(ws, "@dir"));
const opts = { cwd: ws, home };

test("each spelling resolves as OpenClaw resolves it", () => {
  for (const [given, want] of [
    // @: one file-reference prefix consumed (normalizeFileReferencePrefix).
    ["@.env", ".env"],
    ["@../secret", "../secret"],
    ["@/etc/passwd", "/etc/passwd"],
    ["@~/.ssh/id_rsa", "/home/agent/.ssh/id_rsa"],
    ["@~", "/home/agent"],
    ["@", "."],
    ["@@x", "./@x"],
    ["@@@x", "./@@x"],
    ["@file:///etc/shadow", "/etc/shadow"],
    // A literal @ name that exists in the workspace stays literal (preserveAtPrefixedRelativePath).
    ["@literal.txt", "./@literal.txt"],
    ["@dir/new.txt", "./@dir/new.txt"],
    // </arg_value>>: one trailing run stripped, once (stripMalformedXmlArgValueSuffix).
    [".env</arg_value>>", ".env"],
    [".env</arg_value>>>>", ".env"],
    ["@.env</arg_value>>", ".env"],
    ["~/.ssh/id_rsa</arg_value>>", "/home/agent/.ssh/id_rsa"],
    // The Office-extension repair (normalizeHallucinatedOfficePathExtension).
    ["q.docodex", "q.docx"],
    ["q.XLSXCODEX", "q.xlsx"],
    ["q.pptcodex</arg_value>>", "q.pptx"],
    // ~ and file:// (expandPath).
    ["~", "/home/agent"],
    ["~/.openclaw/openclaw.json", "/home/agent/.openclaw/openclaw.json"],
    ["file:///home/agent/%2Essh/id_rsa", "/home/agent/.ssh/id_rsa"],
    // Left alone: OpenClaw opens these as written.
    [".env", ".env"],
    ["~user/x", "~user/x"],
    [" @x", " @x"],
    [" .env</arg_value>> ", " .env</arg_value>> "],
    ["FILE:///etc/passwd", "FILE:///etc/passwd"],
    ["./@x", "./@x"],
    ["a/@b", "a/@b"],
  ]) {
    assert.equal(openClawPath(given, opts), given === "@" ? "" : want, given);
    const r = resolveToolPath(given, opts);
    if (![" .env</arg_value>> "].includes(given)) assert.equal(r.path, want, given);
  }
});

test("a path OpenClaw would rewrite again is refused, not guessed", () => {
  for (const given of [
    "x</arg_value>></arg_value>>",
    ".env</arg_value>>.docodex",
    "@@~/.ssh/id_rsa</arg_value>>@",
    "@x.docodex</arg_value>>",
    "file:///tmp/@x</arg_value>>",
    "@x</arg_value>></arg_value>>",
  ].filter((g) => openClawPath(openClawPath(g, opts), opts) !== openClawPath(g, opts))) {
    assert.match(resolveToolPath(given, opts).block, /rewritten by OpenClaw more than once/, given);
  }
  assert.match(resolveToolPath("x</arg_value>></arg_value>>", opts).block, /more than once/);
  assert.match(resolveToolPath("a.docodex</arg_value>></arg_value>>", opts).block, /more than once/);
});

test("the result is one OpenClaw leaves alone", () => {
  for (const given of ["@.env", "@@x", ".env</arg_value>>", "@~/.ssh/id_rsa", "@literal.txt", "file:///a%20b", "q.docodex"]) {
    const { path: p } = resolveToolPath(given, opts);
    assert.equal(openClawPath(p, opts), p, given);
  }
});

test("read judges every spelling it may fall back to", () => {
  assert.deepEqual(readVariants("a.txt"), []);
  const v = readVariants("dir/it\u2019s\u00A0here.txt");
  assert.ok(v.includes("dir/it's here.txt") && v.includes("dir/it\u2019s here.txt"), JSON.stringify(v));
  assert.ok(readVariants("Shot 10.00 AM.png").includes("Shot 10.00\u202FAM.png"));
  // Kelvin sign: NFC makes it an ASCII K.
  assert.ok(readVariants("\u212Aey").includes("Key"));
});

test("normalized params: path and file_path, only for file tools, original untouched", () => {
  const p = { path: "@.env", offset: 3 };
  const r = normalizeParams("read", p, { agentId: "main" }, { home, cwdFor: () => ws });
  assert.deepEqual(r.params, { path: ".env", offset: 3 });
  assert.equal(p.path, "@.env");
  assert.deepEqual(normalizeParams("write", { file_path: "~/x", content: "" }, {}, { home }).params, { file_path: "/home/agent/x", content: "" });
  const same = { path: "a.txt" };
  assert.equal(normalizeParams("edit", same, {}, { home }).params, same);
  assert.equal(normalizeParams("web_fetch", { url: "@x" }, {}, { home }).params.url, "@x");
  assert.match(normalizeParams("ls", { path: "x</arg_value>></arg_value>>" }, {}, { home }).block, /more than once/);
});

test("the guard is asked about the rewritten path and the tool gets the same", () => {
  const r = toolRequest({ toolName: "write", params: { path: "@~/.ssh/authorized_keys", content: "k" } }, { agentId: "main" }, { home, cwdFor: () => ws });
  assert.deepEqual(r.tool.paths, ["/home/agent/.ssh/authorized_keys"]);
  assert.equal(r.params.path, "/home/agent/.ssh/authorized_keys");
  const l = toolRequest({ toolName: "ls", params: { path: "@../" } }, {}, { home });
  assert.deepEqual(l.tool.paths, ["../"]);
  assert.ok(toolRequest({ toolName: "read", params: { path: "a</arg_value>></arg_value>>" } }, {}, { home }).block);
});

test("the tools' cwd is the agent's workspace from OpenClaw's config; home as OpenClaw finds it", () => {
  const config = { agents: { defaults: { workspace: "~/ws" }, list: [{ id: "other", workspace: "/srv/o" }] } };
  assert.equal(agentWorkspace(config, "main", home), "/home/agent/ws");
  assert.equal(agentWorkspace(config, "other", home), "/srv/o");
  assert.equal(agentWorkspace({}, "main", home), undefined);
  assert.equal(gatewayHome({ HOME: " /h/x/ " }), "/h/x");
  assert.equal(gatewayHome({ HOME: "undefined", USERPROFILE: "/p" }), "/p");
});

// Against OpenClaw's own code, when the test cache has it (SANCTUM_TEST_CACHE): the chain the
// read/write/edit wrappers run (normalizeFileToolPathParam) then the tools' resolution
// (resolveLocalPathToCwd) lands on the file the plugin names, for every spelling above and
// their combinations.
const dist = process.env.SANCTUM_TEST_CACHE && path.join(process.env.SANCTUM_TEST_CACHE, "openclaw-2026.9.6/node_modules/openclaw/dist");
test("OpenClaw's dist opens the file the plugin judged", { skip: !dist || !fs.existsSync(dist ?? "") }, async () => {
  const { o: normalizeFileToolPathParam } = await import(path.join(dist, "agent-tools.before-tool-call.decision-Ct38VXfn.mjs"));
  const { i: resolveLocalPathToCwd } = await import(path.join(dist, "path-utils-BX048BMU.mjs"));
  const saved = process.env.HOME;
  process.env.HOME = home;
  try {
    const parts = ["@", "@@", "~/", "file://", "../", ".env", "</arg_value>>", "</arg_value>>>", ".docodex", "literal.txt", "dir/x", "/etc/", " "];
    const spellings = new Set();
    for (const a of parts) for (const b of parts) for (const c of parts) spellings.add(a + b + c);
    let checked = 0;
    for (const given of spellings) {
      const r = resolveToolPath(given, opts);
      // What OpenClaw opens from the ORIGINAL path (one wrapper pass), and from the path the
      // plugin returns (every further pass): both must be the file judged.
      const opened = resolveLocalPathToCwd(await normalizeFileToolPathParam(given, ws), ws);
      if (r.block) continue;
      // An absolute path is opened as written, a relative one from the workspace.
      const judged = path.isAbsolute(r.path) ? r.path : path.resolve(ws, r.path);
      assert.equal(opened, judged, `${JSON.stringify(given)} → ${r.path}`);
      const again = resolveLocalPathToCwd(await normalizeFileToolPathParam(await normalizeFileToolPathParam(r.path, ws), ws), ws);
      assert.equal(again, judged, `returned ${JSON.stringify(r.path)}`);
      checked++;
    }
    assert.ok(checked > 1500, `${checked}`);
  } finally {
    process.env.HOME = saved;
  }
});
