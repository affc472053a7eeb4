//! OpenClaw's exec allowlist semantics (openclaw-protocol.md §2.1), byte for byte: the glob
//! rules of `matchesExecAllowlistPattern`, the path-vs-bare-name split of `hasPathSelector`,
//! the entry order of `matchAllowlist` and the ECMAScript `argPattern` of `matchArgPattern`.
//! This module owns that compatibility; it compiles the rules once so a lookup among 10,000
//! entries costs a hash probe and a few regex-set scans, not a walk over every rule.
//!
//! JavaScript strings are UTF-16 and OpenClaw's regexes have no `u` flag, so `?` matches one
//! UTF-16 code unit. Glob patterns and targets are therefore matched in a "code unit" form
//! where each surrogate half is its own `char` (see [`js_units`]), and `argPattern` runs on
//! `regress` (an ECMAScript engine) over UTF-16 in UCS-2 mode.

use crate::openclaw::allow_always::{cwd_argv_pattern, CWD_ARGV_PREFIX, LEGACY_ARGV_PREFIX};
use regex::{RegexSet, RegexSetBuilder};
use std::collections::HashMap;
use std::path::Path;

/// One allowlist entry, as OpenClaw stores it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Rule {
    pub pattern: String,
    pub arg_pattern: Option<String>,
    /// `source: "allow-always"` (a grant persisted by an `allow-always` decision).
    pub allow_always: bool,
}

/// The command being checked, as OpenClaw resolves it.
#[derive(Debug, Clone, Copy)]
pub struct Target<'a> {
    /// argv[0] as written (after wrapper unwrapping).
    pub raw_executable: &'a str,
    /// The executable OpenClaw found (PATH lookup or cwd-relative path), before realpath.
    /// Bare-name globs match its basename. `None` falls back to `resolved_real_path`.
    pub resolved_path: Option<&'a Path>,
    /// `realpath` of the executable. Path globs match it.
    pub resolved_real_path: Option<&'a Path>,
    pub argv: &'a [String],
    pub cwd: &'a str,
}

/// Which entry allowed the command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllowMatch {
    /// A bare `*` entry (no argPattern, not allow-always): everything is allowed.
    Wildcard,
    /// A path or name pattern (with a matching regex argPattern, or none).
    Pattern { rule: usize },
    /// A `sha256:cwd-argv:v1:` grant equal to this exact argv + cwd.
    AllowAlways { rule: usize },
}

/// How an entry's argPattern decides, compiled.
#[derive(Debug)]
enum ArgMatcher {
    /// No argPattern: the pattern alone allows (a path-only match, lowest priority).
    PathOnly,
    /// `sha256:cwd-argv:v1:<hex>`: equal to the hash of this argv + cwd.
    CwdHash(String),
    /// An ECMAScript regex over argv[1..]; `nul` = NUL-joined subject.
    Regex { re: regress::Regex, nul: bool },
    /// Legacy hash, allow-always without a cwd-bound hash, or an invalid regex.
    Never,
}

