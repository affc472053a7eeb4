//! The policy table: every case of tests/data/policy_cases.tsv through `decide()` in a
//! temporary agent home (real files and symlinks), and a sample through the real
//! `sanctum-guard policy explain|check` binary (exit codes, `--json` shape).
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::openclaw::allow_always::cwd_argv_pattern;
use sanctum_guard::policy::allowlist::{CompiledAllowlist, Rule};
use sanctum_guard::policy::decide::{decide, DecideContext, ExecAsk, ExecSecurity};
use sanctum_guard::policy::request::{Action, DecisionKind};
use sanctum_guard::policy::shell::{analyse, ShellContext};
use sanctum_guard::policy::verdict::{Category, Verdict, VerdictKind};
use sanctum_test_support as support;
use std::path::{Path, PathBuf};
use std::process::Command;
use support::policy::{shell_request, unescape, AgentHome, Layout, PATH};

struct Case {
    line: usize,
    command: String,
    cwd: String,
    verdict: String,
    category: String,
    openclaw: String,
}

fn cases() -> Vec<Case> {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/policy_cases.tsv"),
    )
    .expect("policy_cases.tsv");
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.starts_with('#') && !l.trim().is_empty())
        .map(|(i, l)| {
            let f: Vec<&str> = l.split('\t').collect();
            assert_eq!(f.len(), 5, "line {}: 5 tab-separated fields", i + 1);
            Case {
                line: i + 1,
                command: unescape(f[0]),
                cwd: f[1].to_string(),
                verdict: f[2].to_string(),
                category: f[3].to_string(),
                openclaw: f[4].to_string(),
            }
        })
        .collect()
}

/// A temporary agent home with secrets, a workspace with symlinks into the secrets, and
/// a wrapper script.
fn world() -> AgentHome {
    AgentHome::new(&Layout {
        home_dirs: &[".ssh", ".aws", ".openclaw", "projects"],
        ws_dirs: &["src"],
        home_files: &[
            (".ssh/id_rsa", "KEY"),
            (".aws/credentials", "AWS"),
            (".env", "TOKEN=x"),
            ("notes.txt", "notes"),
        ],
        ws_files: &[
            ("a.txt", "a"),
            (".env", "PORT=1"),
            ("run.sh", "#!/bin/sh\ncat ~/.ssh/id_rsa\n"),
        ],
        links: &[("sshlink", ".ssh"), ("keylink", ".ssh/id_rsa")],
    })
}

/// What a case row needs from the world (a trait: `AgentHome` is the support crate's).
trait CaseWorld {
    fn cwd(&self, c: &str) -> PathBuf;
    fn context(&self, command: &str, cwd: &Path, spec: &str) -> DecideContext;
}

impl CaseWorld for AgentHome {
    fn cwd(&self, c: &str) -> PathBuf {
        match c {
            "ws" => self.ws.clone(),
            "home" => self.home.clone(),
            other => PathBuf::from(other),
        }
    }

    /// The DecideContext for a case's `openclaw` column.
    fn context(&self, command: &str, cwd: &Path, spec: &str) -> DecideContext {
        let mut ctx = DecideContext::standalone(&self.home, PATH, cwd);
        ctx.workspace = Some(self.ws.clone());
        if spec == "-" {
            return ctx;
        }
        let (settings, entries) = spec.split_once(':').unwrap_or((spec, ""));
        let (sec, ask) = settings.split_once('/').expect("SECURITY/ASK");
        ctx.security = ExecSecurity::parse(sec).expect("security");
        ctx.ask = ExecAsk::parse(ask).expect("ask");
        let mut rules = Vec::new();
        for e in entries.split(',').filter(|e| !e.is_empty()) {
            if let Some(kind) = e.strip_prefix("@always") {
                let grant_cwd = if kind == "-other-cwd" {
                    PathBuf::from("/elsewhere")
                } else {
                    cwd.to_path_buf()
                };
                let sctx = ShellContext {
                    home: self.home.clone(),
                    path: PATH.into(),
                    cwd: cwd.to_path_buf(),
                    set_at_start: None,
                };
                let _facts = sanctum_guard::host_facts::scope();
                for seg in analyse(command, &sctx).segments {
                    let argv: Vec<String> =
                        seg.argv.iter().map(|w| w.display().to_string()).collect();
                    let path = seg.real_path().expect("resolved");
                    rules.push(Rule {
                        pattern: path.to_string_lossy().into_owned(),
                        arg_pattern: Some(cwd_argv_pattern(&grant_cwd.to_string_lossy(), &argv)),
                        allow_always: true,
                    });
                }
            } else {
                rules.push(Rule {
                    pattern: e.to_string(),
                    arg_pattern: None,
                    allow_always: false,
                });
            }
        }
        ctx.allowlist = CompiledAllowlist::compile(&rules, &self.home);
        ctx
    }
}

fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .expect("json")
        .as_str()
        .expect("string")
        .to_string()
}

fn run_case(w: &AgentHome, case: &Case) -> (Verdict, String) {
    let command = w.subst(&case.command);
    let cwd = w.cwd(&case.cwd);
    let ctx = w.context(&command, &cwd, &case.openclaw);
    (
        decide(&w.policy, &ctx, &shell_request("t", &command, &cwd)),
        command,
    )
}

#[test]
fn every_case_of_the_table() {
    let w = world();
    let cases = cases();
    assert!(cases.len() >= 220, "only {} cases", cases.len());
    let mut failures = Vec::new();
    for case in &cases {
        let (v, command) = run_case(&w, case);
        let got = (kebab(&v.kind), kebab(&v.category));
        if got != (case.verdict.clone(), case.category.clone()) {
            failures.push(format!(
                "line {}: {:?} (cwd {}, openclaw {}): want {} {}, got {} {} — {:?}",
                case.line,
                command,
                case.cwd,
                case.openclaw,
                case.verdict,
                case.category,
                got.0,
                got.1,
                v.reasons.iter().map(|r| &r.message).collect::<Vec<_>>()
            ));
        }
        // Invariants of every verdict.
        assert!(!v.reasons.is_empty(), "line {}: no reasons", case.line);
        assert_eq!(
            v.kind == VerdictKind::Ask,
            !v.offered.is_empty(),
            "line {}: offered decisions only for ask",
            case.line
        );
    }
    assert!(
        failures.is_empty(),
        "{} of {} cases failed:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}

#[test]
fn offered_decisions_follow_persistence_and_openclaw() {
    let w = world();
    let ask = |cmd: &str, spec: &str, allowed: Option<Vec<DecisionKind>>| {
        let ctx = w.context(cmd, &w.ws, spec);
        let mut req = shell_request("t", cmd, &w.ws);
        req.openclaw.allowed_decisions = allowed;
        decide(&w.policy, &ctx, &req)
    };
    use DecisionKind::*;
    assert_eq!(
        ask("touch x", "-", None).offered,
        vec![AllowOnce, AllowAlways, Deny]
    );
    // A write outside the workspace is a write, not an outside read: still persistable.
    assert_eq!(
        ask("touch ~/made-by-test", "-", None).offered,
        vec![AllowOnce, AllowAlways, Deny]
    );
    assert_eq!(ask("node -e 1", "-", None).offered, vec![AllowOnce, Deny]);
    assert_eq!(ask("kill 1", "-", None).offered, vec![AllowOnce, Deny]);
    assert_eq!(ask("$X", "-", None).offered, vec![AllowOnce, Deny]);
    assert_eq!(
        ask("touch x", "full/always", None).offered,
        vec![AllowOnce, Deny]
    );
    assert_eq!(
        ask("touch x", "-", Some(vec![AllowOnce, Deny])).offered,
        vec![AllowOnce, Deny]
    );
    let v = ask("touch x", "-", Some(vec![Deny]));
    assert_eq!(v.kind, VerdictKind::Deny);
    assert_eq!(v.reasons[0].code, "no-allow-decision");
    // The request's own security can only tighten the context's.
    let ctx = w.context("ls", &w.ws, "-");
    let mut req = shell_request("t", "ls", &w.ws);
    req.openclaw.security = Some("deny".into());
    assert_eq!(decide(&w.policy, &ctx, &req).kind, VerdictKind::Deny);
    req.openclaw.security = Some("full".into());
    req.openclaw.ask = Some("always".into());
    // ask=always says when OpenClaw consults the guard; the table decides who answers.
    assert_eq!(decide(&w.policy, &ctx, &req).kind, VerdictKind::Allow);
    req.action = shell_request("t", "touch x", &w.ws).action;
    assert_eq!(decide(&w.policy, &ctx, &req).kind, VerdictKind::Ask);
    // The operator's switch: a person answers every command, reads included.
    let everyone =
        sanctum_guard::policy::file::parse("version = 1\nask_every_command = true\n", "test")
            .expect("policy")
            .with_agent_home(&w.home)
            .expect("home");
    let v = decide(&everyone, &ctx, &shell_request("t", "ls", &w.ws));
    assert_eq!(v.kind, VerdictKind::Ask);
    assert_eq!(v.reasons[0].code, "policy-ask-every-command");
    let v = decide(
        &everyone,
        &ctx,
        &shell_request("t", "cat ~/.ssh/id_rsa", &w.ws),
    );
    assert_eq!(v.kind, VerdictKind::Deny, "blocked stays blocked");
    // Profiles follow the deciding category.
    assert_eq!(
        ask("ls", "-", None).profile.as_deref(),
        Some("autonomous-read")
    );
    assert_eq!(
        ask("touch x", "-", None).profile.as_deref(),
        Some("workspace-write")
    );
}

#[test]
fn segments_carry_reasons_and_resolved_paths() {
    let w = world();
    let v = decide(
        &w.policy,
        &w.context("ls; rm -rf ~", &w.ws, "-"),
        &shell_request("t", "ls; rm -rf ~", &w.ws),
    );
    assert_eq!(v.segments.len(), 2);
    assert_eq!(v.segments[0].resolved_path.as_deref(), Some("/usr/bin/ls"));
    assert_eq!(v.segments[0].verdict, VerdictKind::Allow);
    assert_eq!(v.segments[1].verdict, VerdictKind::Deny);
    assert!(v.reasons.iter().any(|r| r.code == "destructive-delete"));
}

// ---- the real binary ----

fn bin() -> Command {
    let mut cmd = Command::new(support::process::guard_bin());
    cmd.env("PATH", PATH);
    cmd
}

#[test]
fn cli_explain_matches_decide_with_exit_codes_and_json() {
    let w = world();
    let all = cases();
    let sample: Vec<&Case> = all
        .iter()
        .filter(|c| c.openclaw == "-" && c.cwd == "ws")
        .step_by(9)
        .collect();
    assert!(sample.len() >= 20);
    for case in sample {
        let (want, command) = run_case(&w, case);
        let out = bin()
            .env("HOME", &w.home)
            .args(["policy", "explain", "--json", "--cwd"])
            .arg(&w.ws)
            .arg("--")
            .arg(&command)
            .output()
            .expect("run sanctum-guard");
        let code = out.status.code().expect("exit code");
        let want_code = match want.kind {
            VerdictKind::Allow => 0,
            VerdictKind::Ask => 10,
            VerdictKind::Deny => 20,
        };
        assert_eq!(code, want_code, "line {}: {command:?}", case.line);
        let json: serde_json::Value = serde_json::from_slice(&out.stdout).expect("one JSON object");
        assert_eq!(json["verdict"], kebab(&want.kind), "line {}", case.line);
        assert_eq!(
            json["category"],
            kebab(&want.category),
            "line {}",
            case.line
        );
        assert!(json["reasons"].as_array().is_some_and(|r| !r.is_empty()));
        let segs = json["segments"].as_array().expect("segments");
        assert_eq!(segs.len(), want.segments.len(), "line {}", case.line);
        for s in segs {
            assert!(s["category"].is_string() && s["verdict"].is_string() && s["argv"].is_array());
        }
    }
}

#[test]
fn cli_explain_joins_words_and_prints_reasons() {
    let w = world();
    let out = bin()
        .env("HOME", &w.home)
        .args(["policy", "explain", "--cwd"])
        .arg(&w.ws)
        .args(["--", "ls;", "rm", "-rf", "~"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(20));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("verdict:  deny"), "{text}");
    assert!(text.contains("category: destructive-delete"), "{text}");
    assert!(text.contains("[destructive-delete]"), "{text}");
    assert!(text.contains("segment 2: rm -rf"), "{text}");
    // Missing command: usage error.
    let out = bin().args(["policy", "explain"]).output().expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn cli_policy_check_and_policy_errors() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.toml");
    std::fs::write(
        &good,
        "version = 1\n[categories.read]\nstatus = \"gated\"\n",
    )
    .expect("write");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "version = 1\n\n[categories.read]\nstatuz = \"gated\"\n",
    )
    .expect("write");
    let out = bin()
        .args(["policy", "check"])
        .arg(&good)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout).starts_with("OK"));
    let out = bin().args(["policy", "check"]).output().expect("run");
    assert_eq!(out.status.code(), Some(0), "embedded default");
    let out = bin()
        .args(["policy", "check"])
        .arg(&bad)
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains(":4:"), "line:col in {err}");
    // The gated read policy applies to explain; a broken one is exit 2.
    let out = bin()
        .args(["policy", "explain", "--policy"])
        .arg(&good)
        .args(["--", "cat", "a.txt"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(10));
    let out = bin()
        .args(["policy", "explain", "--policy"])
        .arg(&bad)
        .args(["--", "ls"])
        .output()
        .expect("run");
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn non_exec_actions_sanctum_37_42_43() {
    let w = world();
    let ctx = w.context("", &w.ws, "-");
    let run = |action: Action| {
        let mut req = shell_request("t", "", &w.ws);
        req.action = action;
        decide(&w.policy, &ctx, &req)
    };
    // 37: fs.writeFile("pi.py") is a pending write with its digest. Allow always is not
    // offered: its grants are OpenClaw allowlist entries for commands, so none could cover a
    // tool's write and the same write would keep asking.
    let v = run(Action::FileWrite {
        path: "pi.py".into(),
        content_sha256: Some("ab".repeat(32)),
    });
    assert_eq!(
        (v.kind, kebab(&v.category).as_str()),
        (VerdictKind::Ask, "write")
    );
    assert_eq!(v.offered, vec![DecisionKind::AllowOnce, DecisionKind::Deny]);
    // 42: process.exit() is gated, never persisted.
    let v = run(Action::ProcessExit { code: Some(0) });
    assert_eq!((v.kind, v.offered.len()), (VerdictKind::Ask, 2));
    // 43: skill install is blocked.
    assert_eq!(
        run(Action::SkillInstall { name: "x".into() }).kind,
        VerdictKind::Deny
    );
    // Browser: screenshot and launch blocked, navigation autonomous.
    let browse = |a: &str| {
        run(Action::Browser {
            action: a.into(),
            url: None,
        })
        .kind
    };
    assert_eq!(browse("screenshot"), VerdictKind::Deny);
    assert_eq!(browse("launch"), VerdictKind::Deny);
    assert_eq!(browse("goto"), VerdictKind::Allow);
    // Reads of sensitive files are blocked whatever the tool.
    let v = run(Action::FileRead {
        path: w.home.join(".ssh/id_rsa"),
    });
    assert_eq!(
        (v.kind, kebab(&v.category).as_str()),
        (VerdictKind::Deny, "sensitive-path")
    );
    let v = run(Action::Http {
        method: "POST".into(),
        url: "https://e.com".into(),
    });
    assert_eq!(
        (v.kind, kebab(&v.category).as_str()),
        (VerdictKind::Ask, "http-write")
    );
}

/// A name the table knows (`ls`, `cat`) found on PATH outside the system directories is the
/// agent's own program: at least run-code, never autonomous. Blocked names stay blocked.
#[test]
fn known_names_outside_system_dirs_are_code() {
    use std::os::unix::fs::PermissionsExt;
    let w = world();
    let bin = tempfile::tempdir().unwrap();
    for name in ["ls", "cat", "sudo"] {
        let p = bin.path().join(name);
        std::fs::write(&p, "#!/bin/sh\necho pwned\n").unwrap();
        std::fs::set_permissions(&p, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let path = format!("{}:{PATH}", bin.path().display());
    let ctx = DecideContext::standalone(&w.home, &path, &w.ws);
    for text in ["ls -la", "cat a.txt", "ls | wc -l"] {
        let v = decide(&w.policy, &ctx, &shell_request("t", text, &w.ws));
        assert_eq!(v.kind, VerdictKind::Ask, "{text}: {v:?}");
        assert!(
            v.reasons.iter().any(|r| r.code == "untrusted-location"),
            "{text}: {:?}",
            v.reasons
        );
    }
    let v = decide(&w.policy, &ctx, &shell_request("t", "sudo id", &w.ws));
    assert_eq!(v.kind, VerdictKind::Deny, "{v:?}");
    // The same names from the system directories are autonomous.
    let sys = DecideContext::standalone(&w.home, PATH, &w.ws);
    let v = decide(&w.policy, &sys, &shell_request("t", "ls -la", &w.ws));
    assert_eq!(v.kind, VerdictKind::Allow, "{v:?}");
}

/// The default workspace is `~/.openclaw/workspace`, inside OpenClaw's state dir: a write in
/// it is a workspace write (allow-always offered, the workspace-write profile), a read in it
/// runs by itself, while `openclaw.json` next to it stays OpenClaw's config: a write to it is
/// never a workspace write, and reading it is refused.
#[test]
fn the_default_workspace_is_a_workspace_not_openclaw_config() {
    let home = tempfile::tempdir().expect("tempdir");
    let home = home.path().to_path_buf();
    let ws = home.join(".openclaw/workspace");
    std::fs::create_dir_all(ws.join("src")).expect("mkdir");
    std::fs::write(ws.join("a.txt"), "a").expect("write");
    std::fs::write(home.join(".openclaw/openclaw.json"), "{}").expect("write");
    let policy = sanctum_guard::policy::file::embedded_default()
        .with_agent_home(&home)
        .expect("policy");
    let run = |cmd: &str| {
        let mut ctx = DecideContext::standalone(&home, support::policy::PATH, &ws);
        ctx.workspace = Some(ws.clone());
        decide(&policy, &ctx, &shell_request("t", cmd, &ws))
    };
    use DecisionKind::*;
    for cmd in [
        "touch x",
        "echo hi > notes.md",
        "mkdir -p src/new",
        "touch src/y",
    ] {
        let v = run(cmd);
        assert_eq!(v.kind, VerdictKind::Ask, "{cmd}: {:?}", v.reasons);
        assert_eq!(v.category, Category::Write, "{cmd}: {:?}", v.reasons);
        // A redirection's target is no part of a grant (argv and cwd), so a grant could never
        // cover it: once or deny only.
        let offered = if cmd.contains('>') {
            vec![AllowOnce, Deny]
        } else {
            vec![AllowOnce, AllowAlways, Deny]
        };
        assert_eq!(v.offered, offered, "{cmd}");
        assert_eq!(v.profile.as_deref(), Some("workspace-write"), "{cmd}");
    }
    assert_eq!(run("cat a.txt").kind, VerdictKind::Allow);
    for cmd in [
        "echo '{}' > ../openclaw.json",
        "touch ~/.openclaw/openclaw.json",
        "touch ~/.openclaw/x.json",
        "touch ../settings.json",
    ] {
        let v = run(cmd);
        assert!(
            v.reasons.iter().any(|r| matches!(
                r.code.as_ref(),
                "config-change" | "approvals-off" | "sensitive-path"
            )),
            "{cmd}: {:?}",
            v.reasons
        );
        assert!(!v.offered.contains(&AllowAlways), "{cmd}: {:?}", v.offered);
        assert_ne!(v.kind, VerdictKind::Allow, "{cmd}");
    }
    assert_eq!(run("cat ../openclaw.json").kind, VerdictKind::Deny);
    assert_eq!(run("cat ~/.openclaw/openclaw.json").kind, VerdictKind::Deny);
}
