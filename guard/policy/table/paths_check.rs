//! Path findings: sensitive paths (globs and containing directories too), writes into
//! system directories or OpenClaw's approvals state, unknown operands, environment
//! assignments that change what runs, and redirections.

use super::{Classification, TableContext};
use crate::policy::paths::{self, PathContext};
use crate::policy::shell::{RedirectKind, Segment, Word};
use crate::policy::verdict::Category;
use std::cell::OnceCell;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Directories an agent never writes to (the Sanctum "write system" row is blocked).
const SYSTEM_DIRS: &[&str] = &[
    "/etc",
    "/usr",
    "/bin",
    "/sbin",
    "/lib",
    "/lib32",
    "/lib64",
    "/boot",
    "/opt",
    "/root",
    "/sys",
    "/proc",
    "/dev",
    "/var/lib",
    "/var/spool",
    "/var/log",
];

/// Environment variables that make a program load or run other code.
const CODE_ENV: &[&str] = &[
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_AUDIT",
    "BASH_ENV",
    "ENV",
    "PROMPT_COMMAND",
    "NODE_OPTIONS",
    "NODE_PATH",
    "PYTHONPATH",
    "PYTHONSTARTUP",
    "PYTHONHOME",
    "PERL5OPT",
    "PERL5LIB",
    "RUBYOPT",
    "RUBYLIB",
    "GIT_SSH_COMMAND",
    "GIT_SSH",
    "GIT_EXTERNAL_DIFF",
    "GIT_PAGER",
    "GIT_EDITOR",
    "GIT_ASKPASS",
    "GIT_CONFIG_GLOBAL",
    "GIT_DIR",
    "PAGER",
    "EDITOR",
    "VISUAL",
    "IFS",
    "SHELLOPTS",
    "BASHOPTS",
];

pub(crate) struct Checker<'a> {
    pub(super) seg: &'a Segment,
    pub(super) t: &'a TableContext<'a>,
    /// One per candidate cwd, built on first use: most segments (`sort`, `head -n 5`) have
    /// no path operand, and building them copies the home and the cwd.
    ctxs: OnceCell<Vec<PathContext>>,
}

impl<'a> Checker<'a> {
    pub fn new(seg: &'a Segment, t: &'a TableContext<'a>) -> Self {
        Checker {
            seg,
            t,
            ctxs: OnceCell::new(),
        }
    }

    /// Where the segment's relative paths and `~` resolve, one per candidate cwd.
    pub(super) fn ctxs(&self) -> &[PathContext] {
        self.ctxs.get_or_init(|| {
            self.seg
                .cwds
                .iter()
                .map(|cwd| PathContext {
                    home: self.t.home.to_path_buf(),
                    cwd: cwd.clone(),
                })
                .collect()
        })
    }

