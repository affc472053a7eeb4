//! The replayed coding session (support/replay.rs): bounded grants made on cards cut the
//! prompts a person sees by at least half against allow-once only, with History's
//! suggestions accepted too by at least 60%, and no harmful command of the session is ever
//! answered by a grant. A suggestion binds exactly what was
//! approved: it covers each approval it came from and nothing of another shape.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use sanctum_guard::grants::{covering, suggest, Approved, SuggestRule};
use support::replay::{session, Desk, Mode};

#[test]
fn grants_cut_prompts_by_60_percent_and_cover_nothing_harmful() {
    let desk = Desk::new();
    let steps = session();
    assert!(
        steps.len() >= 300,
        "a few hundred commands: {}",
        steps.len()
    );
    let once = desk.replay(&steps, Mode::AllowOnceOnly);
    let grants = desk.replay(&steps, Mode::BoundedGrants);
    let sugg = desk.replay(&steps, Mode::GrantsAndSuggestions);
    for (name, c) in [
        ("allow-once only", &once),
        ("bounded grants", &grants),
        ("+ suggestions", &sugg),
    ] {
        eprintln!("{name}: {c:?}");
        assert!(
            c.harmful_covered.is_empty(),
            "{name}: a grant covered {:?}",
            c.harmful_covered
        );
    }
    assert_eq!(once.covered, 0);
    assert_eq!(once.harmful, 8);
    let cut = |c: usize| 1.0 - c as f64 / once.prompts as f64;
    assert!(
        cut(grants.prompts) >= 0.50,
        "bounded grants: {} of {} prompts",
        grants.prompts,
        once.prompts
    );
    assert!(
        cut(sugg.prompts) >= 0.60,
        "grants and suggestions: {} of {} prompts",
        sugg.prompts,
        once.prompts
    );
    assert!(sugg.suggestions_accepted > 0);
}

#[test]
fn a_suggestion_is_never_broader_than_what_was_approved() {
    let desk = Desk::new();
    let approved: Vec<_> = (0..5).map(|_| desk_judge(&desk, "pnpm build")).collect();
    let mut fewer: Vec<_> = approved.iter().take(4).collect();
    let ws = desk.home.ws.display().to_string();
    let seen = |v: &[&(
        sanctum_guard::policy::request::Request,
        sanctum_guard::policy::verdict::Verdict,
    )],
                t0: u64|
     -> Vec<(u64, usize)> {
        let a: Vec<Approved<'_>> = v
            .iter()
            .enumerate()
            .map(|(i, (r, vv))| Approved {
                request: r,
                verdict: vv,
                at_ms: t0 + i as u64,
                inbox_id: "i",
            })
            .collect();
        suggest(&a, SuggestRule::default(), t0 + 10, &ws, |_| true)
            .iter()
            .map(|s| (s.spec.expires_ms.unwrap_or(0), s.approvals))
            .collect()
    };
    assert!(seen(&fewer, 0).is_empty(), "four approvals are not enough");
    fewer.push(&approved[4]);
    assert_eq!(seen(&fewer, 0).len(), 1);
    // Approvals older than the window do not count.
    let day = 24 * 3600 * 1000;
    let old: Vec<Approved<'_>> = approved
        .iter()
        .enumerate()
        .map(|(i, (r, v))| Approved {
            request: r,
            verdict: v,
            at_ms: if i == 0 { 0 } else { 8 * day },
            inbox_id: "i",
        })
        .collect();
    assert!(suggest(&old, SuggestRule::default(), 8 * day, &ws, |_| true).is_empty());
    // The suggested grant covers the approved shape and nothing else.
    let all: Vec<Approved<'_>> = approved
        .iter()
        .map(|(r, v)| Approved {
            request: r,
            verdict: v,
            at_ms: 1,
            inbox_id: "i",
        })
        .collect();
    let s = suggest(&all, SuggestRule::default(), 2, &ws, |_| true).remove(0);
    let (r, v) = &approved[0];
    assert!(covering([("s", &s.spec)], r, v).is_some());
    for other in [
        "pnpm build --prod",
        "pnpm buildx",
        "pnpm build; rm x",
        "pnpm build > out",
    ] {
        let (r, v) = desk_judge(&desk, other);
        assert!(covering([("s", &s.spec)], &r, &v).is_none(), "{other}");
    }
}

fn desk_judge(
    d: &Desk,
    cmd: &str,
) -> (
    sanctum_guard::policy::request::Request,
    sanctum_guard::policy::verdict::Verdict,
) {
    d.judge(cmd)
}
