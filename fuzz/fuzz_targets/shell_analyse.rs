//! Fuzz target: the shell analyser and decide() on arbitrary UTF-8 never panic, finish in
//! bounded time, and never allow text the analyser could not understand.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sanctum_guard::policy::decide::{decide, DecideContext};
use sanctum_guard::policy::explain::cli_request;
use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::shell::{analyse, ShellContext, MAX_SEGMENTS};
use sanctum_guard::policy::verdict::VerdictKind;
use std::path::Path;
use std::time::{Duration, Instant};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let ctx = ShellContext {
        home: "/home/node".into(),
        path: "/usr/local/bin:/usr/bin:/bin".into(),
        cwd: "/workspace".into(),
    };
    let start = Instant::now();
    let analysis = analyse(text, &ctx);
    assert!(analysis.segments.len() <= MAX_SEGMENTS + 1);
    let policy = embedded_default()
        .with_agent_home(Path::new("/home/node"))
        .expect("default policy");
    let dctx = DecideContext::standalone(&ctx.home, &ctx.path, &ctx.cwd);
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
