//! The analysis judges text in the dialect of the shell that runs it. Each row is a
//! construct bash and dash read differently: the real `bash -c` and `dash -c` are run on it
//! here (in a scratch directory) and must print different things, so the row proves a real
//! difference; then the analysis of that text run by `/bin/sh` (dash on Debian: OpenClaw's
//! node sends `["/bin/sh","-lc",TEXT]`), and of the bare text (the gateway's `$SHELL -c`,
//! unknown), must not be autonomous. Run by `bash -c` the same text is bash's to read: the
//! dialect check must not be what gates it.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::request::{Action, Source};
use sanctum_guard::policy::verdict::{Verdict, VerdictKind};
use std::path::Path;
use std::process::Command;
use support::policy::{attack_world, shell_request, AgentHome, PATH};

/// (text, what it hides from a bash reading). Every text is harmless to run: the hidden
/// part only writes a file named `HIT` in the scratch directory or prints. Rows whose
/// `what` starts with `value:` change only values, and where the shell is unknown they are
/// not gated (`dialect::Hazard`): a POSIX shell stops at a bash-only `${…}` ("Bad
/// substitution"), finds no program named `declare`, and opens a brace word as written,
/// which the path check reads too (the last test below).
const DIFFERENT: &[(&str, &str)] = &[
    (
        "ls $'\\' ; touch HIT ; #\\''",
        "ANSI-C quoting hides a command from bash's reading",
    ),
    ("echo $\"x\"", "translated string"),
    (
        "[[ a < b ]] && echo yes",
        "[[ is a command and < a redirect in dash",
    ),
    ("echo {a,b}", "value: brace expansion"),
    ("echo x{1..2}", "sequence expansion"),
    ("cat <<< hi", "here-string"),
    ("echo hi &> HIT", "&> is & then > in dash"),
    ("echo hi &>> HIT", "&>> is & then >> in dash"),
    ("echo hi >& HIT", ">&FILE"),
    ("echo hi |& cat", "|& pipes stderr in bash"),
    ("a=(1 2); echo ${a}", "array assignment"),
    ("function f { echo in; }; f", "function keyword"),
    (
        "((1)) && echo yes",
        "arithmetic command is a nested subshell in dash",
    ),
    ("x=abc; echo ${x:0:1}", "value: substring"),
    ("x=abc; echo ${x/a/z}", "value: replacement"),
    ("x=abc; echo ${x^^}", "value: case change"),
    ("x=PATH; echo ${!x}", "value: indirection"),
    ("echo $[1+2]", "old arithmetic"),
    ("cat <(echo hi)", "process substitution"),
    ("echo hi 10>HIT", "two-digit descriptor"),
    (
        "source /dev/null && echo ok",
        "value: source is not a dash builtin",
    ),
    ("declare x=1; echo $x", "value: declare"),
    ("let x=1+1; echo $x", "value: let"),
    (
        "select x in a; do echo $x; break; done </dev/null",
        "select",
    ),
    ("exec {fd}>HIT; echo $fd", "named descriptor"),
];

/// What `shell -c text` prints (stdout, stderr, and whether HIT appeared) in a fresh dir.
fn run(shell: &str, text: &str) -> (String, bool) {
    let dir = tempfile::tempdir().expect("tmp");
    let out = Command::new(shell)
        .arg("-c")
        .arg(text)
        .current_dir(dir.path())
        .env_clear()
        .env("PATH", "/usr/bin:/bin")
        .output()
        .expect("shell");
    let printed = format!(
        "{}|{}|{:?}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr).replace(shell, "SHELL"),
        out.status.code()
    );
    (printed, dir.path().join("HIT").exists())
}

fn judge_argv(w: &AgentHome, argv: &[&str], source: Source) -> Verdict {
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    let mut req = shell_request("dialect", "", &w.ws);
    req.who.source = source;
    if let Action::Exec(e) = &mut req.action {
        e.command = None;
        e.argv = argv.iter().map(|s| s.to_string()).collect();
    }
    decide(&w.policy, &ctx, &req)
}