    /// The directories the segment may run in.
    pub fn cwds(&self) -> impl Iterator<Item = PathBuf> + '_ {
        self.ctxs().iter().map(|c| c.cwd.clone())
    }

    pub fn env_assignments(&self, c: &mut Classification) {
        for name in &self.seg.env_assignments {
            if name == "PATH" {
                c.add(
                    Category::Unanalysable,
                    "path-override",
                    "changes PATH, so the programs that run cannot be known",
                );
            } else if CODE_ENV.contains(&name.as_str()) || name.starts_with("LD_") {
                c.add(
                    Category::RunCode,
                    "env-code-injection",
                    format!("sets {name}, which makes programs load or run other code"),
                );
            }
        }
    }

    pub fn redirects(&self, c: &mut Classification) {
        for r in &self.seg.redirects {
            let v = r.target.value.as_deref().unwrap_or("");
            if v.starts_with("/dev/tcp/") || v.starts_with("/dev/udp/") {
                c.add(
                    Category::HttpWrite,
                    "network",
                    format!("the shell opens a network connection to {v}"),
                );
            }
            match r.kind {
                RedirectKind::Read => self.read(c, &r.target),
                RedirectKind::Write | RedirectKind::ReadWrite => {
                    c.add(
                        Category::Write,
                        "redirect-write",
                        format!("writes {}", r.target.display()),
                    );
                    self.write(c, &r.target);
                }
            }
        }
    }

    /// The static word whose absolute forms (one per candidate working directory) can be
    /// known. `None` (after recording why) when they cannot. The caller makes each form as
    /// it checks it, so no list is built.
    fn known_value<'w>(&self, c: &mut Classification, w: &'w Word) -> Option<&'w str> {
        let src = w.source.trim_matches('"');
        if w.value.is_none()
            && (src.starts_with("<(") || src.starts_with(">("))
            && src.ends_with(')')
        {
            // A process substitution is a `/dev/fd` pipe; its command is its own segment.
            return None;
        }
        let Some(v) = &w.value else {
            c.add(
                Category::Unanalysable,
                "unknown-argument",
                format!("argument `{}` is not static", short(&w.source)),
            );
            return None;
        };
        if self.ctxs().is_empty() && !v.starts_with('/') && !v.starts_with('~') {
            c.add(
                Category::Unanalysable,
                "unknown-cwd",
                format!(
                    "`{}` is relative to a directory a `cd` made unknown",
                    short(v)
                ),
            );
            return None;
        }
        Some(v)
    }

    /// An operand the program reads.
    pub fn read(&self, c: &mut Classification, w: &Word) {
        self.read_checked(c, w, true);
    }

    /// [`Self::read`]; `outside`: gate a read outside the workspace and the system
    /// directories (a write's target is judged by the write rules instead).
    fn read_checked(&self, c: &mut Classification, w: &Word, outside: bool) {
        if let Some(v) = &w.value {
            if w.glob {
                for ctx in self.ctxs() {
                    if let Some(hit) = self.t.policy.sensitive().glob_may_match(v, ctx) {
                        sensitive(c, v, &hit);
                        return;
                    }
                }
                if outside {
                    self.glob_outside(c, v);
                }
                return;
            }
        }
        if let Some(v) = self.known_value(c, w) {
            for ctx in self.ctxs() {
                let p = paths::absolute(v, ctx);
                if let Some(hit) = self.t.policy.sensitive().matches(&p) {
                    sensitive(c, &p.to_string_lossy(), &hit);
                    return;
                }
                if outside && !self.readable_alone(&p) {
                    c.add(
                        Category::Unanalysable,
                        "read-outside-workspace",
                        format!(
                            "reads {} outside the workspace and the system directories",
                            short(&p.to_string_lossy())
                        ),
                    );
                    return;
                }
            }
        }
    }

    /// A glob reads the directory bash expands it in (its static part up to the last `/`
    /// before the first wildcard) and every name it matches below: outside the workspace and
    /// the system directories, or climbing out with `..` after a wildcard, that is a person's
    /// call, whether it matches now or not.
    fn glob_outside(&self, c: &mut Classification, v: &str) {
        let head_len = v.find(['*', '?', '[', '{']).unwrap_or(v.len());
        let head = &v[..head_len];
        let dir = head.rfind('/').map_or(".", |i| &head[..=i]);
        let climbs = v[head_len..].split('/').any(|part| part == "..");
        for ctx in self.ctxs() {
            let p = paths::absolute(dir, ctx);
            if climbs || !self.readable_alone(&p) {
                c.add(
                    Category::Unanalysable,
                    "read-outside-workspace",
                    format!(
                        "the glob {} reads {} outside the workspace and the system directories",
                        short(v),
                        short(&p.to_string_lossy())
                    ),
                );
                return;
            }
        }
    }

    /// May a run read `p` by itself? Only inside the workspace or the system directories,
    /// checked as written and with its symlinks resolved: elsewhere (the rest of the home,
    /// `/tmp`, `/srv`, other users) the sensitive list would be the only wall.
    pub(super) fn readable_alone(&self, p: &Path) -> bool {
        let inside = |q: &Path| q.starts_with(self.t.workspace) || in_read_system_dir(q);
        let lexical = paths::lexical_clean_cow(p);
        if !inside(&lexical) {
            return false;
        }
        match paths::resolve_lenient(p) {
            Some(r) if r.as_os_str() != lexical.as_os_str() => {
                inside(&r)
                    || paths::resolve_lenient(self.t.workspace).is_some_and(|ws| r.starts_with(ws))
            }
            _ => true,
        }
    }

    /// An operand the program writes (or creates, or deletes).
    pub fn write(&self, c: &mut Classification, w: &Word) {
        self.read_checked(c, w, false);
        if let Some(v) = &w.value {
            if w.glob {
                let prefix: String = v.chars().take_while(|ch| !"*?[{".contains(*ch)).collect();
                for ctx in self.ctxs() {
                    let p = paths::normalize(&prefix, ctx);
                    system_or_approvals(c, self.t, &p);
                }
                return;
            }
            for ctx in self.ctxs() {
                let p = paths::normalize(v, ctx);
                system_or_approvals(c, self.t, &p);
            }
        }
    }

    /// A directory the program reads recursively (`grep -r`, `cp -r`, `tar c`), hidden
    /// files included: a sensitive path it contains, or a dotenv file anywhere below it
    /// (bounded walk; a tree over the bound gates).
    pub fn recursive_read(&self, c: &mut Classification, w: &Word) {
        self.recursive_names(c, w);
        self.walk_below(c, w, &super::tree_walk::Walk::DOTENV);
    }

    /// A directory whose names the program lists recursively (`find`), or whose contents
    /// it reads skipping hidden files (`rg` without `--hidden`): the sensitive paths it
    /// contains.
    pub fn recursive_names(&self, c: &mut Classification, w: &Word) {
        if let Some(hit) = self.contains(w) {
            sensitive(c, w.display(), &hit);
        }
    }

    /// A directory operand that contains a sensitive path, if it does.
    pub fn contains(&self, w: &Word) -> Option<String> {
        let v = w.value.as_ref()?;
        for ctx in self.ctxs() {
            let hit = if w.glob {
                self.t.policy.sensitive().glob_may_contain(v, ctx)
            } else {
                self.t
                    .policy
                    .sensitive()
                    .contains_sensitive(&paths::absolute(v, ctx))
            };
            if hit.is_some() {
                return hit;
            }
        }
        None
    }

    /// Can this glob word expand to a word that starts with `-` (an option)? True when it
    /// starts with a metacharacter and a directory it would list holds such a name.
    pub fn glob_may_be_option(&self, w: &Word) -> bool {
        let Some(v) = w.value.as_deref().filter(|_| w.glob) else {
            return false;
        };
        if !v.starts_with(['*', '?', '[', '{']) {
            return false;
        }
        if self.ctxs().is_empty() {
            return true;
        }
        self.ctxs().iter().any(|ctx| {
            crate::policy::fs_memo::list_dir(&ctx.cwd)
                .is_none_or(|names| names.iter().any(|n| n.starts_with('-')))
        })
    }

    /// Is the (static) operand inside the workspace for every candidate cwd? `None` when
    /// unknown. The workspace itself and its ancestors are not "inside".
    pub fn inside_workspace(&self, w: &Word) -> Option<bool> {
        let v = w.value.as_ref()?;
        if self.ctxs().is_empty() {
            return None;
        }
        let prefix: String = if w.glob {
            v.chars().take_while(|ch| !"*?[{".contains(*ch)).collect()
        } else {
            v.clone()
        };
        let ws = paths::lexical_clean(self.t.workspace);
        let ws_real = paths::resolve_lenient(&ws).unwrap_or_else(|| ws.clone());
        Some(self.ctxs().iter().all(|ctx| {
            let p = paths::normalize(&prefix, ctx);
            let inside = p.starts_with(&ws) && (p != ws || w.glob);
            let real_ok = paths::resolve_lenient(&paths::absolute(&prefix, ctx))
                .is_none_or(|r| r.starts_with(&ws) || r.starts_with(&ws_real));
            inside && real_ok
        }))
    }
}

