//! OpenClaw allowlist semantics: the §2.1 results, order and argPattern rules, a differential
//! test against OpenClaw's REAL `matchAllowlist` (Node 24 + the installed dist), and the
//! compiled lookup at 10,000 rules.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::openclaw::allow_always::cwd_argv_pattern;
use sanctum_guard::policy::allowlist::{js_trim, AllowMatch, CompiledAllowlist, Rule, Target};
use serde_json::{json, Value};
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Instant;
use support::tools::{node, openclaw_dist, NEW};

const HOME: &str = "/home/node";

fn rule(pattern: &str) -> Rule {
    Rule {
        pattern: pattern.into(),
        ..Rule::default()
    }
}

fn arg_rule(pattern: &str, arg: &str) -> Rule {
    Rule {
        pattern: pattern.into(),
        arg_pattern: Some(arg.into()),
        allow_always: false,
    }
}

fn argv(words: &[&str]) -> Vec<String> {
    words.iter().map(|s| s.to_string()).collect()
}

/// One lookup: `raw` as typed, resolved to `path` (real path = path).
fn lookup(rules: &[Rule], raw: &str, path: &str, args: &[&str]) -> Option<AllowMatch> {
    let list = CompiledAllowlist::compile(rules, Path::new(HOME));
    let argv = argv(args);
    list.matches(&Target {
        raw_executable: raw,
        resolved_path: Some(Path::new(path)),
        resolved_real_path: Some(Path::new(path)),
        argv: &argv,
        cwd: "/w",
    })
}

fn hit(rules: &[Rule], raw: &str, path: &str) -> bool {
    lookup(rules, raw, path, &[raw]).is_some()
}

#[test]
fn protocol_section_2_1_results() {
    // `ls` typed through PATH, resolved to /usr/bin/ls.
    assert!(
        !hit(&[rule("ls")], "/usr/bin/ls", "/usr/bin/ls"),
        "`ls` vs /usr/bin/ls"
    );
    assert!(
        hit(&[rule("ls")], "ls", "/usr/bin/ls"),
        "bare name via PATH"
    );
    assert!(hit(&[rule("l*")], "ls", "/usr/bin/ls"));
    assert!(!hit(&[rule("/usr/*")], "ls", "/usr/bin/ls"));
    assert!(hit(&[rule("/usr/**")], "ls", "/usr/bin/ls"));
    assert!(hit(&[rule("/usr/*/ls")], "ls", "/usr/bin/ls"));
    assert!(!hit(&[rule("/usr/bin/LS")], "ls", "/usr/bin/ls"));
    assert!(hit(&[rule("/usr/bin/ls")], "ls", "/usr/bin/ls"));
    assert!(hit(&[rule("/usr/bin/l?")], "/bin/ls", "/usr/bin/ls"));
    assert!(!hit(&[rule("/usr/bin/l?")], "ls", "/usr/bin/lsx"));
    assert!(hit(&[rule("~/bin/tool")], "tool", "/home/node/bin/tool"));
    assert!(hit(&[rule("~/**")], "./x", "/home/node/a/b/x"));
}

#[test]
fn wildcard_entry_matches_everything_but_not_as_allow_always() {
    assert_eq!(
        lookup(
            &[rule("/x"), rule("*")],
            "anything",
            "/opt/anything",
            &["anything"]
        ),
        Some(AllowMatch::Wildcard)
    );
    // `*` with an argPattern, or persisted by allow-always, is not the bare wildcard and
    // never matches as a name pattern either.
    assert_eq!(
        lookup(&[arg_rule("*", ".*")], "ls", "/usr/bin/ls", &["ls"]),
        None
    );
    let aa = Rule {
        pattern: "*".into(),
        arg_pattern: None,
        allow_always: true,
    };
    assert_eq!(lookup(&[aa], "ls", "/usr/bin/ls", &["ls"]), None);
    // Unresolved commands still match the wildcard, not anything else.
    let list = CompiledAllowlist::compile(&[rule("*")], Path::new(HOME));
    let target = Target {
        raw_executable: "nope",
        resolved_path: None,
        resolved_real_path: None,
        argv: &[],
        cwd: "/w",
    };
    assert_eq!(list.matches(&target), Some(AllowMatch::Wildcard));
    let list = CompiledAllowlist::compile(&[rule("nope")], Path::new(HOME));
    assert_eq!(list.matches(&target), None);
}

