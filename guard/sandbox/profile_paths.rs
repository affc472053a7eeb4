//! A profile's paths made concrete for one workspace: placeholders expanded, every path
//! canonical, the deployment's deny list added (`ProfileSpec::resolve_with` uses it).
//!
//! The result is cached per (profile paths, workspace, home, deny list), since the engine
//! resolves a profile for every request and canonicalizing its ~35 paths was most of the
//! cost. A cached result is re-checked on every use as `ws_secrets` does: an lstat of every
//! directory the resolution looked a name up in (`canon::Walker`), compared by device, inode,
//! mtime and ctime; a resolution that saw a directory changed less than `RACY` before it
//! began is used once and not cached; entries expire after `TTL`. The private tmp is never
//! cached: a `{tmp}` path is the run's own directory, canonical when made (`tmpdir`); any
//! other path naming `{tmp}`, or a relative workspace (the answer depends on the cwd), makes
//! the resolution uncached.

use super::canon::Walker;
use super::landlock_cache::{epoch, Stamp, RACY, TTL};
use super::profile::{DenyList, ProfileSpec};
use super::SandboxError;
use std::path::{Component, Path, PathBuf};
use std::sync::Mutex;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Resolutions remembered.
const MAX_CACHED: usize = 16;

/// The concrete paths of a profile (see `ResolvedProfile`).
#[derive(Debug, Clone)]
pub(super) struct Paths {
    pub workspace: PathBuf,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub protected: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
}

/// A read or write entry of a cached resolution.
#[derive(Debug, Clone)]
enum Slot {
    Path(PathBuf),
    /// A read path that does not exist (nothing granted).
    Missing,
    /// `{tmp}`: the run's private tmp.
    Tmp,
}

/// What a resolution depends on besides the file system.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Inputs {
    workspace: PathBuf,
    home: PathBuf,
    read: Vec<String>,
    write: Vec<String>,
    protected: Vec<String>,
    deny_read: Vec<String>,
    deny: DenyList,
}

impl Inputs {
    fn matches(&self, spec: &ProfileSpec, workspace: &Path, home: &Path, deny: &DenyList) -> bool {
        self.workspace == workspace
            && self.home == home
            && self.read == spec.read
            && self.write == spec.write
            && self.protected == spec.protected
            && self.deny_read == spec.deny_read
            && self.deny == *deny
    }
}

struct Entry {
    inputs: Inputs,
    workspace: PathBuf,
    read: Vec<Slot>,
    write: Vec<Slot>,
    protected: Vec<PathBuf>,
    deny_read: Vec<PathBuf>,
    dirs: Vec<(PathBuf, Stamp)>,
    built: Instant,
}

static CACHE: Mutex<Vec<Entry>> = Mutex::new(Vec::new());

/// `spec`'s paths for `workspace`; `tmp` is the run's private tmp (canonical), when it has one.
pub(super) fn resolve(
    spec: &ProfileSpec,
    workspace: &Path,
    home: &Path,
    deny: &DenyList,
    tmp: Option<&Path>,
) -> Result<Paths, SandboxError> {
    let cacheable = workspace.is_absolute()
        && (spec.read.iter().chain(&spec.write)).all(|s| s == "{tmp}" || !s.contains("{tmp}"))
        && !(spec.protected.iter().chain(&spec.deny_read)).any(|s| s.contains("{tmp}"));
    if !cacheable {
        let mut walker = Walker::default();
        return resolve_fresh(spec, workspace, home, deny, tmp, &mut walker)
            .and_then(|e| fill(&e, tmp));
    }
    if let Ok(c) = CACHE.lock() {
        let hit = c
            .iter()
            .find(|e| e.inputs.matches(spec, workspace, home, deny));
        if let Some(e) = hit.filter(|e| e.built.elapsed() < TTL && still_valid(&e.dirs)) {
            return fill(e, tmp);
        }
    }
    let started = SystemTime::now();
    let mut walker = Walker::default();
    let mut entry = resolve_fresh(spec, workspace, home, deny, tmp, &mut walker)?;
    let paths = fill(&entry, tmp)?;
    let limit = epoch(started.checked_sub(RACY).unwrap_or(UNIX_EPOCH));
    if let Ok(mut c) = CACHE.lock() {
        c.retain(|e| !e.inputs.matches(spec, workspace, home, deny));
        match walker.into_dirs() {
            Some(dirs) if dirs.iter().all(|(_, s)| s.older_than(limit)) => {
                if c.len() >= MAX_CACHED {
                    c.remove(0);
                }
                entry.dirs = dirs;
                c.push(entry);
            }
            _ => {}
        }
    }
    Ok(paths)
}