pub(super) fn sensitive(c: &mut Classification, what: &str, hit: &str) {
    c.add(
        Category::SensitivePath,
        "sensitive-path",
        format!("touches {} (sensitive: {hit})", short(what)),
    );
}

/// Writes into system directories or OpenClaw's own state.
fn system_or_approvals(c: &mut Classification, t: &TableContext, p: &Path) {
    // `strip_prefix` is `starts_with`'s own component walk: one pass answers both "under
    // home" and "under ~/.openclaw" without building `home/.openclaw`.
    let under_home = p.strip_prefix(t.home).ok();
    // The deployment's workspace may live in OpenClaw's state dir (the default is
    // `~/.openclaw/workspace`): a write inside it is a workspace write, not a config change.
    // The workspace directory itself and what is around it stay OpenClaw's state.
    let in_workspace = p != t.workspace
        && p.starts_with(t.workspace)
        && t.workspace.strip_prefix(t.home).ok() != Some(Path::new(".openclaw"));
    if let Some(rest) = under_home.filter(|r| r.starts_with(".openclaw") && !in_workspace) {
        let name = p
            .file_name()
            .map(|n| n.to_string_lossy().to_string())
            .unwrap_or_default();
        if name.starts_with("exec-approvals")
            || name == "openclaw.json"
            || name.ends_with(".sqlite")
            || name.ends_with(".db")
            || rest == Path::new(".openclaw")
        {
            c.add(
                Category::ApprovalsOff,
                "approvals-off",
                format!(
                    "writes OpenClaw's approvals or config state {}",
                    p.display()
                ),
            );
        } else {
            c.add(
                Category::ConfigChange,
                "config-change",
                format!("writes OpenClaw state {}", p.display()),
            );
        }
        return;
    }
    let in_home = under_home.is_some() && p != t.home;
    // `/` itself is never `in_home` (it equals the home or is outside it).
    if !in_home && (is_root(p) || in_system_dir(p)) {
        c.add(
            Category::Privilege,
            "system-path-write",
            format!("writes the system path {}", p.display()),
        );
    }
}