#[test]
fn arg_patterns_and_entry_order() {
    let rules = [
        rule("/usr/bin/git"),
        arg_rule("/usr/bin/git", "^status$"),
        arg_rule("git", "^log( |$)"),
    ];
    // An argPattern hit wins over an earlier path-only entry.
    assert_eq!(
        lookup(&rules, "git", "/usr/bin/git", &["git", "status"]),
        Some(AllowMatch::Pattern { rule: 1 })
    );
    assert_eq!(
        lookup(&rules, "git", "/usr/bin/git", &["git", "log", "-1"]),
        Some(AllowMatch::Pattern { rule: 2 })
    );
    assert_eq!(
        lookup(&rules, "git", "/usr/bin/git", &["git", "push"]),
        Some(AllowMatch::Pattern { rule: 0 })
    );
    // Space-joined subject; NUL-joined with a trailing NUL when the pattern has NUL.
    let r = [arg_rule("/usr/bin/echo", "^a b$")];
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "a", "b"]).is_some());
    let r = [arg_rule("/usr/bin/echo", "^a\0b\0$")];
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "a", "b"]).is_some());
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "a b"]).is_none());
    let r = [arg_rule("/usr/bin/echo", "^\0\0$")];
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo"]).is_some());
    // Invalid regex and legacy hashes never match.
    let r = [arg_rule("/usr/bin/echo", "(")];
    assert_eq!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "("]), None);
    let r = [arg_rule("/usr/bin/echo", "sha256:argv:abc")];
    assert_eq!(lookup(&r, "echo", "/usr/bin/echo", &["echo"]), None);
    // ECMAScript syntax the Rust regex crate lacks: lookahead, backreference.
    let r = [arg_rule("/usr/bin/echo", r"^(?!-)(\w)\1$")];
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "aa"]).is_some());
    assert!(lookup(&r, "echo", "/usr/bin/echo", &["echo", "ab"]).is_none());
}

#[test]
fn allow_always_grants_are_exact_argv_and_cwd() {
    let argv_ok = argv(&["/usr/bin/make", "test"]);
    let grant = Rule {
        pattern: "/usr/bin/make".into(),
        arg_pattern: Some(cwd_argv_pattern("/w", &argv_ok)),
        allow_always: true,
    };
    let list = CompiledAllowlist::compile(std::slice::from_ref(&grant), Path::new(HOME));
    let t = |argv: &[String], cwd: &str| {
        let target = Target {
            raw_executable: "make",
            resolved_path: Some(Path::new("/usr/bin/make")),
            resolved_real_path: Some(Path::new("/usr/bin/make")),
            argv,
            cwd,
        };
        list.matches(&target)
    };
    assert_eq!(t(&argv_ok, "/w"), Some(AllowMatch::AllowAlways { rule: 0 }));
    assert_eq!(
        t(&argv_ok, "/w/x/.."),
        Some(AllowMatch::AllowAlways { rule: 0 })
    );
    assert_eq!(t(&argv_ok, "/other"), None);
    assert_eq!(t(&argv(&["/usr/bin/make", "test", "x"]), "/w"), None);
    // An allow-always entry without a cwd-bound hash is inactive.
    let bare = Rule {
        pattern: "/usr/bin/make".into(),
        arg_pattern: None,
        allow_always: true,
    };
    let list = CompiledAllowlist::compile(&[bare], Path::new(HOME));
    let target = Target {
        raw_executable: "make",
        resolved_path: Some(Path::new("/usr/bin/make")),
        resolved_real_path: Some(Path::new("/usr/bin/make")),
        argv: &argv_ok,
        cwd: "/w",
    };
    assert_eq!(list.matches(&target), None);
}

