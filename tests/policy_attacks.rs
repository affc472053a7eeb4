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
use sanctum_guard::policy::verdict::VerdictKind;
use support::policy::{attack_cases, attack_world, verdict_of};

fn name(v: VerdictKind) -> &'static str {
    match v {
        VerdictKind::Allow => "allow",
        VerdictKind::Ask => "ask",
        VerdictKind::Deny => "deny",
    }
}

#[test]
fn attack_suite() {
    let w = attack_world();
    let cases = attack_cases();
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
