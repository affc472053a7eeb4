//! The shell's quoting, decoded without running anything: unquoted words (escapes, globs,
//! `~`), double-quoted text, and `$'…'` strings.

use super::Builder;

/// An unquoted word: backslash escapes, glob characters, leading `~`.
pub(super) fn unquoted(text: &str, b: &mut Builder, home: &str, cwd: Option<&str>) {
    let mut rest = text;
    if b.value.is_empty() {
        if rest == "~" {
            b.value.push_str(home);
            return;
        }
        if let (Some(r), Some(cwd)) = (rest.strip_prefix("~+"), cwd) {
            if r.is_empty() || r.starts_with('/') {
                b.value.push_str(cwd);
                rest = r;
                if rest.is_empty() {
                    return;
                }
            }
        }
        if let Some(r) = rest.strip_prefix("~/") {
            b.value.push_str(home);
            b.value.push('/');
            rest = r;
        } else if rest.starts_with('~') && !b.value.is_empty() {
            // `~+` resolved above.
        } else if rest.starts_with('~') {
            // `~user`: another user's home.
            b.known = false;
        }
    }
    // Most words are plain text: copied whole.
    if !rest
        .bytes()
        .any(|c| matches!(c, b'\\' | b'*' | b'?' | b'[' | b'{' | b'}'))
    {
        b.value.push_str(rest);
        return;
    }
    let mut chars = rest.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                if let Some(n) = chars.next() {
                    if n != '\n' {
                        b.value.push(n);
                    }
                }
            }
            '*' | '?' | '[' => {
                b.glob = true;
                b.value.push(c);
            }
            // Brace expansion (`{a,b}`, `{1..3}`); tree-sitter splits it into several
            // words, so any brace marks the word.
            '{' | '}' => {
                b.glob = true;
                b.value.push(c);
            }
            _ => b.value.push(c),
        }
    }
}

/// Text inside double quotes: only `\$ \` \" \\ \newline` are escapes.
pub(super) fn double_quoted(text: &str, b: &mut Builder) {
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.peek() {
                Some('$' | '`' | '"' | '\\') => {
                    if let Some(n) = chars.next() {
                        b.value.push(n);
                    }
                }
                Some('\n') => {
                    chars.next();
                }
                _ => b.value.push(c),
            }
        } else {
            b.value.push(c);
        }
    }
}

/// Decodes `$'…'` as bash does; `None` for escapes not handled (the value is then unknown).
pub(super) fn ansi_c(text: &str) -> Option<String> {
    let body = text.strip_prefix("$'")?.strip_suffix('\'')?;
    let mut out = String::new();
    let mut chars = body.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        let e = chars.next()?;
        let simple = match e {
            'a' => Some('\u{7}'),
            'b' => Some('\u{8}'),
            'e' | 'E' => Some('\u{1b}'),
            'f' => Some('\u{c}'),
            'n' => Some('\n'),
            'r' => Some('\r'),
            't' => Some('\t'),
            'v' => Some('\u{b}'),
            '\\' | '\'' | '"' | '?' => Some(e),
            _ => None,
        };
        if let Some(ch) = simple {
            out.push(ch);
            continue;
        }
        let (radix, max) = match e {
            'x' => (16, 2),
            '0'..='7' => (8, 2),
            _ => return None,
        };
        let mut digits = String::new();
        if radix == 8 {
            digits.push(e);
        }
        while digits.len() < max + usize::from(radix == 8) {
            match chars.peek() {
                Some(d) if d.is_digit(radix) => {
                    digits.push(*d);
                    chars.next();
                }
                _ => break,
            }
        }
        let n = u32::from_str_radix(&digits, radix).ok()?;
        if n == 0 {
            return None;
        }
        out.push(char::from_u32(n).filter(char::is_ascii)?);
    }
    Some(out)
}