/// Patterns indexed for lookup: exact patterns in a hash map; globs grouped by their literal
/// prefix (the text before the first wildcard, which a target must start with). A small
/// group is a list of token matchers (no compile cost); a large one a regex set. A lookup
/// probes one group per distinct prefix length, so its cost follows the target's length and
/// the few groups it can hit, not the number of rules.
#[derive(Debug, Default)]
struct GlobIndex {
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
    fn build(patterns: Vec<(usize, String)>) -> Self {
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
    fn hits(&self, literal_target: &str, glob_target: &str, out: &mut Vec<usize>) {
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

/// A compiled allowlist.
#[derive(Debug)]
pub struct CompiledAllowlist {
    args: Vec<ArgMatcher>,
    /// First bare `*` entry (no argPattern, not allow-always).
    wildcard: Option<usize>,
    /// Patterns with a path selector (`/`, `\`, `~`): matched against the real path.
    paths: GlobIndex,
    /// Bare-name patterns: matched against the basename, only for PATH lookups.
    names: GlobIndex,
}

impl CompiledAllowlist {
    /// Compiles `rules` with `~` = `home`. Bad rules (empty pattern, invalid regex, legacy
    /// hash) are kept in place but never match, so rule indices stay those of `rules`.
    pub fn compile(rules: &[Rule], home: &Path) -> Self {
        let home = node_posix_normalize(&home.to_string_lossy());
        let home = if home.len() > 1 {
            home.trim_end_matches('/').to_string()
        } else {
            home
        };
        let mut args = Vec::with_capacity(rules.len());
        let mut wildcard = None;
        let mut paths = Vec::new();
        let mut names = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pattern = js_trim(&rule.pattern);
            let arg = rule.arg_pattern.as_deref().filter(|a| !a.is_empty());
            if pattern == "*" && arg.is_none() && !rule.allow_always && wildcard.is_none() {
                wildcard = Some(i);
            }
            args.push(compile_arg(arg, rule.allow_always));
            if pattern.is_empty() {
                continue;
            }
            if has_path_selector(pattern) {
                paths.push((i, normalize_pattern(pattern, &home)));
            } else if pattern != "*" {
                names.push((i, normalize_pattern(pattern, &home)));
            }
        }
        CompiledAllowlist {
            args,
            wildcard,
            paths: GlobIndex::build(paths),
            names: GlobIndex::build(names),
        }
    }

    /// The index of the bare `*` entry that makes [`AllowMatch::Wildcard`], if any.
    pub fn wildcard_rule(&self) -> Option<usize> {
        self.wildcard
    }

    /// OpenClaw's `matchAllowlist`: a bare `*` wins; then, in entry order, the first entry
    /// whose pattern and argPattern both match; else the first pattern-only entry.
    pub fn matches(&self, target: &Target) -> Option<AllowMatch> {
        self.matched_rule(target).map(|(rule, how)| match how {
            Hit::Wildcard => AllowMatch::Wildcard,
            Hit::Pattern => AllowMatch::Pattern { rule },
            Hit::AllowAlways => AllowMatch::AllowAlways { rule },
        })
    }

    /// Like [`Self::matches`], but always names the entry (the wildcard's too), as
    /// OpenClaw's function returns the entry itself.
    pub fn matched_rule(&self, target: &Target) -> Option<(usize, Hit)> {
        let raw = js_trim(target.raw_executable);
        if raw.is_empty() {
            return None;
        }
        if let Some(w) = self.wildcard {
            return Some((w, Hit::Wildcard));
        }
        let resolved = target
            .resolved_path
            .or(target.resolved_real_path)
            .map(|p| p.to_string_lossy().into_owned())
            .filter(|p| !p.is_empty())?;
        let real = target
            .resolved_real_path
            .map(|p| js_trim(&p.to_string_lossy()).to_string())
            .unwrap_or_default();
        let trust = if real.is_empty() {
            resolved.clone()
        } else {
            real
        };

        let mut hits = Vec::new();
        let (lit, glob) = match_targets(&trust);
        self.paths.hits(&lit, &glob, &mut hits);
        if !has_path_selector(raw) {
            let (lit, glob) = match_targets(node_basename(&resolved));
            self.names.hits(&lit, &glob, &mut hits);
        }
        hits.sort_unstable();
        hits.dedup();

        let mut path_only = None;
        let mut cwd_hash: Option<String> = None;
        for rule in hits {
            match &self.args[rule] {
                ArgMatcher::PathOnly => {
                    path_only.get_or_insert(rule);
                }
                ArgMatcher::CwdHash(want) => {
                    let have =
                        cwd_hash.get_or_insert_with(|| cwd_argv_pattern(target.cwd, target.argv));
                    if have == want {
                        return Some((rule, Hit::AllowAlways));
                    }
                }
                ArgMatcher::Regex { re, nul } => {
                    if arg_regex_matches(re, *nul, target.argv) {
                        return Some((rule, Hit::Pattern));
                    }
                }
                ArgMatcher::Never => {}
            }
        }
        path_only.map(|rule| (rule, Hit::Pattern))
    }
}

/// How an entry matched (see [`AllowMatch`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hit {
    Wildcard,
    Pattern,
    AllowAlways,
}

fn compile_arg(arg: Option<&str>, allow_always: bool) -> ArgMatcher {
    match arg {
        None if allow_always => ArgMatcher::Never,
        None => ArgMatcher::PathOnly,
        Some(a) if a.starts_with(CWD_ARGV_PREFIX) => ArgMatcher::CwdHash(a.to_string()),
        Some(_) if allow_always => ArgMatcher::Never,
        Some(a) if a.starts_with(LEGACY_ARGV_PREFIX) => ArgMatcher::Never,
        Some(a) => {
            // `new RegExp(argPattern)`: no flags, so the pattern is UTF-16 code units too.
            match regress::Regex::from_unicode(a.encode_utf16().map(u32::from), "") {
                Ok(re) => ArgMatcher::Regex {
                    re,
                    nul: a.contains('\0'),
                },
                Err(_) => ArgMatcher::Never,
            }
        }
    }
}

/// `matchArgPattern`'s subject: argv[1..] space-joined, or NUL-joined with a trailing NUL
/// (`"\0\0"` for no arguments) when the pattern contains NUL.
fn arg_regex_matches(re: &regress::Regex, nul: bool, argv: &[String]) -> bool {
    let args = argv.get(1..).unwrap_or(&[]);
    let subject = if !nul {
        args.join(" ")
    } else if args.is_empty() {
        "\0\0".to_string()
    } else {
        let mut s = args.join("\0");
        s.push('\0');
        s
    };
    let units: Vec<u16> = subject.encode_utf16().collect();
    re.find_from_ucs2(&units, 0).next().is_some()
}

/// `hasPathSelector`.
pub fn has_path_selector(value: &str) -> bool {
    value.contains(['/', '\\', '~'])
}

/// The pattern half of `matchesExecAllowlistPattern`: leading `~` (alone or before `/` or
/// `\`) becomes home, then `normalizeMatchTarget` (`\\` pairs become `/`).
fn normalize_pattern(pattern: &str, home: &str) -> String {
    let expanded = match pattern.strip_prefix('~') {
        Some(rest) if rest.is_empty() || rest.starts_with(['/', '\\']) => format!("{home}{rest}"),
        _ => pattern.to_string(),
    };
    normalize_match_target(&expanded)
}

/// `normalizeMatchTarget` on Linux.
fn normalize_match_target(value: &str) -> String {
    value.replace("\\\\", "/")
}

/// The two forms of a target: exact (for literal patterns) and, for globs, dot segments
/// normalised (`hasDotPathSegment` → `path.posix.normalize`) in code-unit form.
fn match_targets(target: &str) -> (String, String) {
    let literal = normalize_match_target(target);
    let has_dot = literal
        .replace('\\', "/")
        .split('/')
        .any(|s| s == "." || s == "..");
    let glob = if has_dot {
        normalize_match_target(&node_posix_normalize(&literal))
    } else {
        literal.clone()
    };
    (literal, js_units(&glob))
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

/// A string with one `char` per UTF-16 code unit: surrogate halves map to plane-15
/// private-use characters (no real astral character survives the mapping, so none collide).
fn js_units(s: &str) -> String {
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
fn node_basename(path: &str) -> &str {
    let trimmed = path.trim_end_matches('/');
    if trimmed.is_empty() {
        return "";
    }
    trimmed.rsplit('/').next().unwrap_or(trimmed)
}

/// Node's `path.posix.normalize`, including its relative-path corner cases (`./`, `..`).
pub fn node_posix_normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let mut out = parts.join("/");
    if out.is_empty() {
        if absolute {
            return "/".into();
        }
        return if trailing { "./".into() } else { ".".into() };
    }
    if trailing {
        out.push('/');
    }
    if absolute {
        out.insert(0, '/');
    }
    out
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
