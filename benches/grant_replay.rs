//! A realistic coding session of a few hundred commands (tests/support/replay.rs) replayed
//! through the policy and bounded grants: the prompts a person sees with allow-once only,
//! with bounded grants made on cards, and with History's suggestions accepted too. Target:
//! at least 60% fewer prompts than allow-once only, 0 harmful commands covered.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::disallowed_methods)]

use sanctum_test_support as support;

use support::replay::{session, Desk, Mode};

fn main() {
    let desk = Desk::new();
    let steps = session();
    let once = desk.replay(&steps, Mode::AllowOnceOnly);
    println!(
        "grant_replay: {} commands ({} autonomous, {} blocked, {} gated, {} harmful)",
        once.commands, once.autonomous, once.blocked, once.gated, once.harmful
    );
    for (name, mode) in [
        ("allow-once only", Mode::AllowOnceOnly),
        ("bounded grants", Mode::BoundedGrants),
        ("+ suggestions accepted", Mode::GrantsAndSuggestions),
    ] {
        let c = desk.replay(&steps, mode);
        println!(
            "  {name:<24} prompts {:>4}  ({:>5.1}% fewer)  covered by a grant {:>4}  grants made {:>2}  suggestions accepted {:>2}  harmful covered {}",
            c.prompts,
            100.0 * (1.0 - c.prompts as f64 / once.prompts as f64),
            c.covered,
            c.grants_made,
            c.suggestions_accepted,
            c.harmful_covered.len()
        );
        assert!(
            c.harmful_covered.is_empty(),
            "{name}: {:?}",
            c.harmful_covered
        );
    }
}
