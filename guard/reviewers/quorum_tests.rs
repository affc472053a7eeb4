//! The attack table of multi-person approval: each row is a sequence of votes and what it
//! must come to.

use super::*;
use DecisionKind::{AllowAlways as Always, AllowFor as For, AllowOnce as Once, Deny};

fn vote(account: &str, role: Role, kind: DecisionKind) -> Vote {
    Vote {
        account: account.into(),
        account_id: format!("id-{account}"),
        role,
        kind,
        via: format!("web:{account}/0000"),
        at_ms: 1,
    }
}

const A: Role = Role::Approver;
const ADM: Role = Role::Admin;
const V: Role = Role::Viewer;

fn complete(kind: DecisionKind, who: &[&str]) -> Outcome {
    Outcome::Complete {
        kind,
        approvers: who.iter().map(|s| s.to_string()).collect(),
    }
}

fn partial(who: &[&str], need: u8) -> Outcome {
    Outcome::Partial {
        approvers: who.iter().map(|s| s.to_string()).collect(),
        need,
    }
}

/// (row, need, votes, removed accounts, now, expected)
type Row = (
    &'static str,
    u8,
    Vec<Vote>,
    &'static [&'static str],
    u64,
    Outcome,
);

#[test]
fn counting_table() {
    let rows: Vec<Row> = vec![
        (
            "one of one",
            1,
            vec![vote("alice", A, Once)],
            &[],
            0,
            complete(Once, &["alice"]),
        ),
        (
            "one of two",
            2,
            vec![vote("alice", A, Once)],
            &[],
            0,
            partial(&["alice"], 2),
        ),
        (
            "same reviewer twice counts once",
            2,
            vec![vote("alice", A, Once), vote("alice", ADM, Once)],
            &[],
            0,
            partial(&["alice"], 2),
        ),
        (
            "two different reviewers",
            2,
            vec![vote("alice", A, Once), vote("bob", ADM, Once)],
            &[],
            0,
            complete(Once, &["alice", "bob"]),
        ),
        (
            "a viewer's vote never counts",
            2,
            vec![vote("alice", A, Once), vote("val", V, Once)],
            &[],
            0,
            partial(&["alice"], 2),
        ),
        (
            "a removed reviewer's approval no longer counts",
            2,
            vec![vote("alice", A, Once), vote("bob", A, Once)],
            &["alice"],
            0,
            partial(&["bob"], 2),
        ),
        (
            "deny after one approve ends it",
            2,
            vec![vote("alice", A, Once), vote("bob", A, Deny)],
            &[],
            0,
            Outcome::Denied { by: "bob".into() },
        ),
        (
            "deny by a removed reviewer still ends it (refusing is never taken away)",
            2,
            vec![vote("alice", A, Deny)],
            &["alice"],
            0,
            Outcome::Denied { by: "alice".into() },
        ),
        (
            "scope narrows to once",
            2,
            vec![vote("alice", A, Always), vote("bob", A, Once)],
            &[],
            0,
            complete(Once, &["alice", "bob"]),
        ),
        (
            "scope narrows to the bounded grant",
            2,
            vec![vote("alice", A, Always), vote("bob", A, For)],
            &[],
            0,
            complete(For, &["alice", "bob"]),
        ),
        (
            "both always stays always",
            2,
            vec![vote("alice", A, Always), vote("bob", ADM, Always)],
            &[],
            0,
            complete(Always, &["alice", "bob"]),
        ),
        (
            "deadline with one of two",
            2,
            vec![vote("alice", A, Once)],
            &[],
            100,
            Outcome::Expired,
        ),
        (
            "deadline even with two of two",
            2,
            vec![vote("alice", A, Once), vote("bob", A, Once)],
            &[],
            100,
            Outcome::Expired,
        ),
        ("no votes", 3, vec![], &[], 0, partial(&[], 3)),
    ];
    for (row, need, votes, removed, now, want) in rows {
        let got = count(
            need,
            &votes,
            |v| !removed.contains(&v.account.as_str()),
            now,
            100,
        );
        assert_eq!(got, want, "{row}");
    }
}

#[test]
fn voter_table() {
    let voter = |role: Option<Role>, ids: &[&str]| Voter {
        name: "alice".into(),
        account_id: "id".into(),
        role,
        identities: ids.iter().map(|s| s.to_string()).collect(),
    };
    let req = vec![
        "agent:main".to_string(),
        "agent:main:telegram:dm:42".to_string(),
    ];
    let rows: Vec<(&str, Voter, Result<(), Refusal>)> = vec![
        ("approver", voter(Some(A), &[]), Ok(())),
        ("admin", voter(Some(ADM), &["cli:alice"]), Ok(())),
        (
            "viewer",
            voter(Some(V), &[]),
            Err(Refusal::Viewer("alice".into())),
        ),
        (
            "removed or never created",
            voter(None, &[]),
            Err(Refusal::NoAccount),
        ),
        (
            "the requester's own chat identity",
            voter(Some(A), &["agent:main:telegram:dm:42"]),
            Err(Refusal::OwnRequest("agent:main:telegram:dm:42".into())),
        ),
        (
            "the requesting agent linked to the account",
            voter(Some(ADM), &["agent:main"]),
            Err(Refusal::OwnRequest("agent:main".into())),
        ),
        (
            "another sender of the same chat is not the requester",
            voter(Some(A), &["agent:main:telegram:dm:43"]),
            Ok(()),
        ),
    ];
    for (row, v, want) in rows {
        assert_eq!(check_voter(&v, &req), want, "{row}");
    }
}
