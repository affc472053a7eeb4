//! The glob half of OpenClaw's allowlist: `compileGlobRegex` semantics, and an index that
//! finds the matching patterns among thousands without testing each one.

use super::js::js_units;
use foldhash::{HashMap, HashMapExt};
use regex::{RegexSet, RegexSetBuilder};

/// Patterns indexed for lookup: exact patterns in a hash map; globs grouped by their literal
/// prefix (the text before the first wildcard, which a target must start with). A small
/// group is a list of token matchers (no compile cost); a large one a regex set. A lookup
/// probes one group per distinct prefix length, so its cost follows the target's length and
/// the few groups it can hit, not the number of rules.
#[derive(Debug, Default)]
pub(super) struct GlobIndex {
    literal: HashMap<String, Vec<usize>>,
    groups: HashMap<String, Group>,
    /// Distinct byte lengths of the keys of `groups`, ascending.
    prefix_lens: Vec<usize>,
}

/// Most patterns in one regex set (a set that fails to build is split in halves).
const CHUNK: usize = 512;

/// Groups larger than this become regex sets.
const SMALL_GROUP: usize = 32;

/// The globs sharing one literal prefix.
#[derive(Debug)]
enum Group {
    Small(Vec<(usize, Vec<Tok>)>),
    Sets(Vec<(RegexSet, Vec<usize>)>),
}

/// One glob token of `compileGlobRegex`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    Lit(char),
    /// `*`: `[^/]*`.
    Star,
    /// `**`: `.*` (JavaScript's `.`: no line terminators).
    Globstar,
    /// `?`: `[^/]`.
    Any,
}

fn tokens(units: &str) -> Vec<Tok> {
    let chars: Vec<char> = units.chars().collect();
    let mut out = Vec::with_capacity(chars.len());
    let mut i = 0;
    while i < chars.len() {
        match chars[i] {
            '*' if chars.get(i + 1) == Some(&'*') => {
                out.push(Tok::Globstar);
                i += 1;
            }
            '*' => out.push(Tok::Star),
            '?' => out.push(Tok::Any),
            c => out.push(Tok::Lit(c)),
        }
        i += 1;
    }
    out
}

fn is_line_terminator(c: char) -> bool {
    matches!(c, '\n' | '\r' | '\u{2028}' | '\u{2029}')
}

