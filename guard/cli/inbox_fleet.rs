//! `sanctum-guard inbox list|approve|deny` when the guard's config names a fleet database
//! (`[store] url`): the fleet's requests, decided by the same conditional update as a web
//! prompt's (exactly one decision wins; a late one is refused as already decided, exit 1),
//! the decision recorded in this guard's audit log, the owning guard answering its agent.

use super::{inbox_decided, inbox_list, open_audit, reviewers, InboxAct};
use sanctum_guard::inbox::pg::{parse_url, PgStore};
use std::path::Path;
use std::process::ExitCode;

pub(super) fn run(act: InboxAct, json: bool, dir: &Path, url: &str, guard_id: &str) -> ExitCode {
    let fail = |e: &dyn std::fmt::Display| {
        eprintln!("error: {e}");
        ExitCode::from(2)
    };
    let db = match parse_url(url) {
        Ok(d) => d,
        Err(e) => return fail(&e),
    };
    // Only a decision writes to the audit log; listing leaves it alone.
    let audit = match &act {
        InboxAct::List(_) => None,
        InboxAct::Decide { .. } => match open_audit(dir) {
            Ok(log) => Some(log),
            Err(code) => return code,
        },
    };
    let vote_audit = audit.clone();
    let db_votes = db.clone();
    let mut store = match PgStore::open(db, guard_id, audit) {
        Ok(s) => s,
        Err(e) => return fail(&e),
    };
    let (id, kind, reason, hash) = match act {
        InboxAct::List(state) => return inbox_list(&|f| store.entries(f), &state, json),
        InboxAct::Decide {
            id,
            kind,
            reason,
            hash,
        } => (id, kind, reason, hash),
    };
    // The terminal's vote among this guard's reviewer accounts, as without a fleet.
    // The fleet's reviewer tables, where the guards' pages count votes and their policies'
    // approval counts are published: a local table would count one vote as enough.
    let mut rs = match sanctum_guard::reviewers::pg::PgReviewers::open(db_votes, vote_audit) {
        Ok(r) => r,
        Err(e) => return fail(&e),
    };
    let decision = match reviewers::cli_vote(
        &mut rs,
        &|id| store.entry(id),
        (&id, hash.as_deref()),
        kind,
        reason,
    ) {
        Ok(d) => d,
        Err(code) => return code,
    };
    inbox_decided(store.decide(&id, decision, hash.as_deref()), json)
}
