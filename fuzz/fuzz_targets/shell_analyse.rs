//! Fuzz target: the shell analyser and decide() on arbitrary UTF-8 never panic, finish in
//! bounded time, and never allow text the analyser could not understand.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::explain::cli_request;
use sanctum_guard::policy::facts::{Facts, FakeFs};
use sanctum_guard::policy::fs_memo;
use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::shell::{analyse, ShellContext, MAX_SEGMENTS};
use sanctum_guard::policy::verdict::VerdictKind;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = ShellContext {
        home: "/home/node".into(),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        cwd: "/workspace".into(),
        // As the node host: lower-case variables no text sets are unset (`words::unset`).
        set_at_start: Some(Arc::new(std::collections::BTreeSet::new())),
    };
    // A fake filesystem: the run is deterministic whatever the fuzzing host has.
    let facts: Arc<dyn Facts> = Arc::new(
        FakeFs::new()
            .file("/usr/bin/ls", 0o755)
            .file("/usr/bin/cat", 0o755)
            .file("/usr/bin/git", 0o755)
            .file("/bin/sh", 0o755)
            .file("/home/node/.ssh/id_rsa", 0o600)
            .link("/workspace/k", "/home/node/.ssh")
            .file("/workspace/a.txt", 0o644),
    );
    let start = Instant::now();
    let analysis = {
        let _facts = fs_memo::Scope::enter(facts.clone());
        analyse(text, &ctx)
    };
    assert!(analysis.segments.len() <= MAX_SEGMENTS + 1);
    let policy = embedded_default()
        .with_agent_home(Path::new("/home/node"))
        .expect("default policy");
    let dctx = DecideContext::new(&ctx.home, &ctx.path, &ctx.cwd, facts);
    let req = cli_request(text, Path::new("/workspace"));
    let verdict = decide(&policy, &dctx, &req);
    if analysis.has_problem() {
        assert_ne!(verdict.kind, VerdictKind::Allow, "unanalysable text allowed: {text:?}");
    }
    assert!(!verdict.reasons.is_empty());
    assert!(
        start.elapsed() < Duration::from_secs(5),
        "analysis took {:?} for {} bytes",
        start.elapsed(),
        text.len()
    );
});
