//! What a reviewer sees of each environment override: everything except the parts that look
//! secret, so `DATABASE_URL=postgres://u:…@prod-db/app` still names its host, and a variable
//! the command reads (`eval "$NOTE"`) shows the code it carries. A secret part is hidden
//! (length only) when it is a plain token that cannot be code; where the command reads the
//! variable, a secret-looking part holding any other character is shown, marked, because
//! it may run. The hash binds the real value through `sha256` either way.

use crate::policy::request::{EnvPart, EnvShown};
use sha2::{Digest, Sha256};

/// What replaces a secret in [`crate::audit::redact_str`]'s output (`audit::redact::REDACTED`).
const REDACTED: &str = "[redacted]";

/// `name=value` as a card shows it. `reads` are the words of what runs (argv, shell text):
/// a variable they name is `expanded`.
pub fn shown(name: &str, value: &str, dropped: bool, reads: &[&str]) -> EnvShown {
    let expanded = reads.iter().any(|w| names_var(w, name));
    let mut parts = split(name, value);
    for p in &mut parts {
        let Some(t) = &p.text else { continue };
        // Hidden unless the command reads it and it could be code (not a plain token).
        if p.secret && (!expanded || plain_token(t)) {
            p.text = None;
        }
    }
    let whole = parts.iter().all(|p| p.text.is_some());
    EnvShown {
        name: name.to_owned(),
        value: whole.then(|| value.to_owned()),
        parts,
        len: value.len(),
        sha256: hex::encode(Sha256::digest(value.as_bytes())),
        dropped,
        expanded,
    }
}

/// The value in pieces with their text (secret pieces still carry it: the caller hides).
fn split(name: &str, value: &str) -> Vec<EnvPart> {
    let part = |t: &str, secret: bool| EnvPart {
        text: Some(t.to_owned()),
        secret,
        len: t.len(),
    };
    if value.is_empty() {
        return Vec::new();
    }
    if crate::sandbox::env::is_secret(name) {
        return vec![part(value, true)];
    }
    let red = crate::audit::redact_str(value);
    if red == value {
        return vec![part(value, false)];
    }
    // The redacted text is the value with each secret replaced: its literal pieces appear in
    // the value in order, and what lies between them is secret.
    let mut out = Vec::new();
    let mut at = 0;
    let pieces: Vec<&str> = red.split(REDACTED).collect();
    for (i, lit) in pieces.iter().enumerate() {
        let found = if i == 0 {
            value.starts_with(lit).then_some(0)
        } else if i == pieces.len() - 1 {
            value
                .len()
                .checked_sub(lit.len())
                .filter(|s| *s >= at && value.ends_with(lit))
        } else {
            value[at..].find(lit).map(|o| o + at)
        };
        // Not derivable: the whole value counts as secret (hidden rather than half-shown).
        let Some(start) = found else {
            return vec![part(value, true)];
        };
        if start > at {
            out.push(part(&value[at..start], true));
        }
        if !lit.is_empty() {
            out.push(part(lit, false));
        }
        at = start + lit.len();
    }
    out
}

/// Characters a token is made of: none of them is shell syntax.
fn plain_token(t: &str) -> bool {
    !t.is_empty()
        && t.bytes().all(|b| {
            b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-' | b'+' | b'/' | b'=')
        })
}

/// Whether `word` names the variable `name` (`$NAME`, `${NAME}`, `printenv NAME`, or an
/// indirect `${!…}` that may name any).
fn names_var(word: &str, name: &str) -> bool {
    if name.is_empty() {
        return false;
    }
    if word.contains("${!") {
        return true;
    }
    let ident = |b: u8| b.is_ascii_alphanumeric() || b == b'_';
    let bytes = word.as_bytes();
    let mut from = 0;
    while let Some(i) = word[from..].find(name) {
        let s = from + i;
        let e = s + name.len();
        let before = s == 0 || !ident(bytes[s - 1]);
        let after = e == bytes.len() || !ident(bytes[e]);
        if before && after {
            return true;
        }
        from = s + 1;
        if from >= word.len() {
            break;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(e: &EnvShown) -> Vec<(Option<&str>, bool)> {
        e.parts
            .iter()
            .map(|p| (p.text.as_deref(), p.secret))
            .collect()
    }

    #[test]
    fn only_the_secret_part_is_hidden_and_a_read_variable_shows_its_code() {
        let url = "postgres://app:hunter2pass@prod-db.internal/app";
        let e = shown("DATABASE_URL", url, false, &["psql"]);
        assert_eq!(
            texts(&e),
            [
                (Some("postgres://app:"), false),
                (None, true),
                (Some("@prod-db.internal/app"), false)
            ]
        );
        assert_eq!(e.value, None);
        assert_eq!(e.len, url.len());
        let note = "touch pwned-env; # sk-ant-abcdefghijklmnopqrstuvwxyz0123456789";
        // Not read by the command: the token is hidden, the rest is shown.
        let e = shown("NOTE", note, false, &["ls"]);
        assert_eq!(texts(&e)[0], (Some("touch pwned-env; # "), false));
        assert_eq!(texts(&e)[1], (None, true));
        // Read (`eval "$NOTE"`): a plain token stays hidden, the code is shown.
        let e = shown("NOTE", note, false, &["sh", "-c", "eval \"$NOTE\""]);
        assert!(e.expanded);
        assert_eq!(texts(&e)[0], (Some("touch pwned-env; # "), false));
        // A secret-looking part that could be code is shown where the command reads it.
        let sneaky = "x://u:$(touch${IFS}p)@h";
        let e = shown("U", sneaky, false, &["eval ${U}"]);
        assert!(
            texts(&e).contains(&(Some("$(touch${IFS}p)"), true)),
            "{e:?}"
        );
        let e = shown("U", sneaky, false, &["ls"]);
        assert!(texts(&e).contains(&(None, true)), "{e:?}");
        // A secret name hides the whole value unless read and code-like.
        let e = shown("API_TOKEN", "s3cr3t-value-7e1", false, &["echo $API_TOKEN"]);
        assert_eq!(texts(&e), [(None, true)]);
        assert_eq!(e.sha256.len(), 64);
        let e = shown("TZ", "UTC", false, &[]);
        assert_eq!(e.value.as_deref(), Some("UTC"));
    }

    #[test]
    fn the_marker_is_the_one_redaction_writes() {
        assert_eq!(crate::audit::redact_str("sk-ant-abcdefghijkl"), REDACTED);
    }

    #[test]
    fn a_name_is_read_only_as_a_whole_identifier() {
        for (w, n, want) in [
            ("$NOTE", "NOTE", true),
            ("${NOTE}", "NOTE", true),
            ("eval \"$NOTE\"", "NOTE", true),
            ("$NOTES", "NOTE", false),
            ("$MYNOTE", "NOTE", false),
            ("printenv NOTE", "NOTE", true),
            ("${!prefix*}", "NOTE", true),
            ("ls", "NOTE", false),
        ] {
            assert_eq!(names_var(w, n), want, "{w} {n}");
        }
    }
}