#[test]
fn bare_names_match_the_resolved_path_basename_and_path_globs_the_real_path() {
    // /usr/bin/python3 -> python3.11: the name sees python3, path globs see the real file.
    let list = CompiledAllowlist::compile(
        &[rule("python3"), rule("/usr/bin/python3.*")],
        Path::new(HOME),
    );
    let argv = argv(&["python3"]);
    let t = |raw| Target {
        raw_executable: raw,
        resolved_path: Some(Path::new("/usr/bin/python3")),
        resolved_real_path: Some(Path::new("/usr/bin/python3.11")),
        argv: &argv,
        cwd: "/w",
    };
    assert_eq!(
        list.matches(&t("python3")),
        Some(AllowMatch::Pattern { rule: 0 })
    );
    assert_eq!(
        list.matches(&t("/usr/bin/python3")),
        Some(AllowMatch::Pattern { rule: 1 })
    );
}

// ---- differential test against the real OpenClaw -------------------------------------------

/// Deterministic xorshift, so a failure reproduces.
struct Rng(u64);
impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn pick<'a>(&mut self, items: &[&'a str]) -> &'a str {
        items[(self.next() % items.len() as u64) as usize]
    }
}

struct Case {
    rules: Vec<Rule>,
    raw: String,
    resolved: Option<String>,
    real: Option<String>,
    argv: Vec<String>,
    cwd: String,
}

const PIECES: &[&str] = &[
    "/", "/", "/usr", "/bin", "bin", "ls", "l", "*", "*", "**", "?", "~", "~/", ".", "..", "/./",
    "/../", "\\", "\\\\", "LS", "py", "thon3", "😀", "é", "\n", " ", "[a]", "(x)", "+", "$", "^",
    "{1}", "|", "-", "\u{FEFF}",
];
const TARGETS: &[&str] = &[
    "/usr/bin/ls",
    "/usr/bin/LS",
    "/usr/local/bin/ls",
    "/bin/ls",
    "/home/node/bin/tool",
    "/usr/bin/../bin/ls",
    "/usr/./bin/ls",
    "/opt/😀/x",
    "/opt/a\nb",
    "/usr/bin/python3",
    "/usr/bin/python3.11",
    "/x\\\\y/ls",
    "/usr/bin/[a]",
    " /usr/bin/ls ",
    "/",
];
const RAWS: &[&str] = &[
    "ls",
    "/usr/bin/ls",
    "./ls",
    "~/bin/tool",
    "python3",
    " ls ",
    "a\\b",
    "tool",
    "",
];
const ARG_PATTERNS: &[&str] = &[
    "",
    "^status$",
    "^-l",
    "a b",
    "^$",
    "(",
    "[",
    "^a\0b\0$",
    "^\0\0$",
    "sha256:argv:00",
    "\\d+",
    "^(?!-)",
    "(a)\\1",
    "^.$",
    "😀",
    "^\\u{1F600}$",
    ".",
    "[^]",
    "\\p{L}",
    "a{2}",
];
const ARGS: &[&str] = &[
    "status", "-l", "a", "b", "a b", "", "😀", "12", "aa", "é", "\n", "-",
];

