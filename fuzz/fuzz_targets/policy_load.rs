//! Fuzz target: the policy loader on arbitrary UTF-8 must return a policy or an error with a
//! position, never panic; a policy it accepts must answer every accessor without panicking.
//! The same text, taken as a path, a shell glob and a sensitive-path rule, must not panic
//! the path functions the loader builds on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sanctum_guard::policy::file::{parse, PolicyError, ALL_CATEGORIES};
use sanctum_guard::policy::paths::{normalize, validate_rule, PathContext, SensitivePaths};
use std::path::Path;
use std::sync::OnceLock;

/// The built-in list, compiled once (it does not depend on the input).
fn builtin() -> &'static SensitivePaths {
    static BUILTIN: OnceLock<SensitivePaths> = OnceLock::new();
    BUILTIN.get_or_init(|| {
        SensitivePaths::new(Path::new("/home/node"), &[]).expect("built-ins compile")
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = PathContext {
        home: "/home/node".into(),
        cwd: "/workspace".into(),
    };
    let builtin = builtin();
    let _ = normalize(text, &ctx);
    let _ = builtin.glob_may_match(text, &ctx);
    let _ = builtin.glob_may_contain(text, &ctx);
    let _ = builtin.contains_sensitive(&normalize(text, &ctx));
    let _ = validate_rule(text, &ctx.home);
    match parse(text, "fuzz.toml") {
        Ok(policy) => {
            for c in ALL_CATEGORIES {
                let _ = (policy.status(c), policy.profile(c), policy.persist(c));
            }
            let args = ["test".to_string()];
            let _ = policy.command_override("make", &args);
            let _ = policy.command_override("/usr/bin/make", &args);
            let sensitive = policy.sensitive();
            let ctx = PathContext {
                home: policy
                    .agent_home()
                    .unwrap_or(Path::new("/home/node"))
                    .to_path_buf(),
                cwd: "/".into(),
            };
            let _ = sensitive.matches(Path::new("/etc/shadow"));
            let _ = sensitive.glob_may_match("~/.ss*/id_*", &ctx);
            let _ = sensitive.contains_sensitive(Path::new("/"));
        }
        Err(e) => {
            if let PolicyError::Syntax { line, column, .. }
            | PolicyError::Invalid { line, column, .. } = e
            {
                assert!(line >= 1 && column >= 1, "position must be 1-based: {e}");
                assert!(
                    line <= text.lines().count().max(1) + 1,
                    "line past the end: {e}"
                );
            }
        }
    }
});
