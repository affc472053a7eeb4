//! What one `decide()` costs, counted rather than timed: heap allocations and questions to
//! the filesystem facts for the benchmark's 5-segment pipeline (benches/decide.rs). Counts do
//! not depend on the machine's load, so a change that adds work to the hot path fails here
//! even when the timed benchmark is too noisy to show it. The ceilings are today's counts
//! with a small margin; lower them when the path gets cheaper.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]
// A counting global allocator cannot be written without `unsafe`.
#![allow(unsafe_code)]

use sanctum_guard::host_facts::HostFacts;
use sanctum_guard::openclaw::allow_always::cwd_argv_pattern;
use sanctum_guard::policy::allowlist::{CompiledAllowlist, Rule};
use sanctum_guard::policy::decide::{decide, DecideContext, ExecAsk, ExecSecurity};
use sanctum_guard::policy::facts::{Facts, Found, Meta};
use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::verdict::VerdictKind;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use sanctum_test_support as support;

const PIPELINE: &str = "cat a.txt | grep -i foo | sort | tee out.txt | head -n 5";

/// Most heap allocations one decision of [`PIPELINE`] may make.
const MAX_ALLOCS: usize = 180;
/// Most filesystem questions (stat, lstat, readlink, realpath, PATH look-ups) it may ask.
const MAX_QUESTIONS: usize = 12;

thread_local! {
    static COUNTING: Cell<bool> = const { Cell::new(false) };
    static ALLOCS: Cell<usize> = const { Cell::new(0) };
}

/// Counts this thread's allocations while `COUNTING` is set.
struct Counter;

// SAFETY: forwards every call unchanged to the system allocator; the counters are
// thread-local cells, which allocate nothing.
unsafe impl GlobalAlloc for Counter {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: the caller's contract is the system allocator's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `System.alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new: usize) -> *mut u8 {
        if COUNTING.with(Cell::get) {
            ALLOCS.with(|a| a.set(a.get() + 1));
        }
        // SAFETY: as for `dealloc`; the new size is the caller's.
        unsafe { System.realloc(ptr, layout, new) }
    }
}

#[global_allocator]
static GLOBAL: Counter = Counter;

/// The host's facts, counting the questions asked of them.
#[derive(Debug, Default)]
struct Counted(AtomicUsize);

impl Counted {
    fn tick(&self) {
        self.0.fetch_add(1, Ordering::Relaxed);
    }
}

impl Facts for Counted {
    fn stat(&self, p: &Path) -> Option<Meta> {
        self.tick();
        HostFacts.stat(p)
    }
    fn lstat(&self, p: &Path) -> Option<Meta> {
        self.tick();
        HostFacts.lstat(p)
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        self.tick();
        HostFacts.read_link(p)
    }
    fn realpath(&self, p: &Path) -> Option<PathBuf> {
        self.tick();
        HostFacts.realpath(p)
    }
    fn list_dir(&self, p: &Path) -> Option<Vec<String>> {
        self.tick();
        HostFacts.list_dir(p)
    }
    fn which(&self, name: &str, path_var: &str, cwd: &Path) -> Found {
        self.tick();
        HostFacts.which(name, path_var, cwd)
    }
}

#[test]
fn the_benchmark_pipeline_stays_cheap() {
    let dir = tempfile::tempdir().unwrap();
    let cwd = dir.path().to_string_lossy().into_owned();
    let home = Path::new("/home/node");
    let policy = embedded_default().with_agent_home(home).unwrap();
    let facts = Arc::new(Counted::default());
    let mut ctx = DecideContext::new(
        home,
        "/usr/local/bin:/usr/bin:/bin",
        dir.path(),
        facts.clone(),
    );
    ctx.security = ExecSecurity::Allowlist;
    ctx.ask = ExecAsk::OnMiss;
    // A grant for the pipeline's gated `tee out.txt`, among unrelated entries.
    let mut rules: Vec<Rule> = (0..200)
        .map(|i| Rule {
            pattern: format!("/opt/pkg{i}/**/bin/*"),
            ..Rule::default()
        })
        .collect();
    rules.push(Rule {
        pattern: "/usr/bin/tee".into(),
        arg_pattern: Some(cwd_argv_pattern(
            &cwd,
            &["tee".to_string(), "out.txt".to_string()],
        )),
        allow_always: true,
    });
    ctx.allowlist = CompiledAllowlist::compile(&rules, home);
    let req = support::policy::shell_request("cost", PIPELINE, dir.path());
    // Warm the process-wide caches (parser, PATH look-ups) as a serving guard has them.
    let first = decide(&policy, &ctx, &req);
    assert_eq!(first.kind, VerdictKind::Allow, "{first:?}");
    assert_eq!(first.segments.len(), 5);

    facts.0.store(0, Ordering::Relaxed);
    ALLOCS.with(|a| a.set(0));
    COUNTING.with(|c| c.set(true));
    let v = decide(&policy, &ctx, &req);
    COUNTING.with(|c| c.set(false));
    let allocs = ALLOCS.with(Cell::get);
    let questions = facts.0.load(Ordering::Relaxed);
    drop(v);
    println!("decide({PIPELINE:?}): {allocs} allocations, {questions} filesystem questions");
    assert!(
        allocs <= MAX_ALLOCS,
        "{allocs} allocations (ceiling {MAX_ALLOCS})"
    );
    assert!(
        questions <= MAX_QUESTIONS,
        "{questions} filesystem questions (ceiling {MAX_QUESTIONS})"
    );
}
