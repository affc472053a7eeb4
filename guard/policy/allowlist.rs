//! OpenClaw's exec allowlist semantics (docs/openclaw-protocol.md §2.1), byte for byte: the glob
//! rules of `matchesExecAllowlistPattern`, the path-vs-bare-name split of `hasPathSelector`,
//! the entry order of `matchAllowlist` and the ECMAScript `argPattern` of `matchArgPattern`.
//! This module owns that compatibility; it compiles the rules once so a lookup among 10,000
//! entries costs a hash probe and a few regex-set scans, not a walk over every rule.
//!
//! JavaScript strings are UTF-16 and OpenClaw's regexes have no `u` flag, so `?` matches one
//! UTF-16 code unit. Glob patterns and targets are therefore matched in a "code unit" form
//! where each surrogate half is its own `char` (see [`js_units`]), and `argPattern` runs on
//! `regress` (an ECMAScript engine) over UTF-16 in UCS-2 mode.
//!
//! The reference is OpenClaw 2026.9.6 (tests/policy_allowlist.rs compares with its real code).
//! 2026.7.35 also retried an `argPattern` with trailing shell redirections stripped; not doing
//! so is stricter, never looser. Like OpenClaw, an `argPattern` runs on a backtracking engine:
//! a pathological pattern from the approvals file can be slow on a crafted argv.

pub mod cwd_argv;
mod glob;
mod js;

pub use js::{js_trim, node_posix_normalize};

use cwd_argv::{parse_cwd_argv, recent_digest, CWD_ARGV_PREFIX, LEGACY_ARGV_PREFIX};
use foldhash::{HashMap, HashMapExt};
use glob::GlobIndex;
use js::{js_units, node_basename};
use std::borrow::Cow;
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
    /// `sha256:cwd-argv:v1:<hex>`: equal to the hash of this argv + cwd. The hash itself
    /// lives in [`CompiledAllowlist::grants`], so a lookup compares it once, not per entry.
    CwdHash,
    /// An ECMAScript regex over argv[1..]; `nul` = NUL-joined subject.
    Regex { re: regress::Regex, nul: bool },
    /// Legacy hash, allow-always without a cwd-bound hash, or an invalid regex.
    Never,
}

