//! What a notification may say about a request: its summary with every secret shape replaced
//! (the audit log's redaction, as the guard's own log line shows it) and cut short, its
//! category, its deadline and a link to its card. Nothing else of the request leaves the guard:
//! no environment, no file content, no request hash. A link only opens the card; acting on it
//! needs a signed-in session.

use super::level::Level;
use crate::inbox::{Entry, Resolved, State};
use crate::policy::request::DecidedBy;
use crate::policy::verdict::Category;
use serde_json::{json, Value};

/// The longest command text a notification carries (characters).
pub const SUMMARY_MAX: usize = 120;

/// One request waiting for a human, as channels show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notice {
    pub id: String,
    pub summary: String,
    pub category: Category,
    pub level: Level,
    pub agent: Option<String>,
    pub deadline_ms: u64,
    /// The card: `<web prompt>/#r=<id>`.
    pub link: String,
}

/// How a request ended, as channels show it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    pub id: String,
    pub state: &'static str,
    /// `approved by web:alice/…`, `denied (approval-timeout)`, …
    pub text: String,
}

/// `s` with secrets replaced, control and bidi characters escaped, cut to `max` characters.
pub fn shown(s: &str, max: usize) -> String {
    let red = crate::audit::redact_str(s);
    let mut out = String::new();
    for (n, c) in red.chars().enumerate() {
        if n >= max {
            out.push('…');
            break;
        }
        let bidi = matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{200e}' | '\u{200f}' | '\u{061c}');
        if c.is_control() || bidi {
            out.push_str(&c.escape_unicode().to_string());
        } else {
            out.push(c);
        }
    }
    out
}

impl Notice {
    pub fn of(e: &Entry, web: &str) -> Notice {
        let category = e.verdict.category;
        Notice {
            id: e.id.clone(),
            summary: shown(&e.summary(), SUMMARY_MAX),
            category,
            level: Level::of(category),
            agent: Some(shown(&e.request.who.agent_id, 40)).filter(|a| !a.is_empty()),
            deadline_ms: e.deadline_ms,
            link: format!("{web}/#r={}", e.id),
        }
    }

    /// The category's name as the policy writes it (`run-code`).
    pub fn category_name(&self) -> String {
        serde_json::to_value(self.category)
            .ok()
            .and_then(|v| v.as_str().map(str::to_owned))
            .unwrap_or_default()
    }

    pub fn json(&self) -> Value {
        json!({"id": self.id, "summary": self.summary, "category": self.category_name(),
               "priority": self.level.0, "agentId": self.agent, "deadlineMs": self.deadline_ms,
               "link": self.link})
    }

    /// One line: `run-code: exec curl -X POST …`.
    pub fn line(&self) -> String {
        format!("{}: {}", self.category_name(), self.summary)
    }
}

impl Outcome {
    pub fn of(r: &Resolved) -> Outcome {
        let who = match &r.decision.by {
            DecidedBy::Human(n) => format!(" by {}", shown(n, 60)),
            DecidedBy::Policy => " by the policy".to_owned(),
            DecidedBy::Fallback => " by the fallback".to_owned(),
        };
        let state = r.state.as_str();
        let text = match (r.state, &r.decision.reason) {
            (State::Expired, Some(why)) => format!("expired: denied ({})", shown(why, 60)),
            (State::Expired, None) => "expired: denied".to_owned(),
            (_, Some(why)) if r.state == State::Denied => {
                format!("denied{who} ({})", shown(why, 60))
            }
            _ => format!("{state}{who} ({})", r.decision.kind.as_str()),
        };
        Outcome {
            id: r.id.clone(),
            state,
            text,
        }
    }

    pub fn json(&self) -> Value {
        json!({"id": self.id, "state": self.state, "outcome": self.text})
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_token_in_the_command_never_reaches_a_notice() {
        let s = super::shown(
            "curl -H 'Authorization: Bearer ghp_abcdefghijklmnopqrstuvwxyz0123456789' x",
            200,
        );
        assert!(
            !s.contains("ghp_abcdefghijklmnopqrstuvwxyz0123456789"),
            "{s}"
        );
        let long = super::shown(&"a".repeat(500), 10);
        assert_eq!(long, format!("{}…", "a".repeat(10)));
        assert_eq!(super::shown("a\u{202e}b\nc", 10), "a\\u{202e}b\\u{a}c");
    }
}