fn random_case(rng: &mut Rng, max_rules: u64) -> Case {
    let n_rules = 1 + rng.next() % max_rules;
    let argv_len = rng.next() % 4;
    let mut argv = vec!["prog".to_string()];
    for _ in 0..argv_len {
        argv.push(rng.pick(ARGS).to_string());
    }
    let cwd = rng.pick(&["/w", "/w/", "/w/./x/..", "/tmp"]).to_string();
    let mut rules = Vec::new();
    for _ in 0..n_rules {
        let pattern: String = if rng.next() % 3 == 0 {
            rng.pick(&[
                "*",
                " * ",
                "ls",
                "/usr/bin/ls",
                "~/bin/*",
                "python3",
                "/usr/**",
            ])
            .into()
        } else {
            (0..1 + rng.next() % 6).map(|_| rng.pick(PIECES)).collect()
        };
        let allow_always = rng.next() % 5 == 0;
        let arg_pattern = match rng.next() % 4 {
            0 => None,
            1 => Some(cwd_argv_pattern(rng.pick(&["/w", "/tmp"]), &argv)),
            _ => Some(rng.pick(ARG_PATTERNS).to_string()),
        };
        rules.push(Rule {
            pattern,
            arg_pattern,
            allow_always,
        });
    }
    let real = (rng.next() % 6 != 0).then(|| rng.pick(TARGETS).to_string());
    let resolved = match rng.next() % 3 {
        0 => real.clone(),
        1 => None,
        _ => Some(rng.pick(TARGETS).to_string()),
    };
    Case {
        rules,
        raw: rng.pick(RAWS).to_string(),
        resolved,
        real,
        argv,
        cwd,
    }
}

fn fixed_cases() -> Vec<Case> {
    let mut cases = Vec::new();
    let mk = |patterns: &[&str], raw: &str, path: &str| Case {
        rules: patterns.iter().map(|p| rule(p)).collect(),
        raw: raw.into(),
        resolved: Some(path.into()),
        real: Some(path.into()),
        argv: argv(&[raw]),
        cwd: "/w".into(),
    };
    for p in [
        "ls",
        "l*",
        "/usr/*",
        "/usr/**",
        "/usr/*/ls",
        "/usr/bin/LS",
        "*",
        "~/bin/*",
    ] {
        cases.push(mk(&[p], "ls", "/usr/bin/ls"));
        cases.push(mk(&[p], "/usr/bin/ls", "/usr/bin/ls"));
    }
    cases
}

