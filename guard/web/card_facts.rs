//! What approving a card does, computed by the guard from the same plan the engine uses, so
//! the card never guesses: who runs the command and how confined (`runs`), and the exact
//! grants `allow-always` stores (`grants`, from [`crate::engine::grants::planned`], the code
//! that stores them). Documented in the README ("Web prompt").

use crate::engine::grants::planned;
use crate::engine::Engine;
use crate::inbox::Entry;
use crate::policy::request::{DecisionKind, Source};
use crate::sandbox::NetworkSpec;
use serde_json::{json, Value};

/// `runs`: who runs the request once approved, as which uid, under which profile (what it
/// may write, its network), its timeout, and the request's absolute deadline.
pub fn runs_json(eng: Option<&Engine>, e: &Entry) -> Value {
    let deadline = e.deadline_ms;
    match e.request.who.source {
        Source::SocketExec | Source::Node => match eng {
            Some(eng) => sandboxed(eng, e),
            // Without the engine the guard cannot say: the card says so (fail closed).
            None => unconfined(
                "unknown",
                "unknown: the guard could not describe this run",
                deadline,
            ),
        },
        Source::SocketRequest => unconfined(
            "openclaw",
            "OpenClaw runs it itself, outside the guard's sandbox (socket request: prompt only)",
            deadline,
        ),
        Source::Gateway => unconfined(
            "openclaw",
            "OpenClaw runs it itself (its gateway or node host), outside the guard's sandbox",
            deadline,
        ),
        Source::Plugin => unconfined(
            "openclaw",
            "OpenClaw's gateway runs this tool call itself, outside the guard's sandbox",
            deadline,
        ),
        Source::Egress => json!({"by": "egress-proxy", "confined": true,
            "who": "the guard's egress proxy opens this one connection; nothing runs",
            "uid": null, "profile": null, "writes": [], "network": null, "timeoutMs": null,
            "deadlineMs": deadline,
            "text": "Nothing runs: the egress proxy lets the connection through"}),
        Source::Cli => json!({"by": "nobody", "confined": true,
            "who": "nothing runs (a policy explanation)", "uid": null, "profile": null,
            "writes": [], "network": null, "timeoutMs": null, "deadlineMs": deadline,
            "text": "Nothing runs: a policy explanation"}),
    }
}

fn unconfined(by: &str, who: &str, deadline: u64) -> Value {
    json!({"by": by, "confined": false, "who": who, "uid": null, "profile": null,
           "writes": ["not limited by the guard"], "network": "not limited by the guard",
           "timeoutMs": null, "deadlineMs": deadline,
           "text": format!("{who}; no guard profile: writes and network not limited by the guard")})
}

/// A run the guard makes itself: the profile `Judge::run` would pick for an approved run.
fn sandboxed(eng: &Engine, e: &Entry) -> Value {
    let judge = eng.judge();
    let (by, who) = match e.request.who.source {
        Source::Node => (
            "node",
            "the guard's node host runs it in the guard's sandbox",
        ),
        _ => ("guard-sandbox", "the guard runs it in its sandbox"),
    };
    let uid = judge
        .run_as()
        .map_or_else(|| nix::unistd::getuid().as_raw(), |r| r.uid);
    let name = judge.run_profile(&e.verdict, false);
    let Some(spec) = judge.profile_spec(&name) else {
        return unconfined(
            "unknown",
            "unknown: the run's sandbox profile is not defined (the run would be refused)",
            e.deadline_ms,
        );
    };
    let ws = judge.deployment().workspace.display().to_string();
    let home = judge.deployment().agent_home.display().to_string();
    let writes: Vec<String> = spec
        .write
        .iter()
        .map(|w| {
            w.replace("{workspace}", &ws)
                .replace("{home}", &home)
                .replace("{tmp}", "a private tmp")
        })
        .collect();
    let network = match &spec.network {
        NetworkSpec::None => "no network".to_owned(),
        NetworkSpec::ReadProxy => "only the guard's read proxy (GET/HEAD)".to_owned(),
        NetworkSpec::Ports(p) => format!(
            "TCP to ports {}",
            p.iter().map(u16::to_string).collect::<Vec<_>>().join(",")
        ),
    };
    let timeout_ms = spec.timeout_secs.saturating_mul(1000);
    let writes_text = if writes.is_empty() {
        "writes nothing".to_owned()
    } else {
        format!("writes {}", writes.join(", "))
    };
    json!({"by": by, "confined": true, "who": who, "uid": uid, "profile": name,
           "writes": writes, "network": network, "timeoutMs": timeout_ms,
           "deadlineMs": e.deadline_ms,
           "text": format!("{who} as uid {uid}, profile {name} ({writes_text}; {network}), \
                            killed after {}s", spec.timeout_secs)})
}

/// `grants`: what `allow-always` stores, each entry's pattern and where it applies, and
/// what that means for later runs. Null when allow-always is not offered.
pub fn grants_json(e: &Entry) -> Value {
    if !e.offered().contains(&DecisionKind::AllowAlways) {
        return Value::Null;
    }
    let list = planned(&e.request, &e.verdict);
    let stores = if matches!(e.request.who.source, Source::Plugin) {
        "nothing: a tool call has no allowlist entry to store"
    } else {
        "OpenClaw allowlist entries, one per gated command segment"
    };
    json!({
        "store": stores,
        "entries": list,
        "means": "each entry lets exactly that argv run unasked in that cwd, alone or combined \
                  with commands that run by themselves or are granted too; the same command, \
                  with the same cwd, then runs unasked; any other argv or cwd still asks",
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::inbox::State;
    use crate::policy::request::{Action, ExecAction, OpenClawAsk, Request, Who};
    use crate::policy::verdict::{Category, Verdict, VerdictKind};

    fn entry(source: Source) -> Entry {
        Entry {
            id: "e".into(),
            request: Request {
                id: "r".into(),
                who: Who {
                    agent_id: "main".into(),
                    session_key: None,
                    source,
                },
                action: Action::Exec(ExecAction::default()),
                received_at_ms: 1,
                deadline_ms: Some(99),
                openclaw: OpenClawAsk::default(),
            },
            verdict: Verdict {
                kind: VerdictKind::Ask,
                category: Category::Unanalysable,
                reasons: Vec::new(),
                offered: vec![DecisionKind::AllowOnce, DecisionKind::Deny],
                segments: Vec::new(),
                profile: None,
            },
            request_hash: String::new(),
            created_ms: 1,
            deadline_ms: 99,
            state: State::Pending,
            decision: None,
            resolved_ms: None,
            guard: None,
            decided_at: None,
        }
    }

    /// Whatever OpenClaw runs itself is unconfined; a confined source without the engine
    /// that would run it is never called confined.
    #[test]
    fn who_runs_each_source_without_an_engine() {
        for (source, by, confined) in [
            (Source::SocketRequest, "openclaw", false),
            (Source::Gateway, "openclaw", false),
            (Source::Plugin, "openclaw", false),
            (Source::SocketExec, "unknown", false),
            (Source::Node, "unknown", false),
            (Source::Cli, "nobody", true),
        ] {
            let r = runs_json(None, &entry(source));
            assert_eq!(r["by"], by, "{source:?}: {r}");
            assert_eq!(r["confined"], confined, "{source:?}: {r}");
            assert_eq!(r["deadlineMs"], 99, "{source:?}");
        }
        assert_eq!(grants_json(&entry(Source::SocketRequest)), Value::Null);
    }
}
