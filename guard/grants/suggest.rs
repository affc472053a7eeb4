//! Suggestions: when History shows the same narrow shape approved again and again, offer to
//! make it a bounded grant. A suggestion is never broader than what was approved: it binds
//! the exact shapes (program, every word, category), cwd, agent, environment and profile of
//! those approvals, for a bounded time.

use super::shape::{propose, Ask, GrantSpec, Scope};
use crate::policy::request::Request;
use crate::policy::verdict::Verdict;

/// When a shape is worth suggesting: approved at least `min_approvals` times within the last
/// `window_ms`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SuggestRule {
    pub min_approvals: usize,
    pub window_ms: u64,
    /// How long the suggested grant lasts, in minutes.
    pub minutes: u32,
}

impl Default for SuggestRule {
    fn default() -> Self {
        SuggestRule {
            min_approvals: 5,
            window_ms: 7 * 24 * 3600 * 1000,
            minutes: super::shape::MAX_MINUTES,
        }
    }
}

/// One approval History shows.
#[derive(Debug, Clone, Copy)]
pub struct Approved<'a> {
    pub request: &'a Request,
    pub verdict: &'a Verdict,
    pub at_ms: u64,
    /// The inbox entry (a suggestion names the latest one it comes from).
    pub inbox_id: &'a str,
}

/// A grant History offers, with what it is built from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Suggestion {
    pub spec: GrantSpec,
    pub approvals: usize,
    /// The newest approval of the shape (the grant is made on it).
    pub inbox_id: String,
}

/// The suggestions `history` (approvals, any order) supports at `now`; `trusted` and
/// `workspace` as for [`propose`]. Approvals of a shape that cannot be granted are skipped.
pub fn suggest(
    history: &[Approved<'_>],
    rule: SuggestRule,
    now: u64,
    workspace: &str,
    trusted: impl Fn(&str) -> bool,
) -> Vec<Suggestion> {
    let ask = Ask {
        scope: Scope::Minutes,
        n: Some(rule.minutes),
    };
    let mut groups: Vec<(GrantSpec, usize, u64, String)> = Vec::new();
    for a in history
        .iter()
        .filter(|a| now.saturating_sub(a.at_ms) <= rule.window_ms)
    {
        let Ok(spec) = propose(a.request, a.verdict, ask, workspace, now, &trusted) else {
            continue;
        };
        match groups.iter_mut().find(|(s, ..)| *s == spec) {
            Some(g) => {
                g.1 += 1;
                if a.at_ms >= g.2 {
                    g.2 = a.at_ms;
                    g.3 = a.inbox_id.to_owned();
                }
            }
            None => groups.push((spec, 1, a.at_ms, a.inbox_id.to_owned())),
        }
    }
    groups
        .into_iter()
        .filter(|g| rule.min_approvals > 0 && g.1 >= rule.min_approvals)
        .map(|(spec, approvals, _, inbox_id)| Suggestion {
            spec,
            approvals,
            inbox_id,
        })
        .collect()
}
