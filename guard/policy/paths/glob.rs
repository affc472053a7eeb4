//! Shell globs against sensitive rules: could a word like `~/.ss*/id_*` expand to a path a
//! rule covers? Answered component by component, conservatively (true when unsure).

use super::SensitiveRule;

/// Glob syntax (brace expansion included: the shell expands it before globbing).
pub(super) fn has_glob_chars(s: &str) -> bool {
    s.contains(['*', '?', '[', '{'])
}

/// Removes globset backslash escapes from a literal rule component.
pub(super) fn unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '[' => {
                // globset::escape writes `[x]` for a metacharacter x.
                let inner: String = chars.by_ref().take_while(|&c| c != ']').collect();
                out.push_str(&inner);
            }
            '\\' => out.extend(chars.next()),
            other => out.push(other),
        }
    }
    out
}

/// A shell word split into path components, each compiled once.
pub(super) struct GlobWord {
    comps: Vec<WordComp>,
    /// Index of the first `**` component (globstar spans any depth).
    globstar: Option<usize>,
}

enum WordComp {
    /// No glob syntax: the name itself (shell backslashes removed).
    Literal(String),
    /// A glob; `None` when it cannot be compiled (braces, odd brackets): may match anything.
    Glob(Option<regex::Regex>),
}

impl GlobWord {
    pub(super) fn new(components: &[String]) -> Self {
        let comps = components
            .iter()
            .map(|g| {
                if has_glob_chars(g) {
                    WordComp::Glob(shell_component_regex(g))
                } else {
                    WordComp::Literal(shell_unescape(g))
                }
            })
            .collect();
        GlobWord {
            comps,
            globstar: components.iter().position(|g| g.contains("**")),
        }
    }
}

/// Does the glob word possibly match a path the rule covers? With `contain`, a glob matching
/// an ancestor of the rule's path counts too.
pub(super) fn glob_hits_rule(word: &GlobWord, rule: &SensitiveRule, contain: bool) -> bool {
    let rs = &rule.literals;
    if let Some(pos) = word.globstar {
        return word.comps[..pos.min(rs.len())]
            .iter()
            .zip(rs)
            .all(|(g, r)| component_may_match(g, r.as_deref()));
    }
    let n = word.comps.len();
    let len_ok = if contain {
        true
    } else if rule.dir {
        n >= rs.len()
    } else {
        n == rs.len()
    };
    len_ok
        && word
            .comps
            .iter()
            .zip(rs)
            .all(|(g, r)| component_may_match(g, r.as_deref()))
}

/// Could word component `g` match rule component `r` (`None`: the rule has a glob there)?
fn component_may_match(g: &WordComp, r: Option<&str>) -> bool {
    let Some(literal) = r else {
        return true;
    };
    match g {
        WordComp::Literal(name) => name == literal,
        WordComp::Glob(Some(re)) => re.is_match(literal),
        WordComp::Glob(None) => true,
    }
}

/// A rule component as a literal name, or `None` when it holds real glob syntax (the home
/// is inserted glob-escaped, which does not count).
pub(super) fn rule_literal(r: &str) -> Option<String> {
    let literal = unescape(r);
    (!has_glob_chars(r) || r == globset::escape(&literal)).then_some(literal)
}

/// Removes shell backslash quoting from a literal word component.
fn shell_unescape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        match c {
            '\\' => out.extend(chars.next()),
            other => out.push(other),
        }
    }
    out
}

/// A shell glob component as an anchored regex (`*`, `?`, `[...]`, `[!...]`, `\x`).
fn shell_component_regex(g: &str) -> Option<regex::Regex> {
    if g.contains('{') {
        return None;
    }
    let mut re = String::from("^");
    let chars: Vec<char> = g.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' => re.push_str(".*"),
            '?' => re.push('.'),
            '\\' if i + 1 < chars.len() => {
                i += 1;
                re.push_str(&regex::escape(&chars[i].to_string()));
            }
            '[' => match chars[i + 1..].iter().skip(1).position(|&c| c == ']') {
                Some(off) => {
                    let body: String = chars[i + 1..i + 2 + off].iter().collect();
                    let body = body
                        .strip_prefix('!')
                        .or_else(|| body.strip_prefix('^'))
                        .map(|b| format!("^{b}"))
                        .unwrap_or(body);
                    // Escape regex-only syntax inside the class, keep ranges and negation.
                    let body: String = body
                        .chars()
                        .enumerate()
                        .map(|(k, c)| match c {
                            '^' if k == 0 => "^".to_string(),
                            '-' => "-".to_string(),
                            c => regex::escape(&c.to_string()),
                        })
                        .collect();
                    re.push('[');
                    re.push_str(&body);
                    re.push(']');
                    i += 2 + off;
                }
                None => re.push_str(r"\["),
            },
            c => re.push_str(&regex::escape(&c.to_string())),
        }
        i += 1;
    }
    re.push('$');
    regex::Regex::new(&re).ok()
}
