// The oracle for tests/policy_allowlist.rs: runs OpenClaw's REAL matchAllowlist (from the
// installed dist) on the cases read from stdin and prints, per case, the index of the entry
// it returned (or null). Usage: node allowlist_oracle.mjs OPENCLAW_DIST_DIR < cases.json
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const dist = process.argv[2];
const chunk = fs
  .readdirSync(dist)
  .filter((f) => f.endsWith(".mjs"))
  .map((f) => path.join(dist, f))
  .find((f) => /function matchAllowlist\(/.test(fs.readFileSync(f, "utf8")));
if (!chunk) throw new Error(`no dist chunk defines matchAllowlist in ${dist}`);
const source = fs.readFileSync(chunk, "utf8");
const alias = /matchAllowlist as (\w+)/.exec(source)?.[1];
if (!alias) throw new Error(`${chunk} does not export matchAllowlist`);
const matchAllowlist = (await import(pathToFileURL(chunk).href))[alias];
if (typeof matchAllowlist !== "function") throw new Error("matchAllowlist is not a function");

const cases = JSON.parse(fs.readFileSync(0, "utf8"));
const out = cases.map((c) => {
  const hit = matchAllowlist(c.entries, c.resolution, c.argv, "linux", c.cwd);
  return hit ? c.entries.indexOf(hit) : null;
});
process.stdout.write(JSON.stringify({ chunk: path.basename(chunk), results: out }));
