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

/// Does the glob (components `gs`) possibly match a path the rule covers? With `contain`, a
/// glob matching an ancestor of the rule's path counts too.
pub(super) fn glob_hits_rule(gs: &[String], rule: &SensitiveRule, contain: bool) -> bool {
    let rs = &rule.components;
    if let Some(pos) = gs.iter().position(|g| g.contains("**")) {
        // globstar spans any depth: only the part before it constrains.
        return gs[..pos.min(rs.len())]
            .iter()
            .zip(rs)
            .all(|(g, r)| component_may_match(g, r));
    }
    let len_ok = if contain {
        true
    } else if rule.dir {
        gs.len() >= rs.len()
    } else {
        gs.len() == rs.len()
    };
    len_ok && gs.iter().zip(rs).all(|(g, r)| component_may_match(g, r))
}

/// Could shell glob component `g` match rule component `r`?
fn component_may_match(g: &str, r: &str) -> bool {
    if has_glob_chars(r) && r != globset::escape(&unescape(r)) {
        return true;
    }
    let literal = unescape(r);
    match shell_component_regex(g) {
        Some(re) => re.is_match(&literal),
        None => true,
    }
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
