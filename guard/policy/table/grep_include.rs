//! GNU grep's `--include`: the files a recursive grep reads below a directory, when the
//! globs narrow them in a way that is exact on a base name (the walk's `keep`).

use super::grammar::Parsed;

/// One `--include` glob of a shape whose GNU grep meaning is exact on a base name.
#[derive(Debug, PartialEq)]
pub(super) enum Include {
    /// `NAME`: that name.
    Name(String),
    /// `*SUFFIX`: names ending so.
    Suffix(String),
}

impl Include {
    pub(super) fn matches(&self, name: &str) -> bool {
        match self {
            Include::Name(n) => name == n,
            Include::Suffix(s) => name.ends_with(s.as_str()),
        }
    }
}

/// The files a recursive GNU grep reads below a directory, when `--include` narrows them:
/// `Some(globs)` when the first `--include`/`--exclude` option is an `--include` (grep then
/// skips every file no glob matches) and every include glob is `NAME` or `*SUFFIX` with no
/// other wildcard, no `/` and no backslash: for those two shapes gnulib's matching (against
/// the path and each part after a `/`, `*` matching `/` too) comes to the base name alone.
/// Any other glob, whose meaning on a path is not checked here, or an exclude first (a file
/// matching nothing is then read: strace shows `app/.env` opened) keeps every file: `None`.
pub(super) fn grep_includes(parsed: &Parsed) -> Option<Vec<Include>> {
    let first = parsed
        .opts
        .iter()
        .find(|m| matches!(m.opt.long, "include" | "exclude" | "exclude-from"))?;
    if first.opt.long != "include" {
        return None;
    }
    let mut out = Vec::new();
    for v in parsed.values("include") {
        let g = v.value.as_deref()?;
        let plain = |t: &str| !t.is_empty() && !t.contains(['*', '?', '[', ']', '\\', '/', '{']);
        match g.strip_prefix('*') {
            Some(rest) if plain(rest) => out.push(Include::Suffix(rest.to_owned())),
            None if plain(g) => out.push(Include::Name(g.to_owned())),
            _ => return None,
        }
    }
    Some(out)
}
