//! decide() for a 5-segment pipeline against 10,000 allowlist patterns (literal paths,
//! globs, bare names and allow-always hashes). Target: median <= 20 µs.
// Test code: a panic is the failure report, and tests may read their environment.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use criterion::{criterion_group, criterion_main, Criterion};
use sanctum_guard::openclaw::allow_always::cwd_argv_pattern;
use sanctum_guard::policy::allowlist::{CompiledAllowlist, Rule};
use sanctum_guard::policy::decide::{decide, DecideContext, ExecAsk, ExecSecurity};
use sanctum_guard::policy::file::embedded_default;
use sanctum_guard::policy::request::{Action, ExecAction, OpenClawAsk, Request, Source, Who};
use sanctum_guard::policy::verdict::VerdictKind;
use std::hint::black_box;
use std::path::Path;

/// The allocator the binary uses (guard/main.rs).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const PIPELINE: &str = "cat a.txt | grep -i foo | sort | tee out.txt | head -n 5";

fn rules(cwd: &str) -> Vec<Rule> {
    let mut rules = Vec::with_capacity(10_001);
    for i in 0..10_000 {
        let rule = match i % 4 {
            0 => Rule {
                pattern: format!("/opt/tools{}/bin/tool{i}", i % 97),
                ..Rule::default()
            },
            1 => Rule {
                pattern: format!("/opt/pkg{i}/**/bin/*"),
                ..Rule::default()
            },
            2 => Rule {
                pattern: format!("~/bin/t{i}*"),
                arg_pattern: Some(format!("^--mode {i}$")),
                allow_always: false,
            },
            _ => Rule {
                pattern: "/usr/bin/tee".into(),
                arg_pattern: Some(cwd_argv_pattern(
                    cwd,
                    &["tee".to_string(), format!("out{i}.txt")],
                )),
                allow_always: true,
            },
        };
        rules.push(rule);
    }
    // The grant that lifts the pipeline's gated `tee out.txt`.
    rules.push(Rule {
        pattern: "/usr/bin/tee".into(),
        arg_pattern: Some(cwd_argv_pattern(
            cwd,
            &["tee".to_string(), "out.txt".to_string()],
        )),
        allow_always: true,
    });
    rules
}

fn bench(c: &mut Criterion) {
    let dir = std::env::temp_dir();
    let cwd = dir.to_string_lossy().into_owned();
    let home = Path::new("/home/node");
    let policy = embedded_default().with_agent_home(home).expect("policy");
    let mut ctx = DecideContext::standalone(home, "/usr/local/bin:/usr/bin:/bin", &dir);
    ctx.security = ExecSecurity::Allowlist;
    ctx.ask = ExecAsk::OnMiss;
    ctx.allowlist = CompiledAllowlist::compile(&rules(&cwd), home);
    let req = Request {
        id: "bench".into(),
        who: Who {
            agent_id: "main".into(),
            session_key: None,
            source: Source::SocketRequest,
        },
        action: Action::Exec(ExecAction {
            command: Some(PIPELINE.into()),
            cwd: Some(dir.clone()),
            ..ExecAction::default()
        }),
        received_at_ms: 0,
        deadline_ms: None,
        openclaw: OpenClawAsk::default(),
    };
    // The bench measures the real path: five segments, the grant lifts `tee`.
    let v = decide(&policy, &ctx, &req);
    assert_eq!(v.segments.len(), 5);
    assert_eq!(v.kind, VerdictKind::Allow, "{v:?}");
    c.bench_function("decide/5-segment pipeline, 10k allowlist", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&ctx), black_box(&req)))
    });
    // As the node host asks: the login start-up files' answer (cached) joins the context.
    let mut node = req.clone();
    node.who.source = Source::Node;
    assert_eq!(decide(&policy, &ctx, &node).kind, VerdictKind::Allow);
    c.bench_function("decide/5-segment pipeline, 10k allowlist, node host", |b| {
        b.iter(|| decide(black_box(&policy), black_box(&ctx), black_box(&node)))
    });
}

criterion_group!(benches, bench);
criterion_main!(benches);
