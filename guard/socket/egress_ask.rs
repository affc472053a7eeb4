//! Our extension of the approvals socket for the egress proxy (`sanctum-guard egress`): an
//! `egress-ask` frame (`policy::egress_ask`) about a destination no egress rule covers. The
//! guard answers at once from what it keeps (a live grant of that exact host:port, or a rule
//! an earlier "always" stored in its overlay), else files an inbox request (`source:
//! "egress"`) and waits for a person or the ask's deadline. A person's "allow for a while"
//! becomes a grant kept here with its end; "always" appends the rule to the overlay file in
//! the guard's state dir and hands it to the proxy, which keeps its own copy.
//!
//! Deny rules are the proxy's to apply before it asks, so no grant or overlay rule here can
//! outweigh one: the proxy asks only when no rule at all covers the destination.

use super::auth::Peer;
use super::decision::peer_id;
use super::peer::PeerLink;
use super::wire::Reply;
use crate::audit::event::{AllowAlways, AuditEvent, Decided, Requester};
use crate::engine::decision::{now_ms, policy_decision};
use crate::engine::Engine;
use crate::inbox::Cancel;
use crate::policy::egress::{judge, DestHost, Destination, EgressVerdict};
use crate::policy::egress_ask::{
    overlay_entry, parse_overlay, proposed_rule, rule_toml, target, AnswerKind, AskFrame,
};
use crate::policy::request::{
    Action, DecidedBy, Decision, DecisionKind, OpenClawAsk, Request, Source, Who,
};
use crate::policy::verdict::{Category, Reason, Verdict, VerdictKind};
use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The overlay file's name in the guard's state dir.
pub const OVERLAY_FILE: &str = "egress-overlay.toml";

/// What the guard keeps for egress: live grants and where "always" rules are stored.
#[derive(Debug)]
pub struct EgressDesk {
    /// `connect://host:port` or `http://host:port` → end of its grant (epoch ms).
    grants: Mutex<HashMap<String, u64>>,
    /// `None`: no state dir (an in-memory door); "always" is then answered but not stored.
    overlay: Option<PathBuf>,
    /// One overlay append at a time.
    writing: tokio::sync::Mutex<()>,
}

impl EgressDesk {
    pub fn new(overlay: Option<PathBuf>) -> Self {
        EgressDesk {
            grants: Mutex::new(HashMap::new()),
            overlay,
            writing: tokio::sync::Mutex::new(()),
        }
    }

    /// The end of a live grant of `target`.
    fn granted(&self, target: &str, now: u64) -> Option<u64> {
        let g = self.grants.lock().ok()?;
        g.get(target).copied().filter(|until| *until > now)
    }

    fn grant(&self, target: String, until: u64) {
        if let Ok(mut g) = self.grants.lock() {
            let now = now_ms();
            g.retain(|_, u| *u > now);
            g.insert(target, until);
        }
    }

    /// Whether a rule in the overlay allows `d` (an unreadable overlay allows nothing).
    fn overlay_allows(&self, d: &Destination) -> bool {
        let Some(path) = &self.overlay else {
            return false;
        };
        let Ok(text) = std::fs::read_to_string(path) else {
            return false;
        };
        match parse_overlay(&text) {
            Ok(rules) => matches!(judge(&rules, d), EgressVerdict::Allow(_)),
            Err(e) => {
                tracing::error!(error = %e, "egress overlay unreadable; asking");
                false
            }
        }
    }

    /// Appends `rule` to the overlay (fsynced). Returns the error text on failure.
    async fn store(&self, rule: &str) -> Result<(), String> {
        let Some(path) = self.overlay.clone() else {
            return Err("no state dir: the rule is not stored by the guard".into());
        };
        let block = overlay_entry(rule)?;
        let _one = self.writing.lock().await;
        tokio::task::spawn_blocking(move || -> std::io::Result<()> {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(&path)?;
            f.write_all(block.as_bytes())?;
            f.sync_all()
        })
        .await
        .map_err(|e| e.to_string())?
        .map_err(|e| e.to_string())
    }
}

/// The verdict that files an egress ask: the reasons say what is asked, which rule "always"
/// stores and how long "for a while" lasts (the card shows them as they are).
pub fn ask_verdict(what: &str, rule: &str, grant_secs: u64) -> Verdict {
    Verdict {
        kind: VerdictKind::Ask,
        category: Category::HttpWrite,
        reasons: vec![
            Reason::new(
                "egress-unlisted",
                format!("no egress rule covers {what}"),
            ),
            Reason::new("egress-rule", rule.to_owned()),
            Reason::new(
                "egress-grant",
                format!(
                    "{}: a grant of exactly this host and port and this kind of connection (tunnel or plain HTTP), kept by the guard until it ends; it covers every connection through the egress proxy meanwhile (the proxy cannot tell the agent's sessions apart, so this is what \"for this session\" means for egress)",
                    grant_text(grant_secs)
                ),
            ),
        ],
        offered: vec![
            DecisionKind::AllowOnce,
            DecisionKind::AllowFor,
            DecisionKind::AllowAlways,
            DecisionKind::Deny,
        ],
        segments: Vec::new(),
        profile: None,
    }
}

/// What a grant is keyed by: the scheme and host:port of the request's URL (no path).
fn req_key(url: &str) -> &str {
    let after = url.find("://").map_or(0, |i| i + 3);
    match url[after..].find('/') {
        Some(i) => &url[..after + i],
        None => url,
    }
}

