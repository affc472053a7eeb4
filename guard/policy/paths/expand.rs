//! What the shell would make of a glob word: brace alternatives (`{a,b}`), then each
//! component's matches in the directory the decision's facts list, so a glob that reaches
//! a symlink into a secret directory (`ssh*/id_rsa` where `sshlink -> ~/.ssh`) is seen as
//! the paths it expands to.

use super::glob::has_glob_chars;
use crate::policy::fs_memo;
use globset::GlobBuilder;
use std::path::{Path, PathBuf};

/// Most alternatives a brace expansion produces before the word counts as unresolvable.
pub(super) const MAX_ALTERNATIVES: usize = 64;
/// Most paths a glob expands to before it counts as unresolvable.
pub(super) const MAX_MATCHES: usize = 512;

/// Brace expansion of `s` (`a{b,c}d` → `abd`, `acd`; nested braces; a `{` without a
/// top-level comma stays literal). `None` past [`MAX_ALTERNATIVES`].
pub(super) fn braces(s: &str) -> Option<Vec<String>> {
    let bytes = s.as_bytes();
    let mut depth = 0usize;
    let mut open = None;
    for (i, &b) in bytes.iter().enumerate() {
        match b {
            b'\\' => continue,
            b'{' => {
                if depth == 0 {
                    open = Some(i);
                }
                depth += 1;
            }
            b'}' if depth > 0 => {
                depth -= 1;
                if depth == 0 {
                    let start = open?;
                    let inner = &s[start + 1..i];
                    let parts = top_level_split(inner);
                    if parts.len() < 2 {
                        // Not an alternation (`{}` or `{x}` or a range): literal here,
                        // the rest may still hold one.
                        let rest = braces(&s[i + 1..])?;
                        return Some(
                            rest.into_iter()
                                .map(|r| format!("{}{r}", &s[..=i]))
                                .collect(),
                        );
                    }
                    let tails = braces(&s[i + 1..])?;
                    let mut out = Vec::new();
                    for p in parts {
                        for alt in braces(p)? {
                            for t in &tails {
                                out.push(format!("{}{alt}{t}", &s[..start]));
                                if out.len() > MAX_ALTERNATIVES {
                                    return None;
                                }
                            }
                        }
                    }
                    return Some(out);
                }
            }
            _ => {}
        }
    }
    Some(vec![s.to_string()])
}

fn top_level_split(s: &str) -> Vec<&str> {
    let mut out = Vec::new();
    let mut depth = 0usize;
    let mut start = 0;
    for (i, b) in s.bytes().enumerate() {
        match b {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            b',' if depth == 0 => {
                out.push(&s[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The existing paths an absolute glob (no braces left) matches, as the shell would list
/// them (a name starting with `.` only matches a pattern starting with `.`). `None` past
/// [`MAX_MATCHES`].
pub(super) fn glob_paths(abs: &Path) -> Option<Vec<PathBuf>> {
    let mut current = vec![PathBuf::from("/")];
    for comp in abs.components().skip(1) {
        let name = comp.as_os_str().to_string_lossy();
        if !has_glob_chars(&name) {
            current.iter_mut().for_each(|p| p.push(&*name));
            continue;
        }
        let Ok(glob) = GlobBuilder::new(&name)
            .literal_separator(true)
            .backslash_escape(true)
            .build()
        else {
            return None;
        };
        let m = glob.compile_matcher();
        let mut next = Vec::new();
        for dir in &current {
            for entry in fs_memo::list_dir(dir).unwrap_or_default() {
                if entry.starts_with('.') && !name.starts_with('.') {
                    continue;
                }
                if m.is_match(&entry) {
                    next.push(dir.join(&entry));
                    if next.len() > MAX_MATCHES {
                        return None;
                    }
                }
            }
        }
        current = next;
    }
    Some(current)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brace_alternatives() {
        assert_eq!(braces("a{b,c}d").unwrap(), vec!["abd", "acd"]);
        assert_eq!(braces("{x,y{1,2}}/z").unwrap(), vec!["x/z", "y1/z", "y2/z"]);
        assert_eq!(braces("a{b}c").unwrap(), vec!["a{b}c"]);
        assert_eq!(braces("{a,b}{c,d}").unwrap().len(), 4);
        assert!(braces("{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}{a,b}").is_none());
    }
}
