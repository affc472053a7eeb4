//! Secret redaction for audit records: secrets never reach the log, whatever field or string
//! they hide in. Applied to every record's fields before it is written.

use regex::Regex;
use serde_json::Value;
use std::sync::LazyLock;

/// What replaces a secret.
pub const REDACTED: &str = "[redacted]";

/// Field names (lowercase, `-`/`_` removed) whose value is always a secret.
const SECRET_FIELDS: &[&str] = &[
    "token",
    "hmac",
    "password",
    "passwd",
    "secret",
    "key",
    "apikey",
    "privatekey",
    "secretkey",
    "authorization",
    "cookie",
];

/// Field-name suffixes that mark a secret (`authToken`, `client_secret`, `db_password`).
const SECRET_SUFFIXES: &[&str] = &["token", "secret", "password", "hmac"];

/// Substrings of environment variable names whose values are secrets.
const ENV_SECRET_WORDS: &[&str] = &["KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL"];

/// Secret shapes inside any string, each with the replacement (`$1` keeps a prefix).
static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    [
        // Anthropic, then OpenAI-style keys.
        (r"sk-ant-[A-Za-z0-9_\-]{8,}", REDACTED),
        (r"\bsk-(?:proj-)?[A-Za-z0-9_\-]{20,}", REDACTED),
        // Google API keys.
        (r"AIza[0-9A-Za-z_\-]{30,}", REDACTED),
        // GitHub tokens (classic and fine-grained).
        (r"\bgh[pousr]_[A-Za-z0-9]{20,}", REDACTED),
        (r"\bgithub_pat_[A-Za-z0-9_]{20,}", REDACTED),
        // Slack tokens, AWS access key ids.
        (r"\bxox[abposr]-[A-Za-z0-9\-]{10,}", REDACTED),
        (r"\bAKIA[0-9A-Z]{16}\b", REDACTED),
        // `Authorization: Bearer …` / `Basic …` anywhere.
        (r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}", "$1 [redacted]"),
        // `--password=x`, `--token x`, `--api-key x` on a command line.
        (
            r"(?i)(--?(?:password|passwd|token|secret|api-?key|access-?key)[= ]+)[^\s'\x22]+",
            "${1}[redacted]",
        ),
        // JSON embedded as text (a raw frame in a rejection record): `"token":"…"`.
        (
            r#"(?i)("(?:token|hmac|password|passwd|secret|key|api_?key|authorization)"\s*:\s*")[^"]*(")"#,
            "${1}[redacted]${2}",
        ),
        // `NAME_TOKEN=value` assignments in shell text or env lists.
        (
            r"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9_]*=)[^\s'\x22]+",
            "${1}[redacted]",
        ),
    ]
    .into_iter()
    // startup: the patterns are constants; a bad one is a programming error caught by tests.
    .map(|(p, r)| (Regex::new(p).expect("redaction pattern"), r))
    .collect()
});

/// A command-line flag whose separate next word is a secret.
static SECRET_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    // startup: constant pattern.
    Regex::new(r"(?i)^--?(?:password|passwd|token|secret|api-?key|access-?key|auth-token)$")
        .expect("secret flag pattern")
});

fn normalize(name: &str) -> String {
    name.chars()
        .filter(|c| *c != '_' && *c != '-')
        .flat_map(char::to_lowercase)
        .collect()
}

fn is_secret_field(name: &str) -> bool {
    let n = normalize(name);
    SECRET_FIELDS.contains(&n.as_str()) || SECRET_SUFFIXES.iter().any(|s| n.ends_with(s))
}

fn is_env_field(name: &str) -> bool {
    let n = normalize(name);
    n == "env" || n == "environment" || n.ends_with("env")
}

fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_uppercase();
    ENV_SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// Replaces every secret shape inside `s`.
pub fn redact_str(s: &str) -> String {
    let mut out = std::borrow::Cow::Borrowed(s);
    for (re, with) in PATTERNS.iter() {
        if re.is_match(&out) {
            out = std::borrow::Cow::Owned(re.replace_all(&out, *with).into_owned());
        }
    }
    out.into_owned()
}

/// Redacts `v` in place: secret-named fields, secret entries of environment maps, and
/// secret shapes in every string.
pub fn redact(v: &mut Value) {
    match v {
        Value::String(s) => {
            let r = redact_str(s);
            if r != *s {
                *s = r;
            }
        }
        Value::Array(items) => {
            // An argv: the word after a secret flag (`--token X`) is the secret.
            let mut next_is_secret = false;
            for item in items.iter_mut() {
                let flag = item.as_str().is_some_and(|s| SECRET_FLAG.is_match(s));
                if next_is_secret && item.is_string() {
                    *item = Value::String(REDACTED.into());
                } else {
                    redact(item);
                }
                next_is_secret = flag;
            }
        }
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_field(k) && !val.is_null() {
                    *val = Value::String(REDACTED.into());
                } else if is_env_field(k) {
                    redact_env(val);
                } else {
                    redact(val);
                }
            }
        }
        _ => {}
    }
}

/// An environment: a map of name → value, or a list of `NAME=value` strings.
fn redact_env(v: &mut Value) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_env_name(k) && !val.is_null() {
                    *val = Value::String(REDACTED.into());
                } else {
                    redact(val);
                }
            }
        }
        other => redact(other),
    }
}