fn still_valid(dirs: &[(PathBuf, Stamp)]) -> bool {
    dirs.iter()
        .all(|(p, s)| std::fs::symlink_metadata(p).is_ok_and(|m| Stamp::from_meta(&m) == *s))
}

/// The cached or fresh resolution with the private tmp put in.
fn fill(e: &Entry, tmp: Option<&Path>) -> Result<Paths, SandboxError> {
    let slots = |v: &[Slot]| -> Result<Vec<PathBuf>, SandboxError> {
        let mut out = Vec::with_capacity(v.len());
        for s in v {
            match s {
                Slot::Path(p) => out.push(p.clone()),
                Slot::Missing => {}
                Slot::Tmp => out.push(
                    tmp.ok_or_else(|| SandboxError::Profile("{tmp} without a private tmp".into()))?
                        .to_path_buf(),
                ),
            }
        }
        Ok(out)
    };
    Ok(Paths {
        workspace: e.workspace.clone(),
        read: slots(&e.read)?,
        write: slots(&e.write)?,
        protected: e.protected.clone(),
        deny_read: e.deny_read.clone(),
    })
}

/// Resolves every path, looking names up through `walker`. Missing read paths are skipped (a
/// read grant on nothing grants nothing); a missing write path is an error (fail closed),
/// and so is a deny-read path at or above the workspace (nothing could run there).
fn resolve_fresh(
    spec: &ProfileSpec,
    workspace: &Path,
    home: &Path,
    deny: &DenyList,
    tmp: Option<&Path>,
    walker: &mut Walker,
) -> Result<Entry, SandboxError> {
    #[cfg(test)]
    tests::FRESH.with(|n| n.set(n.get() + 1));
    let workspace = canonical_workspace(workspace, walker)?;
    let x = Expand {
        workspace: &workspace,
        home,
        tmp,
    };
    let mut read = Vec::new();
    for s in &spec.read {
        read.push(match s.as_str() {
            "{tmp}" => x.tmp_slot()?,
            _ => match walker.canonical(&x.path(s)?) {
                Ok((p, _)) => Slot::Path(p),
                Err(_) => Slot::Missing,
            },
        });
    }
    let mut write = Vec::new();
    for s in &spec.write {
        write.push(match s.as_str() {
            "{tmp}" => x.tmp_slot()?,
            _ => {
                let p = x.path(s)?;
                let (c, _) = walker.canonical(&p).map_err(|e| {
                    SandboxError::Profile(format!("write path {}: {e}", p.display()))
                })?;
                Slot::Path(c)
            }
        });
    }
    let protected = (spec.protected.iter())
        .map(|s| x.not_yet_existing(s, "protected", walker))
        .collect::<Result<Vec<_>, _>>()?;
    let mut deny_read = (spec.deny_read.iter())
        .map(|s| x.not_yet_existing(s, "deny_read", walker))
        .collect::<Result<Vec<_>, _>>()?;
    add_deployment_deny(&workspace, deny, &mut deny_read, walker)?;
    Ok(Entry {
        inputs: Inputs {
            workspace: x.workspace.to_path_buf(),
            home: home.to_path_buf(),
            read: spec.read.clone(),
            write: spec.write.clone(),
            protected: spec.protected.clone(),
            deny_read: spec.deny_read.clone(),
            deny: deny.clone(),
        },
        workspace,
        read,
        write,
        protected,
        deny_read,
        dirs: Vec::new(),
        built: Instant::now(),
    })
}