/// A compiled allowlist.
#[derive(Debug)]
pub struct CompiledAllowlist {
    args: Vec<ArgMatcher>,
    /// `sha256:cwd-argv:v1:` grants, by hash (its 32 bytes): the entries carrying that hash,
    /// indexed like `paths`/`names`. Kept out of those, so a lookup hashes its argv once and
    /// probes one map instead of visiting every grant for the same executable. A grant whose
    /// hash is not spelt as OpenClaw writes it (64 lowercase hex digits) can never equal a
    /// computed one, so it is in neither place.
    grants: HashMap<[u8; 32], Grants>,
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
        let mut grants: HashMap<[u8; 32], (Vec<_>, Vec<_>)> = HashMap::new();
        let mut wildcard = None;
        let mut paths = Vec::new();
        let mut names = Vec::new();
        for (i, rule) in rules.iter().enumerate() {
            let pattern = js_trim(&rule.pattern);
            let arg = rule.arg_pattern.as_deref().filter(|a| !a.is_empty());
            if pattern == "*" && arg.is_none() && !rule.allow_always && wildcard.is_none() {
                wildcard = Some(i);
            }
            let matcher = compile_arg(arg, rule.allow_always);
            let grant = match (&matcher, arg) {
                (ArgMatcher::CwdHash, Some(a)) => Some(parse_cwd_argv(a)),
                _ => None,
            };
            args.push(matcher);
            if pattern.is_empty() {
                continue;
            }
            if let Some(hash) = grant {
                let Some(hash) = hash else {
                    continue;
                };
                let (paths, names) = grants.entry(hash).or_default();
                if has_path_selector(pattern) {
                    paths.push((i, normalize_pattern(pattern, &home)));
                } else if pattern != "*" {
                    names.push((i, normalize_pattern(pattern, &home)));
                }
            } else if has_path_selector(pattern) {
                paths.push((i, normalize_pattern(pattern, &home)));
            } else if pattern != "*" {
                names.push((i, normalize_pattern(pattern, &home)));
            }
        }
        let grants = grants
            .into_iter()
            .map(|(hash, (paths, names))| {
                let g = Grants {
                    paths: GlobIndex::build(paths),
                    names: GlobIndex::build(names),
                };
                (hash, g)
            })
            .collect();
        CompiledAllowlist {
            args,
            grants,
            wildcard,
            paths: GlobIndex::build(paths),
            names: GlobIndex::build(names),
        }
    }

    /// Number of entries compiled (the indices [`AllowMatch`] refers to).
    pub fn len(&self) -> usize {
        self.args.len()
    }

    pub fn is_empty(&self) -> bool {
        self.args.is_empty()
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
        // Borrowed, not copied, when the paths are UTF-8 (they nearly always are).
        let resolved = target
            .resolved_path
            .or(target.resolved_real_path)
            .map(|p| p.to_string_lossy())
            .filter(|p| !p.is_empty())?;
        let real = match target.resolved_real_path.map(|p| p.to_string_lossy()) {
            Some(Cow::Borrowed(p)) => Cow::Borrowed(js_trim(p)),
            Some(Cow::Owned(p)) => Cow::Owned(js_trim(&p).to_string()),
            None => Cow::Borrowed(""),
        };
        let trust: &str = if real.is_empty() { &resolved } else { &real };

        let by_path = match_targets(trust);
        let by_name = (!has_path_selector(raw)).then(|| match_targets(node_basename(&resolved)));
        let lookup = |paths: &GlobIndex, names: &GlobIndex| {
            let mut hits = Vec::new();
            paths.hits(&by_path.0, &by_path.1, &mut hits);
            if let Some((lit, glob)) = &by_name {
                names.hits(lit, glob, &mut hits);
            }
            hits.sort_unstable();
            hits.dedup();
            hits
        };

        // The first grant (in entry order) for exactly this argv + cwd whose pattern matches.
        let granted = if self.grants.is_empty() {
            None
        } else {
            self.grants
                .get(&recent_digest(target.cwd, target.argv))
                .and_then(|g| lookup(&g.paths, &g.names).first().copied())
        };
        let mut path_only = None;
        for rule in lookup(&self.paths, &self.names) {
            if granted.is_some_and(|g| g < rule) {
                break;
            }
            match &self.args[rule] {
                ArgMatcher::PathOnly => {
                    path_only.get_or_insert(rule);
                }
                ArgMatcher::Regex { re, nul } => {
                    if arg_regex_matches(re, *nul, target.argv) {
                        return Some((rule, Hit::Pattern));
                    }
                }
                // Grants are only in `grants`.
                ArgMatcher::CwdHash | ArgMatcher::Never => {}
            }
        }
        if let Some(rule) = granted {
            return Some((rule, Hit::AllowAlways));
        }
        path_only.map(|rule| (rule, Hit::Pattern))
    }
}

/// The grants sharing one `sha256:cwd-argv:v1:` hash.
#[derive(Debug)]
struct Grants {
    paths: GlobIndex,
    names: GlobIndex,
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
        Some(a) if a.starts_with(CWD_ARGV_PREFIX) => ArgMatcher::CwdHash,
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
/// normalised (`hasDotPathSegment` → `path.posix.normalize`) in code-unit form. Both
/// borrow `target` in the usual case (no `\\\\`, no dot segment, no astral character).
fn match_targets(target: &str) -> (Cow<'_, str>, Cow<'_, str>) {
    let literal = if target.contains("\\\\") {
        Cow::Owned(normalize_match_target(target))
    } else {
        Cow::Borrowed(target)
    };
    // `hasDotPathSegment` splits on both separators.
    let has_dot = literal.split(['/', '\\']).any(|s| s == "." || s == "..");
    let units = if has_dot {
        Cow::Owned(js_units(&normalize_match_target(&node_posix_normalize(
            &literal,
        ))))
    } else if literal.chars().all(|c| c.len_utf16() == 1) {
        // Every character is one UTF-16 code unit: the code-unit form is the text itself.
        literal.clone()
    } else {
        Cow::Owned(js_units(&literal))
    };
    (literal, units)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Shared across request handlers behind an `Arc`.
    #[test]
    fn compiled_lists_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CompiledAllowlist>();
        assert_send_sync::<crate::policy::file::Policy>();
    }
}
