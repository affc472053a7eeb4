//! What `decide()` adds to the command table's findings: constructs the shell analysis
//! found not inert, words whose possible values (from variables the text assigns) reach a
//! secret, and secrets named by a command the table did not understand.

use super::DecideContext;
use crate::policy::file::Policy;
use crate::policy::paths::PathContext;
use crate::policy::shell::{Analysis, Segment};
use crate::policy::table::Classification;
use crate::policy::verdict::Category;

/// Constructs the analyser does not know to be inert: a human sees them (allow-list, not
/// spot-the-danger). The request's own env keys are judged in `decide`.
pub(super) fn not_inert(analysis: &Analysis) -> Classification {
    // Constructs the analyser does not know to be inert, and request environment keys
    // that are not on the inert list: a human sees them (allow-list, not
    // spot-the-danger).
    let mut gates = Classification::default();
    for why in &analysis.gates {
        gates.add(Category::Unanalysable, "not-inert", why.clone());
    }
    gates
}

/// A word built from variables (`f=~/.ssh/id_rsa; cat $f`, `cat ${HOME%/}/.aws/x`): if any
/// value it may take reaches a secret, the segment is blocked. Programs that only print
/// their words are exempt.
pub(super) fn variable_secrets(
    policy: &Policy,
    ctx: &DecideContext,
    seg: &Segment,
    c: &mut Classification,
) {
    if print_only(seg) {
        return;
    }
    for w in words(seg).filter(|w| w.value.is_none()) {
        let values = w.candidates.iter().map(String::as_str);
        if let Some((p, hit)) = first_secret(policy, ctx, seg, values) {
            c.add(
                Category::SensitivePath,
                "sensitive-path",
                format!("{} may expand to {p} (sensitive: {hit})", w.source),
            );
            return;
        }
    }
}

/// A segment the command table did not understand (an unknown option, a word it cannot see)
/// that names a secret in one of its static words is blocked: its reading of that word is
/// unknown, so what the word names decides. Understood commands are judged by their rows
/// alone (`grep -n .env README.md` searches for the text `.env`).
pub(super) fn named_secrets_not_understood(
    policy: &Policy,
    ctx: &DecideContext,
    seg: &Segment,
    c: &mut Classification,
) {
    let has = |cat: Category| c.findings.iter().any(|f| f.category == cat);
    if !has(Category::Unanalysable) || has(Category::SensitivePath) || print_only(seg) {
        return;
    }
    let values = words(seg).filter_map(|w| w.value.as_deref());
    if let Some((p, hit)) = first_secret(policy, ctx, seg, values) {
        c.add(
            Category::SensitivePath,
            "sensitive-path",
            format!("names {p} (sensitive: {hit}) in a command not understood"),
        );
    }
}

/// The segment's operands and redirection targets.
fn words(seg: &Segment) -> impl Iterator<Item = &crate::policy::shell::Word> {
    seg.argv
        .iter()
        .skip(1)
        .chain(seg.redirects.iter().map(|r| &r.target))
}

/// The first of `values` (or its part after `=`: an option's attached value names a path
/// too) that names a sensitive path from any directory the segment may run in, and the
/// entry it matched.
fn first_secret<'v>(
    policy: &Policy,
    ctx: &DecideContext,
    seg: &Segment,
    values: impl Iterator<Item = &'v str>,
) -> Option<(&'v str, String)> {
    let dirs: Vec<&std::path::PathBuf> = seg
        .cwds
        .iter()
        .chain(seg.cwds.is_empty().then_some(&ctx.cwd))
        .collect();
    for value in values {
        let path = value.split_once('=').map_or(value, |(_, v)| v);
        for cwd in &dirs {
            let pctx = PathContext {
                home: ctx.home.clone(),
                cwd: (*cwd).clone(),
            };
            for p in [value, path] {
                if let Some(hit) = policy.sensitive().glob_may_match(p, &pctx) {
                    return Some((p, hit));
                }
            }
        }
    }
    None
}

/// Programs that only print their words (and redirect nothing): naming a secret is harmless.
fn print_only(seg: &Segment) -> bool {
    matches!(
        seg.program.as_deref(),
        Some("echo" | "printf" | "test" | "[" | "[[" | ":" | "true" | "false")
    ) && seg.redirects.is_empty()
}