/// Directories any program may read by itself (their secrets are on the sensitive list).
const READ_SYSTEM_DIRS: &[&str] = &[
    "/etc", "/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/proc", "/sys", "/dev",
];

fn in_read_system_dir(p: &Path) -> bool {
    READ_SYSTEM_DIRS.iter().any(|d| p.starts_with(d))
}

/// `p == Path::new("/")`, without `Path`'s general component-by-component comparison.
fn is_root(p: &Path) -> bool {
    let mut comps = p.components();
    comps.next() == Some(Component::RootDir) && comps.next().is_none()
}

/// `SYSTEM_DIRS.iter().any(|d| p.starts_with(d))`, walking `p`'s components once instead
/// of once per entry (every entry is `/` plus one or two names).
fn in_system_dir(p: &Path) -> bool {
    let mut comps = p.components();
    if comps.next() != Some(Component::RootDir) {
        return false;
    }
    fn name(c: Option<Component<'_>>) -> Option<&OsStr> {
        match c {
            Some(Component::Normal(n)) => Some(n),
            _ => None,
        }
    }
    let Some(first) = name(comps.next()) else {
        return false;
    };
    let (first, second) = (
        first.as_encoded_bytes(),
        name(comps.next()).map(OsStr::as_encoded_bytes),
    );
    // Byte comparisons: each entry is `/first` or `/first/second` (the test checks).
    SYSTEM_DIRS.iter().any(|d| {
        let Some(after) = d.as_bytes()[1..].strip_prefix(first) else {
            return false;
        };
        match after {
            [] => true,
            [b'/', tail @ ..] => second == Some(tail),
            _ => false,
        }
    })
}

/// Path findings for a non-exec file action.
pub(crate) fn check_path(c: &mut Classification, t: &TableContext, path: &Path, write: bool) {
    if let Some(hit) = t.policy.sensitive().matches(path) {
        sensitive(c, &path.to_string_lossy(), &hit);
    }
    if write {
        system_or_approvals(c, t, &paths::lexical_clean(path));
    }
}

pub(super) fn short(s: &str) -> String {
    if s.chars().count() > 80 {
        let mut out: String = s.chars().take(77).collect();
        out.push_str("...");
        out
    } else {
        s.to_string()
    }
}

#[cfg(test)]
mod system_dir_tests {
    use super::*;

    /// The one-pass check answers exactly as `Path::starts_with` over every entry.
    #[test]
    fn in_system_dir_matches_starts_with() {
        assert!(SYSTEM_DIRS
            .iter()
            .all(|d| d.starts_with('/') && d.matches('/').count() <= 2 && !d.ends_with('/')));
        let cases = [
            "/",
            "/etc",
            "/etc/",
            "/etc/passwd",
            "/etcx",
            "/usr/bin/x",
            "//usr/bin",
            "/./usr",
            "/var",
            "/var/lib",
            "/var/lib/x",
            "/var/libx",
            "/var//log/a",
            "/var/./log",
            "/var/tmp",
            "/home/u/.openclaw",
            "etc/passwd",
            "./etc",
            "/../etc",
            "/proc/1/root",
            "/tmp/a",
            "/var/spool/cron",
            "/lib64/ld.so",
            "/opt",
        ];
        for c in cases {
            let p = Path::new(c);
            let want = SYSTEM_DIRS.iter().any(|d| p.starts_with(d));
            assert_eq!(in_system_dir(p), want, "{c}");
            assert_eq!(is_root(p), p == Path::new("/"), "{c}");
        }
    }
}
