//! The real Node 24 and OpenClaw versions that tests/setup.sh installs under `.cache/`:
//! finding them (loudly: a test never passes without the real client), running the
//! `openclaw` CLI on temp dirs, and calling OpenClaw's own JavaScript functions.

use serde_json::Value;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The current OpenClaw (SQLite-era approvals store).
pub const NEW: &str = "2026.9.6";
/// The older OpenClaw (JSON-era approvals file).
pub const OLD: &str = "2026.7.35";

/// The test tool cache: `$SANCTUM_TEST_CACHE`, else `<repo>/.cache`. Fails loudly when Node
/// is missing (tests never pass silently without the real client).
pub fn cache() -> PathBuf {
    let p = std::env::var_os("SANCTUM_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::process::repo_root().join(".cache"));
    assert!(
        p.join("node/bin/node").is_file(),
        "Node 24 not found at {}/node/bin/node: run tests/setup.sh (or set SANCTUM_TEST_CACHE)",
        p.display()
    );
    p
}

/// Whether the tool cache holds Node and the current OpenClaw, without panicking: benches
/// skip with this line instead of failing on a fresh clone.
pub fn cache_ready() -> Result<PathBuf, String> {
    let p = std::env::var_os("SANCTUM_TEST_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| super::process::repo_root().join(".cache"));
    let oc = p.join(format!("openclaw-{NEW}/node_modules/.bin/openclaw"));
    if !p.join("node/bin/node").is_file() || !oc.exists() {
        return Err(format!(
            "Node 24 and OpenClaw {NEW} are not in {}: run tests/setup.sh (or set \
             SANCTUM_TEST_CACHE)",
            p.display()
        ));
    }
    Ok(p)
}

/// The Node binary the OpenClaw installs run on.
pub fn node() -> PathBuf {
    cache().join("node/bin/node")
}

/// The install dir of one OpenClaw version (holding node_modules/openclaw).
pub fn openclaw_dir(version: &str) -> PathBuf {
    let d = cache().join(format!("openclaw-{version}"));
    assert!(
        d.join("node_modules/.bin/openclaw").exists(),
        "OpenClaw {version} not installed at {}: run tests/setup.sh",
        d.display()
    );
    d
}

/// `PATH` with the cached Node first (OpenClaw's scripts start with `#!/usr/bin/env node`).
pub fn path_with_node() -> String {
    format!(
        "{}:{}",
        cache().join("node/bin").display(),
        std::env::var("PATH").unwrap_or_default()
    )
}

/// The `openclaw` CLI of `version` as a user with `home` and `state` (cwd `home`, no stdin,
/// no banner or colour, no inherited NODE_OPTIONS).
pub fn openclaw_command(version: &str, home: &Path, state: &Path) -> Command {
    let mut c = Command::new(openclaw_dir(version).join("node_modules/.bin/openclaw"));
    c.env("PATH", path_with_node())
        .env("HOME", home)
        .env("OPENCLAW_STATE_DIR", state)
        .env("OPENCLAW_HIDE_BANNER", "1")
        .env("OPENCLAW_SUPPRESS_NOTES", "1")
        .env("NO_COLOR", "1")
        .env_remove("NODE_OPTIONS")
        .current_dir(home)
        .stdin(Stdio::null());
    c
}

/// Runs an OpenClaw CLI command of `version` to completion; its stdout (a failure panics).
pub fn openclaw_cli(version: &str, home: &Path, state: &Path, args: &[&str]) -> String {
    let out = openclaw_command(version, home, state)
        .args(args)
        .output()
        .expect("run openclaw");
    assert!(
        out.status.success(),
        "openclaw {version} {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf8 stdout")
}

/// `openclaw approvals get --json`, parsed (first JSON object in stdout).
pub fn approvals_get(version: &str, home: &Path, state: &Path) -> Value {
    let out = openclaw_cli(version, home, state, &["approvals", "get", "--json"]);
    let start = out.find('{').expect("json in approvals get output");
    serde_json::from_str(&out[start..]).expect("approvals get --json parses")
}

/// The first JSON object in CLI output that may carry log lines before it.
pub fn first_json_object(text: &str) -> Option<Value> {
    let start = text.find('{')?;
    serde_json::Deserializer::from_str(&text[start..])
        .into_iter::<Value>()
        .next()?
        .ok()
}

/// The built JavaScript of one OpenClaw version (its `dist/` folder of chunks).
pub fn openclaw_dist(version: &str) -> PathBuf {
    let dir = cache().join(format!("openclaw-{version}/node_modules/openclaw/dist"));
    assert!(
        dir.is_dir(),
        "OpenClaw {version} missing at {}: run tests/setup.sh",
        dir.display()
    );
    dir
}

/// The dist chunk that defines `function name(` and the minified name it exports it under.
pub fn js_export(version: &str, name: &str) -> (PathBuf, String) {
    let defines = format!("function {name}(");
    let exports = format!("{name} as ");
    std::fs::read_dir(openclaw_dist(version))
        .unwrap()
        .filter_map(|f| f.ok().map(|f| f.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "mjs"))
        .find_map(|p| {
            let text = std::fs::read_to_string(&p).ok()?;
            text.contains(&defines).then_some(())?;
            let at = text.rfind(&exports)?;
            let export: String = text[at + exports.len()..]
                .chars()
                .take_while(|c| c.is_alphanumeric() || *c == '_' || *c == '$')
                .collect();
            Some((p, export))
        })
        .unwrap_or_else(|| panic!("no OpenClaw {version} chunk exports {name}"))
}

/// Calls OpenClaw's own JS function `name` once per argument list; returns the results.
pub fn run_js(version: &str, name: &str, args: &[Value]) -> Value {
    let (chunk, export) = js_export(version, name);
    let script = format!(
        "import * as m from {chunk:?}; let d=''; process.stdin.on('data',c=>d+=c).on('end',()=>{{\
         process.stdout.write(JSON.stringify(JSON.parse(d).map(a=>m[{export:?}](...a))))}});",
        chunk = chunk.to_str().unwrap(),
    );
    let mut child = Command::new(node())
        .args(["--input-type=module", "-e", &script])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node");
    use std::io::Write;
    let input = serde_json::to_vec(args).unwrap();
    child.stdin.take().unwrap().write_all(&input).unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "node failed: {:?}",
        out.status.signal()
    );
    let results: Value = serde_json::from_slice(&out.stdout).expect("node output");
    assert_eq!(results.as_array().map(Vec::len), Some(args.len()));
    results
}