/// Anchored match of `toks` against `target` (code-unit form): dynamic programming over
/// target positions, O(tokens × length), no backtracking blow-up.
fn tokens_match(toks: &[Tok], target: &[char]) -> bool {
    let n = target.len();
    let mut dp = vec![false; n + 1];
    dp[0] = true;
    let mut next = vec![false; n + 1];
    for tok in toks {
        next.iter_mut().for_each(|x| *x = false);
        match *tok {
            Tok::Star | Tok::Globstar => {
                let stops = |c: char| {
                    if *tok == Tok::Star {
                        c == '/'
                    } else {
                        is_line_terminator(c)
                    }
                };
                let mut reach = false;
                for j in 0..=n {
                    reach |= dp[j];
                    next[j] = reach;
                    if j < n && stops(target[j]) {
                        reach = false;
                    }
                }
            }
            Tok::Any => {
                for j in 0..n {
                    next[j + 1] = dp[j] && target[j] != '/';
                }
            }
            Tok::Lit(c) => {
                for j in 0..n {
                    next[j + 1] = dp[j] && target[j] == c;
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

impl GlobIndex {
    pub(super) fn build(patterns: Vec<(usize, String)>) -> Self {
        let mut index = GlobIndex::default();
        let mut grouped: HashMap<String, Vec<(usize, String)>> = HashMap::new();
        for (rule, pattern) in patterns {
            let units = js_units(&pattern);
            match units.find(['*', '?']) {
                Some(at) => grouped
                    .entry(units[..at].to_string())
                    .or_default()
                    .push((rule, units)),
                None => index.literal.entry(pattern).or_default().push(rule),
            }
        }
        for (prefix, globs) in grouped {
            let group = if globs.len() <= SMALL_GROUP {
                Group::Small(globs.iter().map(|(r, u)| (*r, tokens(u))).collect())
            } else {
                let regexes: Vec<(usize, String)> =
                    globs.iter().map(|(r, u)| (*r, glob_regex(u))).collect();
                let mut sets = Vec::new();
                for chunk in regexes.chunks(CHUNK) {
                    add_chunk(&mut sets, chunk);
                }
                Group::Sets(sets)
            };
            index.prefix_lens.push(prefix.len());
            index.groups.insert(prefix, group);
        }
        index.prefix_lens.sort_unstable();
        index.prefix_lens.dedup();
        index
    }

    /// Rules whose pattern matches: `literal_target` for exact patterns, `glob_target` (in
    /// code-unit form, dot segments normalised) for globs.
    pub(super) fn hits(&self, literal_target: &str, glob_target: &str, out: &mut Vec<usize>) {
        if let Some(rules) = self.literal.get(literal_target) {
            out.extend(rules);
        }
        let mut chars: Option<Vec<char>> = None;
        for &len in &self.prefix_lens {
            let Some(prefix) = glob_target.get(..len) else {
                if len > glob_target.len() {
                    break;
                }
                continue;
            };
            match self.groups.get(prefix) {
                None => {}
                Some(Group::Small(globs)) => {
                    let chars = chars.get_or_insert_with(|| glob_target.chars().collect());
                    for (rule, toks) in globs {
                        if tokens_match(toks, chars) {
                            out.push(*rule);
                        }
                    }
                }
                Some(Group::Sets(sets)) => {
                    for (set, rules) in sets {
                        out.extend(set.matches(glob_target).into_iter().map(|i| rules[i]));
                    }
                }
            }
        }
    }
}

/// Builds one regex set for `chunk`; too big together, it splits; a single pattern that
/// cannot compile never matches (as a RegExp OpenClaw failed to build would throw).
fn add_chunk(sets: &mut Vec<(RegexSet, Vec<usize>)>, chunk: &[(usize, String)]) {
    let built = RegexSetBuilder::new(chunk.iter().map(|(_, re)| re))
        .size_limit(256 << 20)
        .dfa_size_limit(64 << 20)
        .build();
    match built {
        Ok(set) => sets.push((set, chunk.iter().map(|(rule, _)| *rule).collect())),
        Err(_) if chunk.len() > 1 => {
            let (a, b) = chunk.split_at(chunk.len() / 2);
            add_chunk(sets, a);
            add_chunk(sets, b);
        }
        Err(_) => {}
    }
}

/// `compileGlobRegex`: `**` → `.*`, `*` → `[^/]*`, `?` → `[^/]`, all else literal, anchored.
/// JavaScript's `.` excludes line terminators, so `.*` does too.
/// `units` is the pattern in code-unit form ([`js_units`]).
fn glob_regex(units: &str) -> String {
    let units: Vec<char> = units.chars().collect();
    let mut re = String::from(r"\A");
    let mut i = 0;
    while i < units.len() {
        match units[i] {
            '*' if units.get(i + 1) == Some(&'*') => {
                re.push_str(r"[^\n\r\u{2028}\u{2029}]*");
                i += 2;
                continue;
            }
            '*' => re.push_str("[^/]*"),
            '?' => re.push_str("[^/]"),
            c => re.push_str(&regex::escape(c.encode_utf8(&mut [0; 4]))),
        }
        i += 1;
    }
    re.push_str(r"\z");
    re
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn glob_regex_follows_compile_glob_regex() {
        assert_eq!(glob_regex("/usr/*"), r"\A/usr/[^/]*\z");
        assert_eq!(glob_regex("a**b?"), r"\Aa[^\n\r\u{2028}\u{2029}]*b[^/]\z");
        assert_eq!(glob_regex("a.b"), r"\Aa\.b\z");
    }

    /// The token matcher (small groups) and the regex (large groups) agree.
    #[test]
    fn token_matcher_equals_glob_regex() {
        let pieces = ["a", "/", "*", "**", "?", "\n", "b", ".", "😀"];
        let targets = [
            "", "a", "ab", "a/b", "/a/b/", "a\nb", "😀", "a.b", "//", "a/😀/b",
        ];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..4000 {
            let mut pattern = String::new();
            for _ in 0..(seed % 6) {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                pattern.push_str(pieces[(seed % pieces.len() as u64) as usize]);
            }
            let units = js_units(&pattern);
            let re = regex::Regex::new(&glob_regex(&units)).unwrap();
            let toks = tokens(&units);
            for t in targets {
                let t = js_units(t);
                let chars: Vec<char> = t.chars().collect();
                assert_eq!(
                    tokens_match(&toks, &chars),
                    re.is_match(&t),
                    "{pattern:?} vs {t:?}"
                );
            }
        }
    }
}
