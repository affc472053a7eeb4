//! Tool calls the Sanctum plugin forwards, judged by the shell's action table: every case of
//! tests/data/tool_cases.tsv through `decide()` in a temporary agent home, next to its shell
//! equivalent, which must get the same verdict and category.
// Test code: a panic is the failure report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::request::{Action, DecisionKind};
use sanctum_guard::policy::tools::ToolCall;
use sanctum_guard::policy::verdict::{Verdict, VerdictKind};
use sanctum_test_support as support;
use std::path::Path;
use support::policy::{shell_request, unescape, AgentHome, Layout, PATH};

fn world() -> AgentHome {
    AgentHome::new(&Layout {
        home_dirs: &[".ssh", ".aws", ".openclaw"],
        ws_dirs: &["src"],
        home_files: &[
            (".ssh/id_rsa", "KEY"),
            (".aws/credentials", "AWS"),
            ("notes.txt", "notes"),
        ],
        ws_files: &[("a.txt", "a"), (".env", "PORT=1")],
        links: &[("sshlink", ".ssh"), ("keylink", ".ssh/id_rsa")],
    })
}

fn kebab<T: serde::Serialize>(v: &T) -> String {
    serde_json::to_value(v)
        .expect("json")
        .as_str()
        .expect("string")
        .to_string()
}

fn context(w: &AgentHome) -> DecideContext {
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    ctx
}

fn decide_tool(w: &AgentHome, call: ToolCall) -> Verdict {
    let mut req = shell_request("t", "", &w.ws);
    req.action = Action::Tool(Box::new(call));
    decide(&w.policy, &context(w), &req)
}

fn decide_shell(w: &AgentHome, command: &str) -> Verdict {
    decide(&w.policy, &context(w), &shell_request("s", command, &w.ws))
}

#[test]
fn every_tool_case_gets_the_verdict_of_its_shell_equivalent() {
    let w = world();
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/tool_cases.tsv"),
    )
    .expect("tool_cases.tsv");
    let mut n = 0;
    let mut failures = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.starts_with('#') || line.trim().is_empty() {
            continue;
        }
        let f: Vec<&str> = line.split('\t').collect();
        assert_eq!(f.len(), 4, "line {}: 4 tab-separated fields", i + 1);
        n += 1;
        let json = w.subst(f[0]);
        let call: ToolCall =
            serde_json::from_str(&json).unwrap_or_else(|e| panic!("line {}: {json}: {e}", i + 1));
        let v = decide_tool(&w, call);
        let got = (kebab(&v.kind), kebab(&v.category));
        let want = (f[2].to_string(), f[3].to_string());
        if got != want {
            failures.push(format!(
                "line {}: {json}: got {got:?}, want {want:?} ({:?})",
                i + 1,
                v.reasons
            ));
        }
        if f[1] != "-" {
            let command = w.subst(&unescape(f[1]));
            let s = decide_shell(&w, &command);
            let shell = (kebab(&s.kind), kebab(&s.category));
            if shell != want {
                failures.push(format!(
                    "line {}: shell `{command}`: got {shell:?}, want {want:?} ({:?})",
                    i + 1,
                    s.reasons
                ));
            }
        }
    }
    assert!(n >= 50, "only {n} cases");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// A tool call is answered once: no allow-always (a grant is an exec allowlist entry).
#[test]
fn a_gated_tool_call_offers_allow_once_and_deny_only() {
    let w = world();
    let v = decide_tool(
        &w,
        ToolCall {
            name: "write".into(),
            paths: vec!["b.txt".into()],
            ..ToolCall::default()
        },
    );
    assert_eq!(v.kind, VerdictKind::Ask);
    assert_eq!(v.offered, vec![DecisionKind::AllowOnce, DecisionKind::Deny]);
}
