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
    /// A glob; `None` when it is not modelled (braces, `[[:class:]]`): may match anything.
    Glob(Option<ShellGlob>),
}

impl GlobWord {
    pub(super) fn new(components: &[String]) -> Self {
        let comps = components
            .iter()
            .map(|g| {
                if has_glob_chars(g) {
                    WordComp::Glob(ShellGlob::parse(g))
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
            .zip(rs.iter().zip(&rule.globs))
            .all(|(g, (r, rg))| component_may_match(g, r.as_deref(), rg.as_ref()));
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
            .zip(rs.iter().zip(&rule.globs))
            .all(|(g, (r, rg))| component_may_match(g, r.as_deref(), rg.as_ref()))
}

/// Could word component `g` match rule component `r` (`None`: the rule has a glob there,
/// `rule_glob` when it is modelled)? A literal name against a rule's glob is matched; two
/// globs may always meet.
fn component_may_match(g: &WordComp, r: Option<&str>, rule_glob: Option<&ShellGlob>) -> bool {
    let Some(literal) = r else {
        return match (g, rule_glob) {
            (WordComp::Literal(name), Some(rg)) => rg.matches(name),
            _ => true,
        };
    };
    match g {
        WordComp::Literal(name) => name == literal,
        WordComp::Glob(Some(glob)) => glob.matches(literal),
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

/// One token of a shell glob component.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `?`
    Any,
    /// `*`
    Star,
    /// `[...]` / `[!...]` / `[^...]`
    Class {
        negated: bool,
        ranges: Vec<(char, char)>,
    },
}

/// A compiled shell glob component: `*`, `?`, bracket classes, `\x`. No regex compile, so a
/// word costs nothing to prepare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct ShellGlob(Vec<Tok>);

impl ShellGlob {
    /// `None` for what it does not model (brace expansion, `[[:class:]]`): callers treat
    /// that as "may match anything".
    pub(super) fn parse(g: &str) -> Option<Self> {
        if g.contains('{') {
            return None;
        }
        let chars: Vec<char> = g.chars().collect();
        let mut toks = Vec::with_capacity(chars.len());
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                '*' => toks.push(Tok::Star),
                '?' => toks.push(Tok::Any),
                '\\' if i + 1 < chars.len() => {
                    i += 1;
                    toks.push(Tok::Lit(chars[i]));
                }
                '[' => match parse_class(&chars, i) {
                    Bracket::Class(tok, end) => {
                        toks.push(tok);
                        i = end;
                    }
                    Bracket::Unclosed => toks.push(Tok::Lit('[')),
                    Bracket::Unmodelled => return None,
                },
                c => toks.push(Tok::Lit(c)),
            }
            i += 1;
        }
        Some(ShellGlob(toks))
    }

    /// Anchored match against one name (dynamic programming, no backtracking).
    pub(super) fn matches(&self, name: &str) -> bool {
        let target: Vec<char> = name.chars().collect();
        let n = target.len();
        let mut dp = vec![false; n + 1];
        dp[0] = true;
        let mut next = vec![false; n + 1];
        for tok in &self.0 {
            next.iter_mut().for_each(|x| *x = false);
            match tok {
                Tok::Star => {
                    let mut reach = false;
                    for j in 0..=n {
                        reach |= dp[j];
                        next[j] = reach;
                    }
                }
                _ => {
                    for j in 0..n {
                        next[j + 1] = dp[j] && tok_matches(tok, target[j]);
                    }
                }
            }
            std::mem::swap(&mut dp, &mut next);
            if !dp.iter().any(|&x| x) {
                return false;
            }
        }
        dp[n]
    }
}

fn tok_matches(tok: &Tok, c: char) -> bool {
    match tok {
        Tok::Lit(l) => *l == c,
        Tok::Any | Tok::Star => true,
        Tok::Class { negated, ranges } => {
            ranges.iter().any(|&(lo, hi)| lo <= c && c <= hi) != *negated
        }
    }
}

/// What a `[` starts.
enum Bracket {
    /// A class, ending at this index (the `]`).
    Class(Tok, usize),
    /// No closing `]`: a literal `[`.
    Unclosed,
    /// `[[:alpha:]]`, `[[=a=]]`, `[[.a.]]`: not modelled.
    Unmodelled,
}

/// Parses a bracket expression starting at `chars[start] == '['`.
fn parse_class(chars: &[char], start: usize) -> Bracket {
    let mut j = start + 1;
    let negated = matches!(chars.get(j), Some('!' | '^'));
    if negated {
        j += 1;
    }
    let mut ranges = Vec::new();
    let mut first = true;
    while j < chars.len() {
        let c = chars[j];
        if c == ']' && !first {
            return Bracket::Class(Tok::Class { negated, ranges }, j);
        }
        first = false;
        if c == '[' && matches!(chars.get(j + 1), Some(':' | '=' | '.')) {
            return Bracket::Unmodelled;
        }
        let lo = if c == '\\' && j + 1 < chars.len() {
            j += 1;
            chars[j]
        } else {
            c
        };
        if chars.get(j + 1) == Some(&'-') && chars.get(j + 2).is_some_and(|&h| h != ']') {
            let hi = chars[j + 2];
            ranges.push((lo, hi));
            j += 3;
        } else {
            ranges.push((lo, lo));
            j += 1;
        }
    }
    Bracket::Unclosed
}

#[cfg(test)]
mod tests {
    use super::ShellGlob;

    #[test]
    fn shell_glob_components() {
        let m = |g: &str, name: &str| ShellGlob::parse(g).map(|g| g.matches(name));
        assert_eq!(m(".ss*", ".ssh"), Some(true));
        assert_eq!(m("*", ".ssh"), Some(true));
        assert_eq!(m(".s?h", ".ssh"), Some(true));
        assert_eq!(m(".s?h", ".sh"), Some(false));
        assert_eq!(m(".[a-z]sh", ".ssh"), Some(true));
        assert_eq!(m(".[!s]sh", ".ssh"), Some(false));
        assert_eq!(m(".[^x]sh", ".ssh"), Some(true));
        assert_eq!(m("[]]x", "]x"), Some(true));
        assert_eq!(m("a[", "a["), Some(true));
        assert_eq!(m("\\*", "*"), Some(true));
        assert_eq!(m("\\*", "a"), Some(false));
        assert_eq!(m("*rc", ".netrc"), Some(true));
        assert_eq!(m("*rc", ".netrc.bak"), Some(false));
        assert_eq!(m("[[:alpha:]]", "a"), None);
        assert_eq!(m("{a,b}", "a"), None);
    }
}