/// The workspace, canonical, and a directory.
fn canonical_workspace(workspace: &Path, walker: &mut Walker) -> Result<PathBuf, SandboxError> {
    let err = |e: std::io::Error| {
        SandboxError::Profile(format!("workspace {}: {e}", workspace.display()))
    };
    let (real, is_dir) = if workspace.is_absolute() {
        walker.canonical(workspace).map_err(err)?
    } else {
        let real = workspace.canonicalize().map_err(err)?;
        let is_dir = real.is_dir();
        (real, is_dir)
    };
    if !is_dir {
        return Err(SandboxError::Profile(format!(
            "workspace {} is not a directory",
            real.display()
        )));
    }
    Ok(real)
}

/// Adds the deployment's deny list (canonical where it exists) to `deny_read`, once each;
/// a path at or above the workspace is an error.
fn add_deployment_deny(
    workspace: &Path,
    deny: &DenyList,
    deny_read: &mut Vec<PathBuf>,
    walker: &mut Walker,
) -> Result<(), SandboxError> {
    for p in deny.paths() {
        let p = walker.canonical(p).map_or_else(|_| p.clone(), |(c, _)| c);
        if workspace.starts_with(&p) {
            return Err(SandboxError::Profile(format!(
                "deny-read path {} contains the workspace {}",
                p.display(),
                workspace.display()
            )));
        }
        if !deny_read.contains(&p) {
            deny_read.push(p);
        }
    }
    Ok(())
}

/// What the placeholders of one resolution stand for.
struct Expand<'a> {
    /// Canonical.
    workspace: &'a Path,
    home: &'a Path,
    /// The private tmp, when the profile asked for one.
    tmp: Option<&'a Path>,
}

impl Expand<'_> {
    /// `s` with `{workspace}`, `{home}` and `{tmp}` replaced; it must then be absolute.
    fn path(&self, s: &str) -> Result<PathBuf, SandboxError> {
        if s.contains("{tmp}") && self.tmp.is_none() {
            return Err(SandboxError::Profile("{tmp} without a private tmp".into()));
        }
        let mut out = s.replace("{workspace}", &self.workspace.to_string_lossy());
        if out.contains("{home}") {
            out = out.replace("{home}", &self.home.to_string_lossy());
        }
        if let Some(t) = self.tmp {
            out = out.replace("{tmp}", &t.to_string_lossy());
        }
        let p = PathBuf::from(out);
        if !p.is_absolute() {
            return Err(SandboxError::Profile(format!("path {s:?} is not absolute")));
        }
        Ok(p)
    }

    /// The private tmp's slot: it exists and is canonical (`tmpdir` makes it so).
    fn tmp_slot(&self) -> Result<Slot, SandboxError> {
        match self.tmp {
            Some(_) => Ok(Slot::Tmp),
            None => Err(SandboxError::Profile("{tmp} without a private tmp".into())),
        }
    }

    /// A protected or deny-read path (`what`), which may not exist yet: canonical when it
    /// exists, else kept lexical, and never with `..`.
    fn not_yet_existing(
        &self,
        s: &str,
        what: &str,
        walker: &mut Walker,
    ) -> Result<PathBuf, SandboxError> {
        let p = self.path(s)?;
        if p.components().any(|c| c == Component::ParentDir) {
            return Err(SandboxError::Profile(format!("{what} path {s:?} has ..")));
        }
        Ok(walker.canonical(&p).map_or(p, |(c, _)| c))
    }
}

#[cfg(test)]
mod tests {
    use super::super::profile::builtin_profiles;
    use std::cell::Cell;
    use std::os::unix::fs::symlink;
    use std::path::Path;

    thread_local! {
        /// Fresh resolutions on this thread (each test runs on its own).
        pub(super) static FRESH: Cell<usize> = const { Cell::new(0) };
    }

    fn fresh() -> usize {
        FRESH.with(Cell::get)
    }

    /// A scratch dir outside /tmp, whose mtime every test's tempdir changes (a change less
    /// than RACY old keeps a resolution out of the cache).
    fn quiet_tempdir() -> tempfile::TempDir {
        let base = Path::new(env!("CARGO_MANIFEST_DIR")).join("target/unit-tmp");
        std::fs::create_dir_all(&base).unwrap();
        tempfile::tempdir_in(base).unwrap()
    }

