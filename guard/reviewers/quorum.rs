//! The counting rule of multi-person approval, pure: who may vote on a request, and what
//! the votes so far add up to. A request that needs N approvals resolves allowed only when
//! N different, still-existing accounts with a deciding role approved it before its
//! deadline; one deny ends it; the scope that applies is the narrowest any approver chose.

use super::{Role, Vote};
use crate::policy::request::{DecisionKind, Request};

/// Why a vote is not taken.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error("Not applied: you are signed in as a reviewer account that no longer exists (removed, or never created). Ask an admin for an account.")]
    NoAccount,
    #[error("Not applied: {0} has the viewer role, which sees requests but cannot decide them.")]
    Viewer(String),
    #[error("Not applied: {0} already approved this request; it needs approvals from different reviewers.")]
    Twice(String),
    #[error("Not applied: this request was asked under {0}, an identity linked to your account; a requester cannot approve their own request.")]
    OwnRequest(String),
}

/// Who is voting, as the door that carried the vote knows them.
#[derive(Debug, Clone)]
pub struct Voter {
    /// The account name (or the channel identity when no account is linked to it).
    pub name: String,
    /// The account's id (empty: a channel identity without an account).
    pub account_id: String,
    /// None: the session names an account that does not exist (any more).
    pub role: Option<Role>,
    pub identities: Vec<String>,
}

/// What the votes on a request come to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Past the deadline: the fallback answers, whatever was approved.
    Expired,
    /// Someone denied: the request is denied.
    Denied { by: String },
    /// Not enough approvals yet.
    Partial { approvers: Vec<String>, need: u8 },
    /// Enough different approvers: allowed with the narrowest scope they chose.
    Complete {
        kind: DecisionKind,
        approvers: Vec<String>,
    },
}

/// The names a request was asked under, as the request itself says: the agent, and the
/// agent's session key (which, for a chat-driven agent, names the channel and sender).
pub fn requester_identities(req: &Request) -> Vec<String> {
    let mut out = vec![format!("agent:{}", req.who.agent_id)];
    if let Some(k) = &req.who.session_key {
        out.push(k.clone());
    }
    out
}

/// Whether `voter` may vote on a request asked under `requester`.
pub fn check_voter(voter: &Voter, requester: &[String]) -> Result<(), Refusal> {
    let role = voter.role.ok_or(Refusal::NoAccount)?;
    if !role.can_decide() {
        return Err(Refusal::Viewer(voter.name.clone()));
    }
    if let Some(id) = voter
        .identities
        .iter()
        .chain(std::iter::once(&voter.name))
        .find(|id| requester.contains(id))
    {
        return Err(Refusal::OwnRequest(id.clone()));
    }
    Ok(())
}

/// The narrowest of the allow scopes chosen: once, then a bounded grant (egress), then
/// always.
pub fn narrowest(kinds: impl IntoIterator<Item = DecisionKind>) -> DecisionKind {
    let rank = |k: &DecisionKind| match k {
        DecisionKind::Deny => 0,
        DecisionKind::AllowOnce => 1,
        DecisionKind::AllowFor => 2,
        DecisionKind::AllowAlways => 3,
    };
    kinds
        .into_iter()
        .min_by_key(rank)
        .unwrap_or(DecisionKind::AllowOnce)
}

/// What `votes` (oldest first) add up to for a request needing `need` approvals.
/// `counts(vote)` says whether the voter's account still exists as it was when it voted
/// (a removed reviewer's approval no longer counts).
pub fn count(
    need: u8,
    votes: &[Vote],
    counts: impl Fn(&Vote) -> bool,
    now_ms: u64,
    deadline_ms: u64,
) -> Outcome {
    if now_ms >= deadline_ms {
        return Outcome::Expired;
    }
    if let Some(d) = votes.iter().find(|v| v.kind == DecisionKind::Deny) {
        return Outcome::Denied {
            by: d.account.clone(),
        };
    }
    let mut approvers: Vec<&Vote> = Vec::new();
    for v in votes.iter().filter(|v| counts(v) && v.role.can_decide()) {
        if !approvers.iter().any(|a| a.account == v.account) {
            approvers.push(v);
        }
    }
    let names = approvers.iter().map(|v| v.account.clone()).collect();
    if approvers.len() >= usize::from(need.max(1)) {
        Outcome::Complete {
            kind: narrowest(approvers.iter().map(|v| v.kind)),
            approvers: names,
        }
    } else {
        Outcome::Partial {
            approvers: names,
            need,
        }
    }
}

#[cfg(test)]
#[path = "quorum_tests.rs"]
mod tests;
