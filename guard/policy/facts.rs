//! The facts the policy core asks about the world, as an input: the core never touches the
//! filesystem itself. The host implements [`Facts`] with real system calls (and caches);
//! tests and fuzz targets use [`FakeFs`], an in-memory tree, so a decision is deterministic.
//! A decision installs its facts for its duration (see [`super::fs_memo::Scope`]).
//! [`agent_fs::AgentFs`] answers for a container the guard does not run in.

pub mod agent_fs;

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;

/// What kind of object a path names.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
    Symlink,
    Other,
}

/// The part of `stat`/`lstat` the policy looks at.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Meta {
    pub kind: Kind,
    /// Permission bits (`st_mode & 0o7777`).
    pub mode: u32,
}

impl Meta {
    pub fn is_dir(&self) -> bool {
        self.kind == Kind::Dir
    }
    pub fn is_file(&self) -> bool {
        self.kind == Kind::File
    }
    pub fn is_symlink(&self) -> bool {
        self.kind == Kind::Symlink
    }
    /// A regular file with an execute bit.
    pub fn is_runnable(&self) -> bool {
        self.is_file() && self.mode & 0o111 != 0
    }
}

/// Where a bare command name resolves on a PATH, and that file's realpath.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Found {
    pub path: Option<PathBuf>,
    pub real: Option<PathBuf>,
}

/// What a path is to a walk that resolves symlinks: nothing, not a link, or a link to this.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkStatus {
    Missing,
    NotLink,
    Target(PathBuf),
}

/// The filesystem questions a decision asks. Every answer is `None` when unknown or on any
/// error; the core treats unknown as "cannot prove safe".
pub trait Facts: Send + Sync + std::fmt::Debug {
    /// `stat` (follows symlinks).
    fn stat(&self, p: &Path) -> Option<Meta>;
    /// `lstat`.
    fn lstat(&self, p: &Path) -> Option<Meta>;
    /// `readlink`.
    fn read_link(&self, p: &Path) -> Option<PathBuf>;
    /// `lstat`, then `readlink` for a link, as one question: a walk through a path asks
    /// it of every component. `None` when a link's target cannot be read. A host may answer
    /// it with `readlink` alone (which tells "not a link" from "missing" by its error).
    fn link_status(&self, p: &Path) -> Option<LinkStatus> {
        match self.lstat(p) {
            None => Some(LinkStatus::Missing),
            Some(m) if m.is_symlink() => self.read_link(p).map(LinkStatus::Target),
            Some(_) => Some(LinkStatus::NotLink),
        }
    }
    /// `realpath` (the path must exist).
    fn realpath(&self, p: &Path) -> Option<PathBuf>;
    /// The names in directory `p` (following symlinks), for glob expansion; `None` when
    /// unknown or not a directory.
    fn list_dir(&self, _p: &Path) -> Option<Vec<String>> {
        None
    }
    /// The names the start-up files of a login shell run for `home` may set (`/etc/profile`,
    /// `~/.profile`, what they source: see `shell::scan_startup`); `None` when not known.
    fn login_names(&self, _home: &Path) -> Option<Arc<BTreeSet<String>>> {
        None
    }
    /// The first runnable `name` on `path_var` (relative and empty entries are relative to
    /// `cwd`, as a shell takes them).
    fn which(&self, name: &str, path_var: &str, cwd: &Path) -> Found {
        which_by_stat(self, name, path_var, cwd)
    }
}

/// [`Facts::which`] by `stat` of each candidate; a host may cache it.
pub fn which_by_stat<F: Facts + ?Sized>(f: &F, name: &str, path_var: &str, cwd: &Path) -> Found {
    if name.is_empty() || name.contains('/') {
        return Found::default();
    }
    for dir in path_var.split(':') {
        let dir = if dir.starts_with('/') {
            PathBuf::from(dir)
        } else {
            cwd.join(dir)
        };
        let candidate = dir.join(name);
        if f.stat(&candidate).is_some_and(|m| m.is_runnable()) {
            let real = f.realpath(&candidate);
            return Found {
                path: Some(candidate),
                real,
            };
        }
    }
    Found::default()
}