#[test]
fn differential_against_real_openclaw_match_allowlist() {
    let (node, dist) = (node(), openclaw_dist(NEW));
    let mut rng = Rng(0x5eed_1234_abcd_9876);
    let mut cases = fixed_cases();
    for _ in 0..3000 {
        cases.push(random_case(&mut rng, 5));
    }
    // Large lists: prefix groups past the small-group size run on regex sets.
    for _ in 0..40 {
        cases.push(random_case(&mut rng, 400));
    }
    let json_cases: Vec<Value> = cases
        .iter()
        .map(|c| {
            let raw = js_trim(&c.raw);
            let resolved = c.resolved.clone().or_else(|| c.real.clone());
            let resolution = if raw.is_empty() {
                Value::Null
            } else {
                let name = resolved
                    .as_deref()
                    .map(|p| {
                        p.trim_end_matches('/')
                            .rsplit('/')
                            .next()
                            .unwrap_or("")
                            .to_string()
                    })
                    .unwrap_or_else(|| raw.to_string());
                json!({
                    "rawExecutable": raw,
                    "resolvedPath": resolved,
                    "resolvedRealPath": c.real.clone().filter(|_| resolved.is_some()),
                    "executableName": name,
                })
            };
            let entries: Vec<Value> = c
                .rules
                .iter()
                .map(|r| {
                    let mut e = json!({ "pattern": r.pattern });
                    if let Some(a) = &r.arg_pattern {
                        e["argPattern"] = json!(a);
                    }
                    if r.allow_always {
                        e["source"] = json!("allow-always");
                    }
                    e
                })
                .collect();
            json!({ "entries": entries, "resolution": resolution, "argv": c.argv, "cwd": c.cwd })
        })
        .collect();
    let mut child = Command::new(&node)
        .arg(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/js/allowlist_oracle.mjs"))
        .arg(&dist)
        .env("HOME", HOME)
        .env_remove("OPENCLAW_HOME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn node");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(serde_json::to_string(&json_cases).unwrap().as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "oracle failed");
    let oracle: Value = serde_json::from_slice(&out.stdout).unwrap();
    let results = oracle["results"].as_array().unwrap();
    assert_eq!(results.len(), cases.len());
    let mut matched = 0;
    let mut mismatches = Vec::new();
    for (i, (case, want)) in cases.iter().zip(results).enumerate() {
        let list = CompiledAllowlist::compile(&case.rules, Path::new(HOME));
        let resolved = case.resolved.as_deref().or(case.real.as_deref());
        let target = Target {
            raw_executable: &case.raw,
            resolved_path: resolved.map(Path::new),
            resolved_real_path: case
                .real
                .as_deref()
                .filter(|_| resolved.is_some())
                .map(Path::new),
            argv: &case.argv,
            cwd: &case.cwd,
        };
        let got = list.matched_rule(&target).map(|(rule, _)| rule as u64);
        matched += usize::from(got.is_some());
        if got != want.as_u64() {
            mismatches.push(format!(
                "case {i}: rust {got:?} js {want} raw={:?} resolved={:?} real={:?} argv={:?} cwd={:?} rules={:?}",
                case.raw, case.resolved, case.real, case.argv, case.cwd, case.rules
            ));
        }
    }
    assert!(
        mismatches.is_empty(),
        "{} of {} cases differ from OpenClaw ({}):\n{}",
        mismatches.len(),
        cases.len(),
        oracle["chunk"],
        mismatches[..mismatches.len().min(15)].join("\n")
    );
    // The generator must exercise both outcomes, or the comparison proves little.
    assert!(
        matched > 300 && matched < cases.len() - 300,
        "matched {matched}"
    );
    eprintln!(
        "{} cases equal to OpenClaw ({} matched)",
        cases.len(),
        matched
    );
}

// ---- scale ----------------------------------------------------------------------------------

#[test]
fn ten_thousand_rules_match_in_microseconds() {
    let mut rules = Vec::new();
    for i in 0..10_000 {
        rules.push(match i % 4 {
            0 => rule(&format!("/opt/tool{i}/bin/run")),
            1 => rule(&format!("/srv/app{i}/*/bin/*")),
            2 => rule(&format!("name{i}*")),
            _ => arg_rule(&format!("/usr/lib/x{i}/**"), &format!("^--id {i}$")),
        });
    }
    let start = Instant::now();
    let list = CompiledAllowlist::compile(&rules, Path::new(HOME));
    let compile = start.elapsed();
    let probes: Vec<(String, Vec<String>, Option<usize>)> = vec![
        ("/opt/tool4000/bin/run".into(), argv(&["run"]), Some(4000)),
        ("/srv/app4001/v2/bin/x".into(), argv(&["x"]), Some(4001)),
        (
            "/usr/lib/x9999/a/b".into(),
            argv(&["b", "--id", "9999"]),
            Some(9999),
        ),
        ("/usr/lib/x9999/a/b".into(), argv(&["b", "--id", "1"]), None),
        ("/nowhere/else".into(), argv(&["else"]), None),
    ];
    let n = 200;
    let start = Instant::now();
    for _ in 0..n {
        for (path, argv, want) in &probes {
            let t = Target {
                raw_executable: path,
                resolved_path: Some(Path::new(path)),
                resolved_real_path: Some(Path::new(path)),
                argv,
                cwd: "/w",
            };
            let got = list.matches(&t).map(|m| match m {
                AllowMatch::Pattern { rule } | AllowMatch::AllowAlways { rule } => rule,
                AllowMatch::Wildcard => usize::MAX,
            });
            assert_eq!(got, *want, "{path}");
        }
    }
    let per = start.elapsed() / (n * probes.len() as u32);
    eprintln!("10,000 rules: compile {compile:?}, lookup {per:?}");
    // Debug build on a shared 2-core machine: a generous bound that a linear scan compiling
    // regexes per lookup would still miss by far.
    assert!(per.as_micros() < 2_000, "lookup took {per:?}");
}
