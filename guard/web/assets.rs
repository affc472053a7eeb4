//! The page and its assets, embedded at compile time (plain HTML, CSS and JS; no framework,
//! no CDN, no build step). Every request field is rendered by the scripts with
//! `textContent`, never as markup; the CSP forbids inline script and style.

use super::http::{with_type, Resp};
use hyper::StatusCode;

const INBOX: &str = include_str!("assets/inbox.html");
const HISTORY: &str = include_str!("assets/history.html");
const LOGIN: &str = include_str!("assets/login.html");
const CSS: &str = include_str!("assets/app.css");
const CARD_CSS: &str = include_str!("assets/card.css");
const COMMON_JS: &str = include_str!("assets/common.js");
const CARD_JS: &str = include_str!("assets/card.js");
const INBOX_JS: &str = include_str!("assets/inbox.js");
const INBOX_GATE_JS: &str = include_str!("assets/inbox-gate.js");
const INBOX_QUEUE_JS: &str = include_str!("assets/inbox-queue.js");
const HISTORY_JS: &str = include_str!("assets/history.js");
const GRANTS: &str = include_str!("assets/grants.html");
const GRANTS_JS: &str = include_str!("assets/grants.js");
const SUGGEST_JS: &str = include_str!("assets/suggest.js");
const LOGIN_JS: &str = include_str!("assets/login.js");
const PASSKEY_JS: &str = include_str!("assets/passkey.js");
const AGENT: &str = include_str!("assets/agent.html");
const AGENT_JS: &str = include_str!("assets/agent.js");
const AUDIT: &str = include_str!("assets/audit.html");
const AUDIT_JS: &str = include_str!("assets/audit.js");
const ICON: &str = include_str!("assets/icon.svg");

/// The embedded file at `path`, if any.
pub fn page(path: &str) -> Option<Resp> {
    let (ctype, body) = match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", INBOX),
        "/history" => ("text/html; charset=utf-8", HISTORY),
        "/grants" => ("text/html; charset=utf-8", GRANTS),
        "/assets/grants.js" => ("text/javascript; charset=utf-8", GRANTS_JS),
        "/assets/suggest.js" => ("text/javascript; charset=utf-8", SUGGEST_JS),
        "/agent" => ("text/html; charset=utf-8", AGENT),
        "/assets/agent.js" => ("text/javascript; charset=utf-8", AGENT_JS),
        "/audit" => ("text/html; charset=utf-8", AUDIT),
        "/assets/audit.js" => ("text/javascript; charset=utf-8", AUDIT_JS),
        "/login" => ("text/html; charset=utf-8", LOGIN),
        "/assets/app.css" => ("text/css; charset=utf-8", CSS),
        "/assets/card.css" => ("text/css; charset=utf-8", CARD_CSS),
        "/assets/common.js" => ("text/javascript; charset=utf-8", COMMON_JS),
        "/assets/card.js" => ("text/javascript; charset=utf-8", CARD_JS),
        "/assets/inbox.js" => ("text/javascript; charset=utf-8", INBOX_JS),
        "/assets/inbox-gate.js" => ("text/javascript; charset=utf-8", INBOX_GATE_JS),
        "/assets/inbox-queue.js" => ("text/javascript; charset=utf-8", INBOX_QUEUE_JS),
        "/assets/history.js" => ("text/javascript; charset=utf-8", HISTORY_JS),
        "/assets/login.js" => ("text/javascript; charset=utf-8", LOGIN_JS),
        "/assets/passkey.js" => ("text/javascript; charset=utf-8", PASSKEY_JS),
        "/favicon.ico" | "/assets/icon.svg" => ("image/svg+xml", ICON),
        _ => return None,
    };
    Some(with_type(StatusCode::OK, ctype, body))
}

/// Bidirectional formatting characters (they can make text read differently than it runs).
pub fn is_bidi(c: char) -> bool {
    matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}' | '\u{2066}'..='\u{2069}')
}
