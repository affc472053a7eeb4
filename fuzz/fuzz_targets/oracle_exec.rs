//! Fuzz target: the execution oracle. Each input is a command; when `decide()` allows it in
//! the oracle's world (a git workspace, a HOME full of marked secrets), it runs for real
//! under the syscall recorder (with bash and with dash), and anything it did that the verdict did not claim (a program,
//! a write, a read, a connection) is a crash naming the command and what was missed.
//! `tests/oracle.rs` runs the same comparison on the corpus and a fixed seed in `tests/run`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use sanctum_guard::policy::verdict::VerdictKind;
use sanctum_guard::sandbox::trace::Recorder;
use std::sync::OnceLock;

// The tests' own world and comparison, compiled in as they are (`oracle` names its siblings
// as `super::policy` and `super::process`).
#[allow(dead_code)]
#[path = "../../tests/support/oracle.rs"]
mod oracle;
#[allow(dead_code)]
#[path = "../../tests/support/policy.rs"]
mod policy;
#[allow(dead_code)]
#[path = "../../tests/support/process.rs"]
mod process;

use oracle::{divergences, recorder, World};

/// Longest command tried: longer texts add parse time, not new behaviour.
const MAX_LEN: usize = 400;

static STATE: OnceLock<(World, Recorder)> = OnceLock::new();

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if text.len() > MAX_LEN || text.contains('\0') {
        return;
    }
    let (w, rec) = STATE.get_or_init(|| (World::new(), recorder()));
    // The case files' placeholders, so their rows work as seeds (no listener: port 9).
    let text = &w.subst(text, 9);
    let verdict = w.decide(text);
    if verdict.kind != VerdictKind::Allow {
        return;
    }
    // Under each shell that may run it: bash, and dash (Debian's /bin/sh, OpenClaw's node).
    for scene in [w.scene(), w.dash_scene()] {
        w.reset_tmp();
        let Ok(r) = rec.run(&scene, text) else {
            return;
        };
        let missed = divergences(w, text, &verdict, &r);
        let shell = scene.shell.display();
        assert!(missed.is_empty(), "allowed {text:?} did more than claimed under {shell}: {missed:#?}");
    }
});
