//! Fuzz target: the policy loader on arbitrary UTF-8 must return a policy or an error with a
//! position, never panic; a policy it accepts must answer every accessor without panicking.
//! The same text, taken as a path, a shell glob and a sensitive-path rule, must not panic
//! the path functions the loader builds on.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sanctum_guard::policy::file::{parse, PolicyError, ALL_CATEGORIES};
use sanctum_guard::policy::paths::{normalize, PathContext, SensitivePaths};
use std::path::Path;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = PathContext {
        home: "/home/node".into(),
        cwd: "/workspace".into(),
    };
    let builtin = SensitivePaths::new(&ctx.home, &[]).expect("built-ins compile");
    let _ = normalize(text, &ctx);
    let _ = builtin.glob_may_match(text, &ctx);
    let _ = builtin.glob_may_contain(text, &ctx);
    let _ = builtin.contains_sensitive(&normalize(text, &ctx));
    if let Ok(extra) = SensitivePaths::new(&ctx.home, &[text.to_string()]) {
        let _ = extra.matches(&normalize(text, &ctx));
    }
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
                home: policy.agent_home().to_path_buf(),
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
