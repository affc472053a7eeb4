//! The symlink-aware half of the path checks: a path resolved the way the kernel would walk
//! it, one `readlink` per component (memoised per decision by [`fs_memo`]).

use super::fs_memo;
use crate::policy::facts::LinkStatus;
use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Longest symlink chain followed before giving up (Linux's own limit is 40).
const MAX_SYMLINKS: usize = 40;

/// Resolves symlinks the way the kernel would, but tolerates a missing tail and dangling
/// links (a write through a dangling link creates its target). `None` on a symlink loop.
pub fn resolve_lenient(path: &Path) -> Option<PathBuf> {
    // Sized for the usual walk without a link, so the pushes below do not reallocate.
    let mut current = PathBuf::with_capacity(path.as_os_str().len() + 1);
    current.push("/");
    // The common case first: `path`'s own components in order, until a symlink (most
    // paths have none). At one, [`walk`] takes over from the same state, the link's name
    // first again.
    let mut comps = path.components();
    while let Some(comp) = comps.next() {
        match comp {
            Component::RootDir | Component::Prefix(_) => to_root(&mut current),
            Component::CurDir => {}
            Component::ParentDir => {
                current.pop();
            }
            Component::Normal(name) => {
                push_name(&mut current, name);
                match fs_memo::link_status(&current)? {
                    LinkStatus::Target(_) => {
                        current.pop();
                        let mut pending = Vec::with_capacity(8);
                        push_front_components(&mut pending, comps.as_path(), Cow::Borrowed);
                        pending.push(Cow::Borrowed(name));
                        return walk(pending, current);
                    }
                    LinkStatus::NotLink => {}
                    // Missing: nothing below it exists, so no link can follow.
                    LinkStatus::Missing => {
                        for rest in comps {
                            match rest {
                                Component::RootDir | Component::Prefix(_) => to_root(&mut current),
                                Component::CurDir => {}
                                Component::ParentDir => {
                                    current.pop();
                                }
                                Component::Normal(n) => push_name(&mut current, n),
                            }
                        }
                        return Some(current);
                    }
                }
            }
        }
    }
    Some(current)
}

/// The general walk: `pending` holds the names still to walk, the next one last; `current`
/// (which exists so far) grows and shrinks in place. Only a link's target is copied.
fn walk(mut pending: Vec<Cow<'_, OsStr>>, mut current: PathBuf) -> Option<PathBuf> {
    let mut followed = 0usize;
    let mut exists = true;
    while let Some(name) = pending.pop() {
        if &*name == OsStr::new("..") {
            current.pop();
            continue;
        }
        push_name(&mut current, &name);
        if exists {
            match fs_memo::link_status(&current)? {
                LinkStatus::Target(target) => {
                    followed += 1;
                    if followed > MAX_SYMLINKS {
                        return None;
                    }
                    current.pop();
                    let owned = |n: &OsStr| Cow::Owned(n.to_os_string());
                    if target.has_root() {
                        to_root(&mut current);
                    }
                    push_front_components(&mut pending, &target, owned);
                    continue;
                }
                LinkStatus::NotLink => {}
                LinkStatus::Missing => exists = false,
            }
        }
    }
    Some(current)
}

/// Back to `/`, keeping the buffer.
fn to_root(current: &mut PathBuf) {
    let s = current.as_mut_os_string();
    s.clear();
    s.push("/");
}

/// `current.push(name)` for a single name (never empty, no `/`) onto an absolute path,
/// without `PathBuf::push`'s general handling of separators and absolute arguments.
fn push_name(current: &mut PathBuf, name: &OsStr) {
    let s = current.as_mut_os_string();
    if !s.as_encoded_bytes().ends_with(b"/") {
        s.push("/");
    }
    s.push(name);
}

/// Queues `path`'s components before what is left (`pending` is walked from its end). A
/// root is not queued: the caller restarts at `/` for an absolute `path`.
fn push_front_components<'a, 'p>(
    pending: &mut Vec<Cow<'a, OsStr>>,
    path: &'p Path,
    name: impl Fn(&'p OsStr) -> Cow<'a, OsStr>,
) {
    for comp in path.components().rev() {
        match comp {
            Component::RootDir | Component::Prefix(_) | Component::CurDir => {}
            Component::ParentDir => pending.push(Cow::Borrowed(OsStr::new(".."))),
            Component::Normal(n) => pending.push(name(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::facts::FakeFs;
    use std::ffi::OsString;
    use std::sync::Arc;

    /// The walk as it was before the fast path (a stack of owned names from the start).
    fn reference(path: &Path) -> Option<PathBuf> {
        fn queue(pending: &mut Vec<OsString>, path: &Path, current: &mut PathBuf) {
            for comp in path.components().rev() {
                match comp {
                    Component::RootDir | Component::Prefix(_) => *current = PathBuf::from("/"),
                    Component::CurDir => {}
                    Component::ParentDir => pending.push(OsString::from("..")),
                    Component::Normal(n) => pending.push(n.to_os_string()),
                }
            }
        }
        let mut pending = Vec::new();
        let mut current = PathBuf::from("/");
        queue(&mut pending, path, &mut current);
        let (mut followed, mut exists) = (0, true);
        while let Some(name) = pending.pop() {
            if name == ".." {
                current.pop();
                continue;
            }
            current.push(&name);
            if exists {
                match fs_memo::symlink_metadata(&current) {
                    Some(meta) if meta.is_symlink() => {
                        followed += 1;
                        if followed > MAX_SYMLINKS {
                            return None;
                        }
                        let target = fs_memo::read_link(&current)?;
                        current.pop();
                        queue(&mut pending, &target, &mut current);
                        continue;
                    }
                    Some(_) => {}
                    None => exists = false,
                }
            }
        }
        Some(current)
    }

    /// Same answers as the reference walk: links absolute and relative, chains, loops,
    /// dangling links, `..` after a link, missing tails, relative inputs.
    #[test]
    fn resolves_as_the_reference_walk() {
        let fs = FakeFs::new()
            .file("/h/.ssh/id_rsa", 0o600)
            .dir("/w/sub")
            .link("/w/abs", "/h/.ssh")
            .link("/w/rel", "../h/.ssh")
            .link("/w/chain", "rel")
            .link("/w/dot", "./sub/../abs")
            .link("/w/loop1", "loop2")
            .link("/w/loop2", "loop1")
            .link("/w/dangling", "/nowhere/x")
            .link("/w/sub/up", "..")
            .link("/w/root", "/");
        let _scope = fs_memo::Scope::enter(Arc::new(fs));
        let heads = [
            "/w",
            "/w/abs",
            "/w/rel",
            "/w/chain",
            "/w/dot",
            "/w/loop1",
            "/w/dangling",
            "/w/sub/up",
            "/w/root",
            "/w/missing",
            "/",
            "w",
            "./w/abs",
            "/w/sub",
        ];
        let tails = [
            "",
            "/id_rsa",
            "/../x",
            "/./id_rsa/",
            "/a/b",
            "/..",
            "/abs/id_rsa",
        ];
        for h in heads {
            for t in tails {
                let p = format!("{h}{t}");
                let p = Path::new(&p);
                assert_eq!(resolve_lenient(p), reference(p), "{}", p.display());
            }
        }
        assert_eq!(
            resolve_lenient(Path::new("/w/chain/id_rsa")),
            Some(PathBuf::from("/h/.ssh/id_rsa"))
        );
        assert_eq!(resolve_lenient(Path::new("/w/loop1/x")), None);
    }

    /// `push_name` appends exactly as `PathBuf::push` does for one name.
    #[test]
    fn push_name_is_pathbuf_push() {
        for base in ["/", "/a", "/a/b", "/a b/c"] {
            for name in ["x", "..x", "y z", "é"] {
                let mut want = PathBuf::from(base);
                want.push(name);
                let mut got = PathBuf::from(base);
                push_name(&mut got, OsStr::new(name));
                assert_eq!(got.as_os_str(), want.as_os_str(), "{base} + {name}");
            }
        }
    }
}
