//! Secret redaction for audit records: secrets never reach the log, whatever field or string
//! they hide in. Applied to every record's fields before it is written.

use regex::{Regex, RegexSet};
use serde_json::Value;
use std::borrow::Cow;
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
const PATTERN_SOURCES: [(&str, &str); 11] = [
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
    (
        r"(?i)\b(bearer|basic)\s+[A-Za-z0-9._~+/=\-]{6,}",
        "$1 [redacted]",
    ),
    // `--password=x`, `--token x`, `--api-key x` on a command line.
    (
        r"(?i)(--?(?:password|passwd|token|secret|api-?key|access-?key)[= ]+)[^\s'\x22]+",
        "${1}[redacted]",
    ),
    // A password in a URL's userinfo (`https://user:pass@host`, `postgres://u:p@db`).
    (
        r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/:@'\x22]+:)[^\s/@'\x22]+@",
        "${1}[redacted]@",
    ),
    // `NAME_TOKEN=value` assignments in shell text or env lists.
    (
        r"(?i)\b([A-Z0-9_]*(?:KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)[A-Z0-9_]*=)[^\s'\x22]+",
        "${1}[redacted]",
    ),
];

/// JSON embedded as text (a raw frame in a rejection record): `"token":"…"`.
const JSON_SECRET: (&str, &str) = (
    r#"(?i)("(?:token|hmac|password|passwd|secret|key|api_?key|authorization)"\s*:\s*")[^"]*(")"#,
    "${1}[redacted]${2}",
);

/// The patterns in the order they are applied (the JSON one before the assignments, as a
/// `"TOKEN":"x"` text is JSON first).
fn ordered() -> impl Iterator<Item = (&'static str, &'static str)> {
    let (head, tail) = PATTERN_SOURCES.split_at(PATTERN_SOURCES.len() - 1);
    head.iter()
        .copied()
        .chain(std::iter::once(JSON_SECRET))
        .chain(tail.iter().copied())
}

#[allow(clippy::expect_used)] // startup: constant patterns, tested
static PATTERNS: LazyLock<Vec<(Regex, &'static str)>> = LazyLock::new(|| {
    // startup: the patterns are constants; a bad one is a programming error caught by tests.
    ordered()
        .map(|(p, r)| (Regex::new(p).expect("redaction pattern"), r))
        .collect()
});

/// All patterns at once: one scan tells whether a string needs any replacement (most do
/// not), instead of one scan per pattern.
#[allow(clippy::expect_used)] // startup: constant patterns, tested
static ANY: LazyLock<RegexSet> = LazyLock::new(|| {
    // startup: constant patterns.
    RegexSet::new(ordered().map(|(p, _)| p)).expect("redaction pattern set")
});

/// A command-line flag whose separate next word is a secret.
#[allow(clippy::expect_used)] // startup: constant patterns, tested
static SECRET_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    // startup: constant pattern.
    Regex::new(r"(?i)^--?(?:password|passwd|token|secret|api-?key|access-?key|auth-token)$")
        .expect("secret flag pattern")
});

/// `name` lowercased without `-` and `_`, written into `buf` (reused across keys, so a
/// record costs one allocation here, not one per key).
fn normalize<'b>(name: &str, buf: &'b mut String) -> &'b str {
    buf.clear();
    if name.is_ascii() {
        let kept = name.bytes().filter(|b| *b != b'_' && *b != b'-');
        buf.extend(kept.map(|b| char::from(b.to_ascii_lowercase())));
    } else {
        let kept = name.chars().filter(|c| *c != '_' && *c != '-');
        buf.extend(kept.flat_map(char::to_lowercase));
    }
    buf
}

fn is_secret_field(n: &str) -> bool {
    SECRET_FIELDS.contains(&n) || SECRET_SUFFIXES.iter().any(|s| n.ends_with(s))
}

fn is_env_field(n: &str) -> bool {
    n == "env" || n == "environment" || n.ends_with("env")
}

fn is_secret_env_name(name: &str) -> bool {
    let upper = name.to_uppercase();
    ENV_SECRET_WORDS.iter().any(|w| upper.contains(w))
}

/// Replaces every secret shape inside `s`.
pub fn redact_str(s: &str) -> String {
    redact_cow(s).into_owned()
}

/// [`redact_str`] without a copy when nothing matches.
fn redact_cow(s: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(s);
    if !ANY.is_match(s) {
        return out;
    }
    for (re, with) in PATTERNS.iter() {
        if re.is_match(&out) {
            out = Cow::Owned(re.replace_all(&out, *with).into_owned());
        }
    }
    out
}

/// Redacts `v` in place: secret-named fields, secret entries of environment maps, and
/// secret shapes in every string.
pub fn redact(v: &mut Value) {
    redact_in(v, &mut String::new());
}

fn redact_in(v: &mut Value, buf: &mut String) {
    match v {
        Value::String(s) => {
            if let Cow::Owned(r) = redact_cow(s) {
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
                    redact_in(item, buf);
                }
                next_is_secret = flag;
            }
        }
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                let n = normalize(k, buf);
                if is_secret_field(n) && !val.is_null() {
                    *val = Value::String(REDACTED.into());
                } else if is_env_field(n) {
                    redact_env(val, buf);
                } else {
                    redact_in(val, buf);
                }
            }
        }
        _ => {}
    }
}

/// An environment: a map of name → value, or a list of `NAME=value` strings.
fn redact_env(v: &mut Value, buf: &mut String) {
    match v {
        Value::Object(map) => {
            for (k, val) in map.iter_mut() {
                if is_secret_env_name(k) && !val.is_null() {
                    *val = Value::String(REDACTED.into());
                } else {
                    redact_in(val, buf);
                }
            }
        }
        other => redact_in(other, buf),
    }
}
