//! JavaScript and Node semantics the allowlist must reproduce: UTF-16 code units,
//! `String.prototype.trim`, `path.posix.basename` and `path.posix.normalize`.

/// A string with one `char` per UTF-16 code unit: surrogate halves map to plane-15
/// private-use characters (no real astral character survives the mapping, so none collide).
pub(super) fn js_units(s: &str) -> String {
    s.encode_utf16()
        .map(|u| match u {
            0xD800..=0xDFFF => {
                char::from_u32(0xF0000 + u32::from(u - 0xD800)).unwrap_or('\u{FFFD}')
            }
            _ => char::from_u32(u32::from(u)).unwrap_or('\u{FFFD}'),
        })
        .collect()
}

/// `String.prototype.trim`: ECMAScript WhiteSpace and LineTerminator (not Rust's set: JS
/// trims U+FEFF and keeps U+0085).
pub fn js_trim(s: &str) -> &str {
    s.trim_matches(|c: char| {
        matches!(
            c,
            '\t' | '\n' | '\u{0B}' | '\u{0C}' | '\r' | ' ' | '\u{A0}' | '\u{1680}' | '\u{2000}'
                ..='\u{200A}'
                    | '\u{2028}'
                    | '\u{2029}'
                    | '\u{202F}'
                    | '\u{205F}'
                    | '\u{3000}'
                    | '\u{FEFF}'
        )
    })
}

/// Node's `path.posix.basename` (trailing slashes ignored).
pub(super) fn node_basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// Node's `path.posix.normalize` (one implementation, shared with the allow-always hash).
pub use super::cwd_argv::posix_normalize as node_posix_normalize;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_normalize_corner_cases() {
        for (input, want) in [
            ("./", "./"),
            ("a/../", "./"),
            ("/usr/bin/../lib/", "/usr/lib/"),
            ("..", ".."),
            ("//a//b", "/a/b"),
        ] {
            assert_eq!(node_posix_normalize(input), want, "{input}");
        }
    }

    #[test]
    fn js_trim_uses_the_ecmascript_set() {
        assert_eq!(js_trim("\u{FEFF} ls\t"), "ls");
        assert_eq!(js_trim("\u{85}ls"), "\u{85}ls");
    }
}
