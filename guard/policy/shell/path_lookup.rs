//! PATH look-up of bare command names (through the decision's facts, which the host caches),
//! and where the analyser decides whether a command name may be trusted by its basename.

use super::normalize_path;
use super::walk::{Analyser, Resolved};
use crate::policy::fs_memo;
use std::path::{Path, PathBuf};

/// Looks a bare command name up on `path_var`. Relative PATH entries (and the empty entry)
/// are taken relative to `cwd`, as a shell would.
pub fn resolve_on_path(name: &str, path_var: &str, cwd: &Path) -> Option<PathBuf> {
    fs_memo::which(name, path_var, cwd).path
}

/// Is argv[0] a shell builtin, or an executable whose directory is a system directory? Only
/// then may the command table trust its name: `ls` found in a directory the agent can write
/// is the agent's own code.
pub(super) fn trusted_location(name: &str, resolved: Option<&Path>) -> bool {
    if !name.contains('/') && super::is_shell_builtin(name) {
        return true;
    }
    let Some(resolved) = resolved else {
        return false;
    };
    // The usual answer, `/usr/bin/NAME`, by bytes; any other spelling component-wise.
    let bytes = resolved.as_os_str().as_encoded_bytes();
    let plainly_in = |t: &str| {
        bytes
            .strip_prefix(t.as_bytes())
            .and_then(|r| r.strip_prefix(b"/"))
            .is_some_and(|r| !r.is_empty() && !r.contains(&b'/') && r != b"." && r != b"..")
    };
    if super::TRUSTED_DIRS.iter().any(|t| plainly_in(t)) {
        return true;
    }
    resolved
        .parent()
        .is_some_and(|dir| super::TRUSTED_DIRS.iter().any(|t| dir == Path::new(t)))
}

/// Bash's standard PATH for `command -p` (glibc's `confstr(_CS_PATH)`, `getconf PATH`).
pub(super) const STD_PATH: &str = "/bin:/usr/bin";

impl Analyser<'_> {
    /// [`Self::resolve`], or for a bare name under `command -p` the look-up on [`STD_PATH`].
    pub(super) fn resolve_for(&mut self, name: &str, std_path: bool) -> Resolved {
        if std_path && !name.contains('/') {
            let found = fs_memo::which(name, STD_PATH, &self.ctx.cwd);
            return (true, found.path, found.real);
        }
        self.resolve(name)
    }

    /// Is `name` a program the command table may trust by its basename, and where is it?
    /// [`Self::resolve_uncached`], memoised for the analysis (stat calls dominate).
    pub(super) fn resolve(&mut self, name: &str) -> Resolved {
        if let Some(hit) = self.resolved.get(name) {
            return hit.clone();
        }
        let r = self.resolve_uncached(name);
        self.resolved.insert(name.to_string(), r.clone());
        r
    }

    /// Is bare `name` a program the agent cannot have put where it is found (a trusted
    /// name in a system directory or a builtin; or found nowhere, when nothing runs)? What
    /// a pipeline stage or wrapper is unwrapped by must be.
    pub(super) fn system_program(&mut self, name: &str) -> bool {
        self.trusted_name(name) && self.system_located(name, false)
    }

    /// Where bare `name` is found (on the standard PATH for `command -p`) is a system
    /// directory, or nowhere; memoised, and nothing copied (this runs per command).
    pub(super) fn system_located(&mut self, name: &str, std_path: bool) -> bool {
        if std_path && !name.contains('/') {
            let found = fs_memo::which(name, STD_PATH, &self.ctx.cwd);
            return found.path.is_none() || trusted_location(name, found.path.as_deref());
        }
        if !self.resolved.contains_key(name) {
            let r = self.resolve_uncached(name);
            self.resolved.insert(name.to_string(), r);
        }
        self.resolved
            .get(name)
            .is_some_and(|r| r.1.is_none() || trusted_location(name, r.1.as_deref()))
    }

    /// [`Self::resolve`]'s first answer alone, without copying the paths found.
    pub(super) fn trusted_name(&mut self, name: &str) -> bool {
        if let Some(hit) = self.resolved.get(name) {
            return hit.0;
        }
        let r = self.resolve_uncached(name);
        let trusted = r.0;
        self.resolved.insert(name.to_string(), r);
        trusted
    }

    fn resolve_uncached(&self, name: &str) -> Resolved {
        if !name.contains('/') {
            let found = fs_memo::which(name, &self.ctx.path, &self.ctx.cwd);
            return (true, found.path, found.real);
        }
        let lexical = normalize_path(name, &self.ctx.home, &self.ctx.cwd);
        let real = fs_memo::canonicalize(&lexical);
        let in_path_dir = |p: &PathBuf| {
            p.parent().is_some_and(|parent| {
                self.ctx
                    .path
                    .split(':')
                    .filter(|d| d.starts_with('/'))
                    .any(|d| normalize_path(d, &self.ctx.home, &self.ctx.cwd) == parent)
            })
        };
        let trusted = name.starts_with('/')
            && (in_path_dir(&lexical) || real.as_ref().is_some_and(in_path_dir));
        (trusted, Some(lexical), real)
    }
}

#[cfg(test)]
mod tests {
    use super::trusted_location;
    use std::path::Path;

    /// The byte fast path answers as `Path::parent` compared component-wise does.
    #[test]
    fn trusted_location_by_bytes_or_components() {
        let cases = [
            ("/usr/bin/cat", true),
            ("/usr/local/sbin/x", true),
            ("/usr//bin/cat", true),
            ("/usr/bin/./cat", true),
            ("/usr/bin/", false),
            ("/usr/bin/.", false),
            ("/usr/bin/..", true),
            ("/usr/bin", false),
            ("/usr/binx/cat", false),
            ("/usr/bin/sub/cat", false),
            ("/home/u/bin/cat", false),
            ("bin/cat", false),
        ];
        for (path, want) in cases {
            let p = Path::new(path);
            let slow = p.parent().is_some_and(|d| {
                crate::policy::shell::TRUSTED_DIRS
                    .iter()
                    .any(|t| d == Path::new(t))
            });
            assert_eq!(slow, want, "{path}: the case's expectation");
            assert_eq!(trusted_location("x/y", Some(p)), want, "{path}");
        }
        assert!(trusted_location("cd", None));
        assert!(!trusted_location("./cd", None));
        assert!(!trusted_location("cat", None));
    }
}