fn judge_text(w: &AgentHome, text: &str) -> Verdict {
    let mut ctx = DecideContext::standalone(&w.home, PATH, &w.ws);
    ctx.workspace = Some(w.ws.clone());
    decide(&w.policy, &ctx, &shell_request("dialect", text, &w.ws))
}

fn dialect_reason(v: &Verdict) -> bool {
    let seg = v.segments.iter().flat_map(|s| s.reasons.iter());
    v.reasons
        .iter()
        .chain(seg)
        .any(|r| r.message.contains("is bash syntax"))
}

fn sh_is_dash() -> bool {
    std::fs::canonicalize("/bin/sh").is_ok_and(|p| p.ends_with("dash"))
}

#[test]
fn constructs_bash_and_dash_read_differently_are_never_autonomous_under_dash() {
    assert!(sh_is_dash(), "this suite needs Debian's /bin/sh -> dash");
    let _facts = sanctum_guard::host_facts::scope();
    let w = attack_world();
    let mut failures = Vec::new();
    for (text, what) in DIFFERENT {
        let (bash, bash_hit) = run("bash", text);
        let (dash, dash_hit) = run("dash", text);
        if bash == dash && bash_hit == dash_hit {
            failures.push(format!("{text:?} ({what}): bash and dash agree: {bash}"));
            continue;
        }
        for source in [Source::Node, Source::SocketExec] {
            for argv in [
                ["/bin/sh", "-lc", text],
                ["sh", "-c", text],
                ["dash", "-c", text],
            ] {
                let v = judge_argv(&w, &argv, source);
                if v.kind == VerdictKind::Allow || !dialect_reason(&v) {
                    failures.push(format!("{argv:?} {source:?} ({what}): {:?} {v:?}", v.kind));
                }
            }
        }
        let v = judge_text(&w, text);
        if v.kind == VerdictKind::Allow && !what.starts_with("value:") {
            failures.push(format!("text {text:?} ({what}): allowed"));
        }
        let v = judge_argv(&w, &["bash", "-c", text], Source::Node);
        if dialect_reason(&v) {
            failures.push(format!(
                "bash -c {text:?} ({what}): gated as a dialect: {v:?}"
            ));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

/// The same everyday reads, written the way both shells read alike, stay autonomous when
/// dash runs them.
#[test]
fn portable_reads_stay_autonomous_under_dash() {
    let _facts = sanctum_guard::host_facts::scope();
    let w = attack_world();
    for text in [
        "ls -la",
        "ls src 2>&1 | head -5",
        "cat README.md >&2",
        "x=README.md; wc -l \"${x}\" ${x%.md}.md",
        "[ -f README.md ] && cat README.md",
        "for f in src/*; do echo \"$f\"; done",
        "echo $((1+2))",
        "grep -n fn src 2>/dev/null || true",
    ] {
        let v = judge_argv(&w, &["/bin/sh", "-lc", text], Source::Node);
        assert!(!dialect_reason(&v), "{text}: {v:?}");
    }
    // A shell language the guard does not parse at all is never autonomous.
    if Path::new("/usr/bin/zsh").exists() {
        let v = judge_argv(&w, &["zsh", "-c", "ls"], Source::Node);
        assert_ne!(v.kind, VerdictKind::Allow, "{v:?}");
    }
}

/// A brace word is two names to bash and one to dash: where the shell is not known, the
/// literal name is path-checked too (a link named `{x,y}` to a key is a secret read).
#[test]
fn a_brace_words_literal_name_is_checked_where_the_shell_is_unknown() {
    let _facts = sanctum_guard::host_facts::scope();
    let w = attack_world();
    std::os::unix::fs::symlink(w.home.join(".ssh/id_rsa"), w.ws.join("{x,y}")).expect("ln");
    let v = judge_text(&w, "cat {x,y}");
    assert_eq!(v.kind, VerdictKind::Deny, "{v:?}");
    // Without such a file, the alternatives alone decide.
    let v = judge_text(&w, "cat src/{main,lib}.rs");
    assert!(!dialect_reason(&v), "{v:?}");
}
