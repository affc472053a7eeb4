//! The arrows between the guard's modules point one way (ARCHITECTURE.md): a door never
//! imports another door or the wiring, so a new door plugs in next to the others; the engine,
//! the sinks, OpenClaw's formats and the host facts import no door, no wiring and not the
//! engine (the audit log records a run's outcome without knowing who reports it); the policy
//! core imports nothing outside itself. Scans every `crate::` and `super::` path in shipped code
//! (test modules from `#[cfg(test)]` to the end of a file, and `*tests.rs` files, are skipped).
//! `SANCTUM_ARROWS_ROOT=/path/to/guard` scans another tree (an older checkout fails).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

/// Protocols the guard speaks; `gateway` is the approver client and front door.
const DOORS: &[&str] = &["socket", "node", "web", "gateway", "egress"];
/// What wires the boxes together (only it may know every box).
const WIRING: &[&str] = &["app", "cli", "main"];
/// The pure decision core.
const CORE: &str = "policy";
/// Below the engine: the sinks, OpenClaw's formats and the host facts (the engine uses them).
const BELOW_ENGINE: &[&str] = &["audit", "inbox", "sandbox", "openclaw", "host_facts"];

/// What module `from` may not import, or `None` when it may import anything.
fn forbidden(from: &str, to: &str) -> Option<&'static str> {
    if from == to || WIRING.contains(&from) || from == "lib" {
        return None;
    }
    if WIRING.contains(&to) {
        return Some("only the wiring imports the wiring");
    }
    if from == CORE {
        return Some("the policy core imports nothing outside itself");
    }
    if to == "engine" && BELOW_ENGINE.contains(&from) {
        return Some("the sinks, formats and host facts never import the engine");
    }
    if DOORS.contains(&to) {
        return Some(if DOORS.contains(&from) {
            "a door never imports another door"
        } else {
            "the engine, sinks and formats never import a door"
        });
    }
    None
}

/// The module path of a source file under the guard root: `socket/door.rs` ->
/// `[socket, door]`; `socket/mod.rs` -> `[socket]`; `audit.rs` -> `[audit]`.
fn module_path(rel: &Path) -> Vec<String> {
    let mut parts: Vec<String> = rel
        .iter()
        .map(|c| c.to_string_lossy().into_owned())
        .collect();
    if let Some(last) = parts.last_mut() {
        *last = last.trim_end_matches(".rs").to_owned();
    }
    if parts.last().is_some_and(|l| l == "mod") {
        parts.pop();
    }
    parts
}

/// The shipped code of a file: up to its first `#[cfg(test)]`, without line comments.
fn shipped_code(text: &str) -> String {
    let mut out = String::new();
    for line in text.lines() {
        let code = line.trim_start();
        if code.starts_with("#[cfg(test)]") {
            break;
        }
        let code = match code.find("//") {
            // A `//` inside a string ("http://…") cuts the line short: only text is lost.
            Some(at) => &code[..at],
            None => code,
        };
        out.push_str(code);
        out.push('\n');
    }
    out
}

fn ident_at(s: &str) -> &str {
    let end = s
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(s.len());
    &s[..end]
}

/// The top-level names a `{…}` group starts with (`{a::b, c, d::{e, f}}` -> a, c, d).
fn group_heads(s: &str) -> Vec<String> {
    let mut heads = Vec::new();
    let mut depth = 0usize;
    let mut expect = true;
    for (i, c) in s.char_indices() {
        match c {
            '{' => {
                depth += 1;
                expect = depth == 1;
            }
            '}' => {
                if depth <= 1 {
                    break;
                }
                depth -= 1;
            }
            ',' if depth == 1 => expect = true,
            c if expect && depth == 1 && (c.is_ascii_alphabetic() || c == '_') => {
                heads.push(ident_at(&s[i..]).to_owned());
                expect = false;
            }
            _ => {}
        }
    }
    heads
}

