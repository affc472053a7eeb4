//! One person's vote on a pending inbox entry, as every door that carries a human decision
//! (the web prompt, `inbox approve`) casts it: checked against the voter's account and the
//! requester, recorded (with its audit record naming account and role), and counted. The
//! caller applies what comes out with [`crate::inbox::Inbox::decide`]; a partial approval
//! decides nothing.

use super::quorum::{self, Outcome, Refusal, Voter};
use super::{ReviewerError, ReviewerStore, Role, Vote};
use crate::inbox::Entry;
use crate::policy::request::{DecidedBy, Decision, DecisionKind};
use serde_json::json;

/// What a vote comes to.
#[derive(Debug, Clone, PartialEq)]
pub enum Cast {
    /// Apply this decision now (a deny, the only approval needed, or the last one).
    Decide(Decision),
    /// Recorded; the request waits for more approvals.
    Partial { approvers: Vec<String>, need: u8 },
}

/// A vote to cast.
#[derive(Debug, Clone)]
pub struct Ballot {
    pub voter: Voter,
    /// How it came (`web:alice/1a2b3c4d@127.0.0.1:5000`, `cli:alice`): the decision's `by`.
    pub via: String,
    pub kind: DecisionKind,
    pub reason: Option<String>,
}

/// Casts `ballot` on `entry` (pending, as just read), which needs `need` approvals.
pub fn cast(
    store: &mut dyn ReviewerStore,
    entry: &Entry,
    need: u8,
    ballot: Ballot,
) -> Result<Result<Cast, Refusal>, ReviewerError> {
    let Ballot {
        voter,
        via,
        kind,
        reason,
    } = ballot;
    let requester = quorum::requester_identities(&entry.request);
    match quorum::check_voter(&voter, &requester) {
        Ok(()) => {}
        // Anyone who may decide may refuse, their own request included.
        Err(Refusal::OwnRequest(_)) if kind == DecisionKind::Deny => {}
        Err(r) => return Ok(Err(r)),
    }
    let role = voter.role.unwrap_or(Role::Viewer);
    let now = crate::inbox::now_ms();
    let vote = Vote {
        account: voter.name.clone(),
        account_id: voter.account_id.clone(),
        role,
        kind,
        via: via.clone(),
        at_ms: now,
    };
    let record = json!({
        "inboxId": entry.id, "requestId": entry.request.id, "requestHash": entry.request_hash,
        "account": vote.account, "role": role.as_str(), "decision": kind.as_str(),
        "via": via, "required": need,
    });
    let votes = match store.add_vote(&entry.id, &vote, &record)? {
        Ok(v) => v,
        // One approval decides: the same account on two pages at once (a fleet's guards)
        // is settled by the inbox's conditional update, which lets one decision win and
        // tells the other it was already decided.
        Err(Refusal::Twice(_)) if need <= 1 => {
            return Ok(Ok(Cast::Decide(Decision {
                kind,
                reason,
                by: DecidedBy::Human(via),
                at_ms: now,
            })))
        }
        Err(r) => return Ok(Err(r)),
    };
    let live = |v: &Vote| {
        v.account_id.is_empty()
            || store
                .get(&v.account)
                .ok()
                .flatten()
                .is_some_and(|r| r.id == v.account_id && r.role.can_decide())
    };
    let decision = |kind, by: String| Decision {
        kind,
        reason: reason.clone(),
        by: DecidedBy::Human(by),
        at_ms: now,
    };
    Ok(Ok(
        match quorum::count(need, &votes, live, now, entry.deadline_ms) {
            Outcome::Denied { .. } => Cast::Decide(decision(DecisionKind::Deny, via)),
            // Past the deadline the inbox answers the fallback; handing it the vote lets it
            // say so in its own words.
            Outcome::Expired => Cast::Decide(decision(kind, via)),
            Outcome::Partial { approvers, need } => Cast::Partial { approvers, need },
            Outcome::Complete { kind, approvers } => {
                let by = if need <= 1 {
                    via
                } else {
                    // Every approver's channel identity, in the order they approved.
                    votes
                        .iter()
                        .filter(|v| approvers.contains(&v.account))
                        .map(|v| v.via.clone())
                        .collect::<Vec<_>>()
                        .join(" + ")
                };
                Cast::Decide(decision(kind, by))
            }
        },
    ))
}

/// The voter an account name stands for, as the store has it now (no account: a voter with
/// no role, who decides nothing).
pub fn voter_of(store: &dyn ReviewerStore, name: &str) -> Result<Voter, ReviewerError> {
    Ok(match store.get(name)? {
        Some(r) => Voter {
            name: r.name,
            account_id: r.id,
            role: Some(r.role),
            identities: r.identities,
        },
        None => Voter {
            name: name.to_owned(),
            account_id: String::new(),
            role: None,
            identities: Vec::new(),
        },
    })
}

/// The voter a command-line user is: the account that lists `identity` (`cli:<user>`)
/// among its linked identities, else that identity itself acting as the state dir's owner
/// (whoever can write the inbox database can decide; it still counts as one approver).
pub fn cli_voter(store: &dyn ReviewerStore, identity: &str) -> Result<Voter, ReviewerError> {
    if let Some(r) = store
        .list()?
        .into_iter()
        .find(|r| r.identities.iter().any(|i| i == identity))
    {
        return Ok(Voter {
            name: r.name,
            account_id: r.id,
            role: Some(r.role),
            identities: r.identities,
        });
    }
    Ok(Voter {
        name: identity.to_owned(),
        account_id: String::new(),
        role: Some(Role::Admin),
        identities: vec![identity.to_owned()],
    })
}
