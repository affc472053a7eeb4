//! realpath(3) done name by name, so that a resolution can say which directories its answer
//! depends on. Resolving a profile canonicalizes ~35 paths; glibc's realpath issues one
//! readlink per prefix of each (~80 per autonomous profile, most of a resolve's time), while
//! this walker looks each prefix up once per resolution and records, with its stamp, every
//! directory it looked a name up in. Those stamps are what `profile_paths` re-checks before
//! reusing a resolution: creating, removing, renaming or replacing an entry changes its
//! directory's mtime/ctime, a symlink cannot be retargeted in place, and a directory replaced
//! or mounted over shows another device or inode.

use super::landlock_cache::Stamp;
use std::collections::HashMap;
use std::ffi::{OsStr, OsString};
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

/// Symlinks followed in one path before giving up (glibc's MAXSYMLINKS).
const MAX_LINKS: u32 = 40;

/// What a looked-up name is.
#[derive(Debug, Clone)]
enum Node {
    Link(PathBuf),
    Dir,
    Other,
}

/// One resolution's lookups.
#[derive(Debug, Default)]
pub(super) struct Walker {
    /// Each looked-up path and what it was (or the errno of its lstat/readlink).
    seen: HashMap<PathBuf, Result<Node, i32>>,
    /// Every directory a name was looked up in, stamped before the lookup.
    dirs: Vec<(PathBuf, Stamp)>,
    /// A directory could not be stamped: the answers are right but cannot be re-checked.
    unstamped: bool,
}

fn errno(e: &io::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

fn fail(code: i32) -> io::Error {
    io::Error::from_raw_os_error(code)
}

/// Pushes the names of `s` on `todo` so that they pop in order; a trailing slash pops as a
/// final "." (the path must be a directory, as realpath requires).
fn push_names(todo: &mut Vec<OsString>, s: &OsStr) {
    let b = s.as_bytes();
    if b.len() > 1 && b.ends_with(b"/") {
        todo.push(OsString::from("."));
    }
    for name in b.split(|c| *c == b'/').rev().filter(|n| !n.is_empty()) {
        todo.push(OsStr::from_bytes(name).to_os_string());
    }
}

impl Walker {
    /// The directories looked in, with their stamps; None if one could not be stamped.
    pub(super) fn into_dirs(self) -> Option<Vec<(PathBuf, Stamp)>> {
        (!self.unstamped).then_some(self.dirs)
    }

    /// What `path` (a name in `dir`) is, looked up once per walker.
    fn lookup(&mut self, dir: &Path, path: PathBuf) -> Result<Node, i32> {
        if let Some(r) = self.seen.get(&path) {
            return r.clone();
        }
        if !self.dirs.iter().any(|(d, _)| d == dir) {
            match std::fs::symlink_metadata(dir) {
                Ok(m) => self.dirs.push((dir.to_path_buf(), Stamp::from_meta(&m))),
                Err(_) => self.unstamped = true,
            }
        }
        let r = match std::fs::symlink_metadata(&path) {
            Ok(m) if m.file_type().is_symlink() => std::fs::read_link(&path)
                .map(Node::Link)
                .map_err(|e| errno(&e)),
            Ok(m) if m.is_dir() => Ok(Node::Dir),
            Ok(_) => Ok(Node::Other),
            Err(e) => Err(errno(&e)),
        };
        self.seen.insert(path, r.clone());
        r
    }

    /// The canonical form of absolute `p` and whether it is a directory, as realpath(3)
    /// gives it: every symlink followed, `.` and `..` applied to the resolved prefix, an
    /// error when a name is missing or something other than the last name is no directory.
    pub(super) fn canonical(&mut self, p: &Path) -> io::Result<(PathBuf, bool)> {
        if !p.is_absolute() {
            return Err(fail(libc::EINVAL));
        }
        let mut todo = Vec::new();
        push_names(&mut todo, p.as_os_str());
        let (mut out, mut is_dir) = (PathBuf::from("/"), true);
        let mut links = 0;
        while let Some(name) = todo.pop() {
            if !is_dir {
                return Err(fail(libc::ENOTDIR));
            }
            match name.as_bytes() {
                b"." => continue,
                b".." => {
                    out.pop();
                    continue;
                }
                _ => {}
            }
            let path = out.join(&name);
            match self.lookup(&out, path.clone()).map_err(fail)? {
                Node::Link(target) => {
                    links += 1;
                    if links > MAX_LINKS {
                        return Err(fail(libc::ELOOP));
                    }
                    if target.as_os_str().is_empty() {
                        return Err(fail(libc::ENOENT));
                    }
                    if target.is_absolute() {
                        out = PathBuf::from("/");
                    }
                    push_names(&mut todo, target.as_os_str());
                }
                Node::Dir => out = path,
                Node::Other => {
                    out = path;
                    is_dir = false;
                }
            }
        }
        Ok((out, is_dir))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::fs::symlink;

    /// The walker agrees with the C library's realpath, answer and error alike.
    #[test]
    fn same_answers_as_realpath() {
        let t = tempfile::tempdir().unwrap();
        let d = t.path().canonicalize().unwrap();
        std::fs::create_dir_all(d.join("a/b")).unwrap();
        std::fs::write(d.join("a/f"), "x").unwrap();
        symlink("a/b", d.join("rel")).unwrap();
        symlink(d.join("a"), d.join("abs")).unwrap();
        symlink("../a/f", d.join("a/b/up")).unwrap();
        symlink("loop2", d.join("loop1")).unwrap();
        symlink("loop1", d.join("loop2")).unwrap();
        symlink("missing", d.join("dangling")).unwrap();
        symlink("b/", d.join("a/slash")).unwrap();
        let cases = [
            "",
            "/a",
            "/a/",
            "/a/./b",
            "/a/b/..",
            "/a/b/../..",
            "/rel",
            "/rel/",
            "/rel/../f",
            "/abs/b/up",
            "/abs/b/up/",
            "/a/f",
            "/a/f/",
            "/a/f/.",
            "/a/f/..",
            "/a/f/x",
            "/loop1",
            "/dangling",
            "/dangling/x",
            "/missing",
            "/missing/..",
            "/a/slash/..",
            "/a//b",
            "/../../a",
        ];
        let mut w = Walker::default();
        for c in cases {
            let p = PathBuf::from(format!("{}{c}", d.display()));
            let ours = w.canonical(&p).map(|(p, _)| p);
            let libc = p.canonicalize();
            match (&ours, &libc) {
                (Ok(a), Ok(b)) => assert_eq!(a, b, "{c}"),
                (Err(a), Err(b)) => assert_eq!(a.raw_os_error(), b.raw_os_error(), "{c}"),
                _ => panic!("{c}: ours {ours:?}, realpath {libc:?}"),
            }
        }
        for (p, _) in w.into_dirs().unwrap() {
            assert!(p.is_absolute() && p.is_dir(), "{}", p.display());
        }
    }
}
