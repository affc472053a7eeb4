//! What `decide()` adds to the command table's findings: constructs the shell analysis
//! found not inert, and words whose possible
//! values (from variables the text assigns) reach a secret.

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
    if matches!(
        seg.program.as_deref(),
        Some("echo" | "printf" | "test" | "[" | "[[" | ":" | "true" | "false")
    ) && seg.redirects.is_empty()
    {
        return;
    }
    let words = seg
        .argv
        .iter()
        .skip(1)
        .chain(seg.redirects.iter().map(|r| &r.target));
    for w in words.filter(|w| w.value.is_none()) {
        for cand in &w.candidates {
            for cwd in seg
                .cwds
                .iter()
                .chain(seg.cwds.is_empty().then_some(&ctx.cwd))
            {
                let pctx = PathContext {
                    home: ctx.home.clone(),
                    cwd: cwd.clone(),
                };
                // An option's attached value (`--file=$f`) names a path too.
                let path = cand.split_once('=').map_or(cand.as_str(), |(_, v)| v);
                for p in [cand.as_str(), path] {
                    if let Some(hit) = policy.sensitive().glob_may_match(p, &pctx) {
                        c.add(
                            Category::SensitivePath,
                            "sensitive-path",
                            format!("{} may expand to {p} (sensitive: {hit})", w.source),
                        );
                        return;
                    }
                }
            }
        }
    }
}
