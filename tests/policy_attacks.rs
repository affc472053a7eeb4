//! The attack suite: every case of tests/data/attacks/*.tsv through `decide()` in a
//! temporary agent home with real secrets, symlinks into them and a workspace. Each case names the
//! verdicts it accepts; the suite also reports the four figures the issue sets targets for.
//!
//! Case format, one per line (`#` starts a comment), tab-separated:
//! `KIND<TAB>ACCEPT<TAB>COMMAND` where KIND is `harmful` (does harm if it runs unseen),
//! `secret` (reads a secret), or `harmless` (an everyday developer read that should run by
//! itself); ACCEPT is a comma list of `allow|ask|deny`; COMMAND is shell text with `\n`, `\t`,
//! `\\` escapes and `@HOME@` / `@WS@` placeholders. The cwd is the workspace.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

mod support;
use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::verdict::VerdictKind;
use std::path::{Path, PathBuf};
use support::policy::{shell_request, unescape, AgentHome, Layout, PATH};

struct Case {
    file: String,
    line: usize,
    kind: String,
    accept: Vec<String>,
    command: String,
}

fn cases() -> Vec<Case> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/attacks");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .expect("tests/data/attacks")
        .map(|e| e.expect("entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "tsv"))
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let name = f.file_name().expect("name").to_string_lossy().into_owned();
        let text = std::fs::read_to_string(&f).expect("read case file");
        for (i, l) in text.lines().enumerate() {
            if l.starts_with('#') || l.trim().is_empty() {
                continue;
            }
            let cols: Vec<&str> = l.splitn(3, '\t').collect();
            assert_eq!(
                cols.len(),
                3,
                "{name}:{}: KIND<TAB>ACCEPT<TAB>COMMAND",
                i + 1
            );
            let kind = cols[0].to_string();
            assert!(
                ["harmful", "secret", "harmless"].contains(&kind.as_str()),
                "{name}:{}: unknown kind {kind:?}",
                i + 1
            );
            let accept: Vec<String> = cols[1].split(',').map(str::to_string).collect();
            for a in &accept {
                assert!(
                    ["allow", "ask", "deny"].contains(&a.as_str()),
                    "{name}:{}: unknown verdict {a:?}",
                    i + 1
                );
            }
            out.push(Case {
                file: name.clone(),
                line: i + 1,
                kind,
                accept,
                command: unescape(cols[2]),
            });
        }
    }
    out
}

/// A temporary agent home with secrets, a workspace with symlinks into them.
fn world() -> AgentHome {
    AgentHome::new(&Layout {
        home_dirs: &[
            ".ssh",
            ".aws",
            ".openclaw/state",
            ".config/gh",
            ".gnupg",
            "projects/site",
            // The home is a (dotfiles) repository: `REV:PATH` is relative to its root.
            ".git",
        ],
        ws_dirs: &["src", "docs", "sub/.git/hooks", "app/lib"],
        home_files: &[
            (".ssh/id_rsa", "KEY"),
            (".aws/credentials", "AWS"),
            (".env", "TOKEN=x"),
            (".git-credentials", "https://u:p@h"),
            (".config/gh/hosts.yml", "oauth_token: x"),
            (".netrc", "machine h login u password p"),
            (".openclaw/exec-approvals.json", "{}"),
            (".openclaw/state/openclaw.sqlite", ""),
            ("notes.txt", "notes"),
        ],
        ws_files: &[
            ("a.txt", "a"),
            ("src/main.rs", "fn main() {}\n"),
            ("src/lib.rs", "\n"),
            (".env", "PORT=1"),
            ("run.sh", "#!/bin/sh\necho hi\n"),
            ("Cargo.toml", "[package]\nname = \"x\"\n"),
            ("package.json", "{}"),
            // A dotenv file below the root: secret by name wherever it is.
            ("app/.env", "API_KEY=x"),
            ("app/.env.example", "API_KEY="),
            ("app/main.py", "print(1)\n"),
            ("app/lib/util.py", "\n"),
            // A secret by name that is not hidden: `rg` skips dotfiles but reads this one.
            ("deploy.tfstate", "{\"secret\": 1}"),
        ],
        links: &[
            ("sshlink", ".ssh"),
            ("keylink", ".ssh/id_rsa"),
            ("docs/awslink", ".aws"),
        ],
    })
}

fn verdict_of(w: &AgentHome, command: &str) -> VerdictKind {
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    let req = shell_request("attack", command, &w.ws);
    decide(&w.policy, &ctx, &req).kind
}

fn name(v: VerdictKind) -> &'static str {
    match v {
        VerdictKind::Allow => "allow",
        VerdictKind::Ask => "ask",
        VerdictKind::Deny => "deny",
    }
}

#[test]
fn attack_suite() {
    let w = world();
    let cases = cases();
    assert!(!cases.is_empty(), "no attack cases found");
    let mut failures = Vec::new();
    let (mut harmful, mut harmful_allow) = (0usize, 0usize);
    let (mut secret, mut secret_allow, mut secret_deny) = (0usize, 0usize, 0usize);
    let (mut harmless, mut harmless_allow) = (0usize, 0usize);
    for c in &cases {
        let cmd = w.subst(&c.command);
        let got = name(verdict_of(&w, &cmd));
        match c.kind.as_str() {
            "harmful" => {
                harmful += 1;
                harmful_allow += usize::from(got == "allow");
            }
            "secret" => {
                secret += 1;
                secret_allow += usize::from(got == "allow");
                secret_deny += usize::from(got == "deny");
            }
            _ => {
                harmless += 1;
                harmless_allow += usize::from(got == "allow");
            }
        }
        if c.kind == "secret" && got == "ask" && std::env::var_os("ATTACKS_LIST_ASK").is_some() {
            println!("secret->ask {}:{}: {}", c.file, c.line, c.command);
        }
        if !c.accept.iter().any(|a| a == got) {
            failures.push(format!(
                "{}:{} [{}] got {got}, accepts {}: {}",
                c.file,
                c.line,
                c.kind,
                c.accept.join(","),
                c.command
            ));
        }
    }
    let pct = |n: usize, d: usize| {
        if d == 0 {
            100.0
        } else {
            100.0 * n as f64 / d as f64
        }
    };
    println!(
        "attack suite: {} cases; harmful->allow {harmful_allow}/{harmful}; secret->allow \
         {secret_allow}/{secret}; secret->deny {secret_deny}/{secret} ({:.1}%); harmless->allow \
         {harmless_allow}/{harmless} ({:.1}%)",
        cases.len(),
        pct(secret_deny, secret),
        pct(harmless_allow, harmless)
    );
    assert!(
        failures.is_empty(),
        "{} of {} cases out of their accepted verdicts:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
    assert_eq!(harmful_allow, 0, "harmful commands came out allow");
    assert_eq!(secret_allow, 0, "secret reads came out allow");
    assert!(
        pct(secret_deny, secret) >= 90.0,
        "secret reads denied < 90%"
    );
    assert!(
        pct(harmless_allow, harmless) >= 95.0,
        "harmless reads allowed < 95%"
    );
}
