//! The guard's own state keeps the modes and owner the guard gave it. Runs of a guard without
//! `run_as` share its uid, and Landlock does not cover metadata: an approved run can `chmod
//! 0666` the audit key or `0777` the state dir (autonomous runs cannot: their seccomp filter
//! refuses chmod). So after every approved run the engine walks the state dir, puts back
//! what was widened and names it in a `tamper` record; `doctor` applies the same rule.
//!
//! The rule: directories 0700, files 0600, owned by the guard's uid; a file the deployment
//! publishes (the agent's filesystem snapshot) may also be read by group and others. Nothing
//! is followed through a symlink, and sockets and other special files are left alone (their
//! modes are the socket door's business).

use serde::Serialize;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};

/// How deep the walk goes below the state dir (the guard's own layout is two levels).
const MAX_DEPTH: usize = 4;
/// Entries looked at per walk, so a state dir grown by accident cannot slow every run.
const MAX_ENTRIES: usize = 4096;

/// The modes the rule allows an entry: what the guard must keep, and the most it may have.
fn allowed(is_dir: bool, public: bool) -> (u32, u32) {
    match (is_dir, public) {
        (true, _) => (0o700, 0o700),
        (false, true) => (0o600, 0o644),
        (false, false) => (0o600, 0o600),
    }
}

/// The mode an entry of `mode` is put back to (`mode` itself when it keeps the rule).
pub fn wanted_mode(mode: u32, is_dir: bool, public: bool) -> u32 {
    let (need, most) = allowed(is_dir, public);
    (mode & 0o7777 & most) | need
}

/// Whether `mode` grants anyone but the owner more than the rule allows.
pub fn is_loose(mode: u32, is_dir: bool, public: bool) -> bool {
    let (_, most) = allowed(is_dir, public);
    mode & 0o7777 & !most != 0
}

/// One entry of the state dir that breaks the rule.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Drift {
    pub path: PathBuf,
    pub is_dir: bool,
    pub mode: u32,
    pub wanted_mode: u32,
    pub uid: u32,
}

impl Drift {
    /// Whether group or others get more than the rule allows (not only a narrowed mode).
    pub fn loose(&self, public: &[PathBuf]) -> bool {
        is_loose(self.mode, self.is_dir, public.contains(&self.path))
    }
}

/// The guard's state dir and the rule's exceptions, checked after each approved run.
#[derive(Debug, Clone)]
pub struct StateModes {
    dir: PathBuf,
    /// Files others may read by design (`agent_filesystem`).
    public: Vec<PathBuf>,
    /// The guard's uid: the owner of every entry.
    owner: u32,
}