/// `for 10 min`, `for 90 s`: how long an "allow for a while" lasts.
pub fn grant_text(secs: u64) -> String {
    if secs % 60 == 0 {
        format!("for {} min", secs / 60)
    } else {
        format!("for {secs} s")
    }
}

fn answer(id: &str, kind: AnswerKind, reason: &str) -> serde_json::Value {
    serde_json::json!({"type":"egress-answer","id":id,"decision":kind,"reason":reason})
}

/// An `egress-ask` (token already checked).
pub async fn on_egress_ask(
    engine: &Arc<Engine>,
    desk: &EgressDesk,
    peer: &Peer,
    f: AskFrame,
    host: DestHost,
    shutdown: watch::Receiver<bool>,
    link: PeerLink<'_>,
) -> Reply {
    let a = &f.ask;
    let tunnel = a.path.is_none();
    let tgt = target(&host, a.port);
    let what = match &a.path {
        None => format!("{tgt} (a CONNECT tunnel)"),
        Some(p) => format!("{tgt} ({} {p})", a.method),
    };
    let rule = rule_toml(&proposed_rule(&host, a.port, tunnel));
    let received = now_ms();
    let url = match &a.path {
        None => format!("connect://{tgt}"),
        Some(p) => format!("http://{tgt}{p}"),
    };
    let key = req_key(&url).to_owned();
    let req = Request {
        id: f.id.clone(),
        who: Who {
            agent_id: "main".into(),
            session_key: None,
            source: Source::Egress,
        },
        action: Action::Http {
            method: a.method.clone(),
            url,
        },
        received_at_ms: received,
        deadline_ms: Some(received + a.wait_ms),
        openclaw: OpenClawAsk::default(),
    };
    let requester = Requester::Peer(peer_id(peer));
    let dest = Destination {
        host,
        port: a.port,
        plain: a.path.clone().map(|p| (a.method.clone(), p)),
    };
    // What the guard already keeps answers without a person. A grant is of one host:port and
    // one kind of connection, like the rule "always" stores: a plain GET granted does not
    // open a tunnel to the same port, where a deny rule on plain methods could not see.
    let kept = if let Some(until) = desk.granted(&key, received) {
        Some((AnswerKind::AllowFor, Some(until), "egress-grant"))
    } else if desk.overlay_allows(&dest) {
        Some((AnswerKind::AllowAlways, None, "egress-overlay"))
    } else {
        None
    };
    if let Some((kind, until, code)) = kept {
        let verdict = Verdict {
            kind: VerdictKind::Allow,
            category: Category::HttpWrite,
            reasons: vec![Reason::new(
                code,
                format!("{tgt} is allowed by the guard's {code}"),
            )],
            offered: Vec::new(),
            segments: Vec::new(),
            profile: None,
        };
        let decision = policy_decision(DecisionKind::AllowOnce, Some(code.into()));
        let ev = AuditEvent::Decided(Box::new(Decided {
            requester,
            request: req,
            verdict,
            decision,
            grants: vec![],
        }));
        if !engine.record(ev).await {
            return Reply::Line(answer(&f.id, AnswerKind::Deny, "audit-unavailable"));
        }
        let mut v = answer(&f.id, kind, code);
        v["untilMs"] = serde_json::json!(until);
        if kind == AnswerKind::AllowAlways {
            v["rule"] = serde_json::json!(rule);
        }
        return Reply::Line(v);
    }
    let verdict = ask_verdict(&what, &rule, a.grant_secs);
    let cancel = async move {
        link.gone().await;
        Cancel::RequesterGone
    };
    let (d, _) = engine
        .decide_verdict(&requester, &req, verdict, shutdown, cancel)
        .await;
    reply_to(engine, desk, &f, &key, &rule, &req, d).await
}

/// The answer to a person's (or the fallback's) decision, after keeping what it grants.
async fn reply_to(
    engine: &Arc<Engine>,
    desk: &EgressDesk,
    f: &AskFrame,
    key: &str,
    rule: &str,
    req: &Request,
    d: Decision,
) -> Reply {
    let by = match &d.by {
        DecidedBy::Human(who) => who.clone(),
        DecidedBy::Policy => "policy".into(),
        DecidedBy::Fallback => "fallback".into(),
    };
    let v = match d.kind {
        DecisionKind::Deny => answer(
            &f.id,
            AnswerKind::Deny,
            d.reason.as_deref().unwrap_or("user-denied"),
        ),
        DecisionKind::AllowOnce => answer(&f.id, AnswerKind::AllowOnce, &by),
        DecisionKind::AllowFor => {
            let until = now_ms() + f.ask.grant_secs * 1000;
            desk.grant(key.to_owned(), until);
            let mut v = answer(&f.id, AnswerKind::AllowFor, &by);
            v["untilMs"] = serde_json::json!(until);
            v
        }
        DecisionKind::AllowAlways => {
            let stored = desk.store(rule).await;
            let ev = AuditEvent::AllowAlways(AllowAlways {
                request_id: req.id.clone(),
                entries: stored.is_ok().then_some(1),
                error: stored.err(),
            });
            engine.record(ev).await;
            let mut v = answer(&f.id, AnswerKind::AllowAlways, &by);
            v["rule"] = serde_json::json!(rule);
            v
        }
    };
    Reply::Line(v)
}