/// Knows nothing: every question is unanswered (what the core sees outside a decision).
#[derive(Debug, Default, Clone, Copy)]
pub struct NoFacts;

impl Facts for NoFacts {
    fn stat(&self, _: &Path) -> Option<Meta> {
        None
    }
    fn lstat(&self, _: &Path) -> Option<Meta> {
        None
    }
    fn read_link(&self, _: &Path) -> Option<PathBuf> {
        None
    }
    fn realpath(&self, _: &Path) -> Option<PathBuf> {
        None
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Node {
    File(u32),
    Dir,
    Link(PathBuf),
}

/// An in-memory filesystem: absolute paths to files (with a mode), directories and
/// symlinks. Parents are created implicitly as directories.
#[derive(Debug, Clone, Default)]
pub struct FakeFs {
    nodes: BTreeMap<PathBuf, Node>,
}

/// Symlinks followed before a look-up gives up (the kernel's limit).
pub const MAX_LINKS: usize = 40;

impl FakeFs {
    pub fn new() -> Self {
        let mut fs = FakeFs::default();
        fs.nodes.insert(PathBuf::from("/"), Node::Dir);
        fs
    }

    fn parents(&mut self, p: &Path) {
        for a in p.ancestors().skip(1) {
            self.nodes.entry(a.to_path_buf()).or_insert(Node::Dir);
        }
    }

    /// A directory (and its parents).
    pub fn dir(mut self, p: &str) -> Self {
        self.parents(Path::new(p));
        self.nodes.insert(PathBuf::from(p), Node::Dir);
        self
    }

    /// A regular file with permission bits `mode`.
    pub fn file(mut self, p: &str, mode: u32) -> Self {
        self.parents(Path::new(p));
        self.nodes.insert(PathBuf::from(p), Node::File(mode));
        self
    }

    /// A symlink `p` -> `target`.
    pub fn link(mut self, p: &str, target: &str) -> Self {
        self.parents(Path::new(p));
        self.nodes
            .insert(PathBuf::from(p), Node::Link(PathBuf::from(target)));
        self
    }

    /// The node `p` names with every symlink on the way resolved (the last one too when
    /// `follow`), and its resolved path.
    fn walk(&self, p: &Path, follow: bool) -> Option<(PathBuf, &Node)> {
        let cur = resolve_with(p, follow, |next| match self.nodes.get(next) {
            None => Step::Missing,
            Some(Node::Dir) => Step::Dir,
            Some(Node::Link(t)) => Step::Link(t.clone()),
            Some(Node::File(_)) => Step::Leaf,
        })
        .ok()?;
        let node = self.nodes.get(&cur)?;
        Some((cur, node))
    }
}

/// What one component of a walk is, to the source the walk asks.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    Dir,
    Link(PathBuf),
    /// Anything that is neither (a file, a device): nothing can be below it.
    Leaf,
    Missing,
    Unknown,
}

/// Why a walk stopped short of its path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Stop {
    Missing,
    Unknown,
}