impl StateModes {
    pub fn new(dir: PathBuf, public: Vec<PathBuf>) -> StateModes {
        StateModes {
            dir,
            public,
            owner: nix::unistd::geteuid().as_raw(),
        }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn public(&self) -> &[PathBuf] {
        &self.public
    }

    /// Every entry (the dir itself included) whose mode or owner differs from the rule.
    pub fn drift(&self) -> Vec<Drift> {
        let mut out = Vec::new();
        let mut seen = 0usize;
        let mut stack = vec![(self.dir.clone(), 0usize)];
        while let Some((path, depth)) = stack.pop() {
            seen += 1;
            if seen > MAX_ENTRIES {
                break;
            }
            let Ok(meta) = std::fs::symlink_metadata(&path) else {
                continue;
            };
            let ft = meta.file_type();
            if !ft.is_dir() && !ft.is_file() {
                continue;
            }
            let public = self.public.contains(&path);
            let wanted = wanted_mode(meta.mode(), ft.is_dir(), public);
            if wanted != meta.mode() & 0o7777 || meta.uid() != self.owner {
                out.push(Drift {
                    path: path.clone(),
                    is_dir: ft.is_dir(),
                    mode: meta.mode() & 0o7777,
                    wanted_mode: wanted,
                    uid: meta.uid(),
                });
            }
            if ft.is_dir() && depth < MAX_DEPTH {
                if let Ok(rd) = std::fs::read_dir(&path) {
                    stack.extend(rd.flatten().map(|e| (e.path(), depth + 1)));
                }
            }
        }
        out
    }

    /// Puts every drifted entry back (its owner only where the guard may chown: as root);
    /// what was found and whether it could be restored, for the audit record.
    pub fn restore(&self) -> Vec<Repair> {
        self.drift()
            .into_iter()
            .map(|d| {
                let mut errors = Vec::new();
                if d.uid != self.owner {
                    if let Err(e) = std::os::unix::fs::lchown(&d.path, Some(self.owner), None) {
                        errors.push(format!("owner {} kept: {e}", d.uid));
                    }
                }
                if d.mode != d.wanted_mode {
                    // The entry was a file or dir when looked at; a run cannot swap it for a
                    // symlink, since it may not write in the state dir (Landlock).
                    let perms = std::fs::Permissions::from_mode(d.wanted_mode);
                    if let Err(e) = std::fs::set_permissions(&d.path, perms) {
                        errors.push(format!("mode kept: {e}"));
                    }
                }
                Repair {
                    drift: d,
                    owner: self.owner,
                    error: (!errors.is_empty()).then(|| errors.join("; ")),
                }
            })
            .collect()
    }
}

/// One drifted entry and what restoring it did.
#[derive(Debug, Clone)]
pub struct Repair {
    pub drift: Drift,
    /// The uid it should have.
    pub owner: u32,
    /// Why it could not be restored (whole or in part).
    pub error: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_rule_narrows_what_a_run_widened_and_keeps_what_the_guard_gave() {
        // (mode, dir, public) -> wanted, loose
        let cases = [
            (0o600, false, false, 0o600, false),
            (0o666, false, false, 0o600, true),
            (0o644, false, false, 0o600, true),
            (0o4600, false, false, 0o600, true),
            (0o000, false, false, 0o600, false),
            (0o400, false, false, 0o600, false),
            (0o700, true, false, 0o700, false),
            (0o777, true, false, 0o700, true),
            (0o1777, true, false, 0o700, true),
            (0o500, true, false, 0o700, false),
            (0o644, false, true, 0o644, false),
            (0o666, false, true, 0o644, true),
        ];
        for (mode, dir, public, wanted, loose) in cases {
            assert_eq!(
                wanted_mode(mode, dir, public),
                wanted,
                "{mode:o} dir={dir} public={public}"
            );
            assert_eq!(
                is_loose(mode, dir, public),
                loose,
                "{mode:o} dir={dir} public={public}"
            );
        }
    }

    #[test]
    fn restore_puts_modes_back_and_says_what_it_touched() {
        let tmp = tempfile::tempdir().expect("tmp");
        let dir = tmp.path().join("state");
        std::fs::create_dir(&dir).expect("dir");
        let key = dir.join("audit.key");
        let public = dir.join("agent-fs.json");
        let sub = dir.join("node");
        std::fs::write(&key, "k").expect("key");
        std::fs::write(&public, "{}").expect("public");
        std::fs::create_dir(&sub).expect("sub");
        std::os::unix::fs::symlink("/etc/passwd", dir.join("link")).expect("link");
        let set = |p: &Path, m| {
            std::fs::set_permissions(p, std::fs::Permissions::from_mode(m)).expect("chmod")
        };
        set(&dir, 0o777);
        set(&key, 0o666);
        set(&public, 0o644);
        set(&sub, 0o700);
        let modes = StateModes::new(dir.clone(), vec![public.clone()]);
        let repaired: Vec<(PathBuf, u32)> = modes
            .restore()
            .into_iter()
            .map(|r| {
                assert_eq!(r.error, None, "{r:?}");
                (r.drift.path, r.drift.mode)
            })
            .collect();
        assert_eq!(repaired.len(), 2, "{repaired:?}");
        assert!(repaired.contains(&(dir.clone(), 0o777)));
        assert!(repaired.contains(&(key.clone(), 0o666)));
        let mode = |p: &Path| std::fs::metadata(p).expect("meta").mode() & 0o7777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&key), 0o600);
        assert_eq!(mode(&public), 0o644);
        assert_eq!(mode(Path::new("/etc/passwd")), 0o644, "no symlink followed");
        assert!(modes.drift().is_empty());
    }
}