/// Every top-level module the code of the file at `module` names (`crate::x`, `super::…`
/// resolved against the file's own path, `{…}` groups expanded).
fn imports(module: &[String], code: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let bytes = code.as_bytes();
    let is_ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let mut i = 0;
    while i < code.len() {
        let rest = &code[i..];
        let starts_word = i == 0 || !is_ident(bytes[i - 1]);
        // The path after its root, when the root is the crate's: `crate::`, or as many
        // `super::` as the file's module is deep.
        let after = if !starts_word {
            None
        } else if let Some(r) = rest.strip_prefix("crate::") {
            Some(r)
        } else if rest.starts_with("super::") {
            let mut ups = 0;
            let mut r = rest;
            while let Some(t) = r.strip_prefix("super::") {
                ups += 1;
                r = t;
            }
            (ups >= module.len()).then_some(r)
        } else {
            None
        };
        match after {
            Some(r) if r.starts_with('{') => out.extend(group_heads(r)),
            Some(r) if !ident_at(r).is_empty() => {
                out.insert(ident_at(r).to_owned());
            }
            _ => {}
        }
        // `super::super::` is consumed one `super::` at a time; a shorter tail only
        // re-finds a path inside the file's own module.
        i += rest.chars().next().map_or(1, char::len_utf8);
    }
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        if p.is_dir() {
            rust_files(&p, out);
        } else if p.extension().is_some_and(|x| x == "rs") {
            out.push(p);
        }
    }
}

/// Every arrow that breaks a rule, as `file: from -> to (why)`.
fn violations(root: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(root, &mut files);
    files.sort();
    assert!(files.len() > 50, "found only {} files", files.len());
    let mut bad = Vec::new();
    for f in &files {
        let rel = f.strip_prefix(root).expect("under root");
        let name = rel.file_name().unwrap_or_default().to_string_lossy();
        if name == "tests.rs" || name.ends_with("_tests.rs") {
            continue;
        }
        let module = module_path(rel);
        let from = module[0].clone();
        let text = std::fs::read_to_string(f).expect("read");
        for to in imports(&module, &shipped_code(&text)) {
            if let Some(why) = forbidden(&from, &to) {
                bad.push(format!("{}: {from} -> {to} ({why})", rel.display()));
            }
        }
    }
    bad
}

#[test]
fn doors_sinks_and_core_import_only_downward() {
    let root = std::env::var_os("SANCTUM_ARROWS_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("guard"));
    let bad = violations(&root);
    assert!(
        bad.is_empty(),
        "arrows that run the wrong way:\n{}",
        bad.join("\n")
    );
}

/// The scanner sees each spelling of an import, resolves `super::`, and skips comments and
/// test modules; the rules forbid what ARCHITECTURE.md forbids.
#[test]
fn the_scanner_and_rules_catch_each_spelling() {
    let m = |s: &str| -> Vec<String> { s.split('/').map(str::to_owned).collect() };
    let cases: &[(&str, &str, &[&str])] = &[
        ("engine/mod", "use crate::web::metrics;", &["web"]),
        (
            "engine/mod",
            "crate::web::metrics::global().run(\"x\");",
            &["web"],
        ),
        (
            "socket/door",
            "use crate::{app::config::X, engine::Engine, node::{a, b}};",
            &["app", "engine", "node"],
        ),
        ("socket/door", "use super::wire;", &[]),
        ("socket/door", "use super::super::node::ask;", &["node"]),
        ("socket", "use super::node::ask;", &["node"]),
        ("audit", "use super::{node, policy};", &["node", "policy"]),
        ("audit/event", "// use crate::node::ask;", &[]),
        ("audit/event", "let s = \"x\"; // crate::node", &[]),
        ("audit/event", "let n = my_crate::node::x;", &[]),
        (
            "audit/event",
            "use crate::policy::x;\n#[cfg(test)]\nuse crate::node::ask;",
            &["policy"],
        ),
    ];
    for (module, code, want) in cases {
        let got = imports(&m(module), &shipped_code(code));
        let want: BTreeSet<String> = want.iter().map(|s| s.to_string()).collect();
        assert_eq!(got, want, "{module}: {code}");
    }
    assert!(forbidden("socket", "node").is_some());
    assert!(forbidden("gateway", "web").is_some());
    assert!(forbidden("node", "app").is_some());
    assert!(forbidden("engine", "web").is_some());
    assert!(forbidden("engine", "app").is_some());
    assert!(forbidden("audit", "node").is_some());
    assert!(forbidden("inbox", "socket").is_some());
    assert!(forbidden("sandbox", "cli").is_some());
    assert!(forbidden("policy", "engine").is_some());
    assert!(forbidden("policy", "sandbox").is_some());
    assert!(forbidden("socket", "engine").is_none());
    assert!(forbidden("node", "engine").is_none());
    assert!(forbidden("web", "inbox").is_none());
    assert!(forbidden("app", "web").is_none());
    assert!(forbidden("audit", "policy").is_none());
    assert!(forbidden("audit", "engine").is_some());
    assert!(forbidden("inbox", "engine").is_some());
    assert!(forbidden("sandbox", "engine").is_some());
    assert!(forbidden("engine", "audit").is_none());
}