/// Resolves absolute `p` component by component as the kernel does, asking `look` what
/// each component is: `..` drops the last component, every symlink on the way is expanded
/// (the last one too when `follow`), at most [`MAX_LINKS`] of them, and a name below a leaf
/// is missing (`ENOTDIR`). The resolved path; a relative `p` is unknown.
pub fn resolve_with(
    p: &Path,
    follow: bool,
    mut look: impl FnMut(&Path) -> Step,
) -> Result<PathBuf, Stop> {
    if !p.is_absolute() {
        return Err(Stop::Unknown);
    }
    let parts = |p: &Path| {
        p.components()
            .rev()
            .map(|c| PathBuf::from(c.as_os_str()))
            .collect::<Vec<_>>()
    };
    let mut pending = parts(p);
    let mut cur = PathBuf::from("/");
    let mut links = 0;
    while let Some(name) = pending.pop() {
        match Path::new(&name).components().next() {
            Some(Component::RootDir) => cur = PathBuf::from("/"),
            Some(Component::CurDir) | None => {}
            Some(Component::ParentDir) => {
                cur.pop();
            }
            Some(Component::Normal(n)) => {
                let next = cur.join(n);
                match look(&next) {
                    Step::Link(t) if follow || !pending.is_empty() => {
                        links += 1;
                        if links > MAX_LINKS {
                            return Err(Stop::Missing);
                        }
                        pending.extend(parts(&t));
                    }
                    Step::Dir | Step::Link(_) => cur = next,
                    Step::Leaf if pending.is_empty() => cur = next,
                    Step::Leaf | Step::Missing => return Err(Stop::Missing),
                    Step::Unknown => return Err(Stop::Unknown),
                }
            }
            Some(Component::Prefix(_)) => return Err(Stop::Unknown),
        }
    }
    Ok(cur)
}

fn meta_of(n: &Node) -> Meta {
    match n {
        Node::File(mode) => Meta {
            kind: Kind::File,
            mode: *mode,
        },
        Node::Dir => Meta {
            kind: Kind::Dir,
            mode: 0o755,
        },
        Node::Link(_) => Meta {
            kind: Kind::Symlink,
            mode: 0o777,
        },
    }
}

impl Facts for FakeFs {
    fn stat(&self, p: &Path) -> Option<Meta> {
        self.walk(p, true).map(|(_, n)| meta_of(n))
    }
    fn lstat(&self, p: &Path) -> Option<Meta> {
        self.walk(p, false).map(|(_, n)| meta_of(n))
    }
    fn read_link(&self, p: &Path) -> Option<PathBuf> {
        match self.walk(p, false)? {
            (_, Node::Link(t)) => Some(t.clone()),
            _ => None,
        }
    }
    fn realpath(&self, p: &Path) -> Option<PathBuf> {
        self.walk(p, true).map(|(p, _)| p)
    }
    fn list_dir(&self, p: &Path) -> Option<Vec<String>> {
        let (dir, node) = self.walk(p, true)?;
        if *node != Node::Dir {
            return None;
        }
        Some(
            self.nodes
                .keys()
                .filter(|k| k.parent() == Some(dir.as_path()))
                .filter_map(|k| k.file_name().map(|n| n.to_string_lossy().into_owned()))
                .collect(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_fs_follows_links_like_the_kernel() {
        let fs = FakeFs::new()
            .file("/home/a/.ssh/id_rsa", 0o600)
            .link("/w/k", "/home/a/.ssh")
            .link("/w/rel", "../home/a")
            .link("/w/loop", "/w/loop")
            .file("/usr/bin/ls", 0o755);
        assert_eq!(
            fs.realpath(Path::new("/w/k/id_rsa")),
            Some(PathBuf::from("/home/a/.ssh/id_rsa"))
        );
        assert_eq!(
            fs.realpath(Path::new("/w/rel/.ssh")),
            Some(PathBuf::from("/home/a/.ssh"))
        );
        assert!(fs.lstat(Path::new("/w/k")).is_some_and(|m| m.is_symlink()));
        assert!(fs.stat(Path::new("/w/k")).is_some_and(|m| m.is_dir()));
        assert_eq!(fs.stat(Path::new("/w/loop")), None);
        assert_eq!(fs.stat(Path::new("/usr/bin/ls/x")), None);
        let f = fs.which("ls", "/nope:/usr/bin", Path::new("/w"));
        assert_eq!(f.path, Some(PathBuf::from("/usr/bin/ls")));
        assert_eq!(
            fs.which("id_rsa", "/home/a/.ssh", Path::new("/")).path,
            None
        );
    }
}