    /// A cached resolution is reused while nothing changed, and a change in any directory it
    /// looked in is seen: a secret's name turned into a link, a read root replaced, a new
    /// secret file in the workspace.
    #[test]
    fn cached_until_a_looked_up_directory_changes() {
        let t = quiet_tempdir();
        let root = t.path().canonicalize().unwrap();
        let (ws, home) = (root.join("ws"), root.join("home"));
        for d in [
            &ws,
            &home,
            &home.join("data"),
            &home.join("keys"),
            &home.join("other"),
        ] {
            std::fs::create_dir_all(d).unwrap();
        }
        let mut spec = builtin_profiles()["autonomous-read"].clone();
        spec.read.push("{home}/data".into());
        let deny = super::DenyList::default();
        let resolve = || spec.resolve_with(&ws, &home, &deny).unwrap();
        // Just made: racy, so resolved afresh until RACY has passed. Any directory the
        // lookups pass through counts, up to `/`: another test or process making a name in
        // one (the repository's `target`, say) within RACY of the first resolution keeps it
        // out of the cache too, so a few tries; a cache that never serves fails them all.
        let first = fresh();
        let (a, b) = (1..=5)
            .find_map(|_| {
                std::thread::sleep(super::RACY + std::time::Duration::from_millis(50));
                let before = fresh();
                let (a, b) = (resolve(), resolve());
                (fresh() == before + 1).then_some((a, b))
            })
            .expect("a second resolution from the cache, in one of 5 quiet tries");
        // The same paths but each its own private tmp.
        let ours = |p: &super::super::ResolvedProfile| {
            let tmp = p.tmp.as_ref().map(|t| t.path().to_path_buf());
            let read = p.read.iter().filter(|r| Some(*r) != tmp.as_ref());
            (read.cloned().collect::<Vec<_>>(), p.deny_read.clone())
        };
        assert_eq!(ours(&a), ours(&b));
        assert_ne!(
            a.tmp.as_ref().map(|t| t.path()),
            b.tmp.as_ref().map(|t| t.path())
        );
        assert!(a.read.contains(&home.join("data")));
        assert!(a.tmp.is_some());

        // ~/.ssh appears as a link: the denied path is where it leads.
        symlink(home.join("keys"), home.join(".ssh")).unwrap();
        let c = resolve();
        assert!(
            c.deny_read.contains(&home.join("keys")),
            "{:?}",
            c.deny_read
        );
        assert!(!c.deny_read.contains(&home.join(".ssh")));

        // A read root replaced by a link elsewhere: the grant follows it.
        std::fs::rename(home.join("data"), root.join("aside")).unwrap();
        symlink(home.join("other"), home.join("data")).unwrap();
        let d = resolve();
        assert!(d.read.contains(&home.join("other")), "{:?}", d.read);
        assert!(!d.read.contains(&home.join("data")));

        // A new secret file in the workspace is denied on the next resolution.
        std::fs::write(ws.join(".env.local"), "k").unwrap();
        let e = resolve();
        assert!(
            e.deny_read.contains(&ws.join(".env.local")),
            "{:?}",
            e.deny_read
        );
        assert!(fresh() >= first + 4);
    }

    /// The private tmp is the run's own on every resolution, cached or not.
    #[test]
    fn tmp_is_never_cached() {
        let t = tempfile::tempdir().unwrap();
        let spec = &builtin_profiles()["autonomous-read"];
        std::thread::sleep(super::RACY + std::time::Duration::from_millis(50));
        let a = spec.resolve(t.path()).unwrap();
        let b = spec.resolve(t.path()).unwrap();
        let (ta, tb) = (a.tmp.clone().unwrap(), b.tmp.clone().unwrap());
        assert_ne!(ta.path(), tb.path(), "concurrent runs never share a tmp");
        for (p, tmp) in [(&a, ta.path()), (&b, tb.path())] {
            assert!(p.read.iter().any(|r| r == tmp) && p.write.iter().any(|w| w == tmp));
            assert_eq!(tmp.canonicalize().unwrap(), tmp);
            assert!(!Path::new(tmp).join("x").exists());
        }
    }
}
