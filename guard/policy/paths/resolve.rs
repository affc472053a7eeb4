//! The symlink-aware half of the path checks: a path resolved the way the kernel would walk
//! it, one `lstat` per component (memoised per decision by [`fs_memo`]).

use super::fs_memo;
use std::borrow::Cow;
use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Longest symlink chain followed before giving up (Linux's own limit is 40).
const MAX_SYMLINKS: usize = 40;

/// Resolves symlinks the way the kernel would, but tolerates a missing tail and dangling
/// links (a write through a dangling link creates its target). `None` on a symlink loop.
pub fn resolve_lenient(path: &Path) -> Option<PathBuf> {
    // Names still to walk, the next one last; `current` grows and shrinks in place. The
    // names of `path` itself are borrowed; only a link's target is copied.
    let mut pending: Vec<Cow<'_, OsStr>> = Vec::with_capacity(8);
    // Sized for the usual walk without a link, so the pushes below do not reallocate.
    let mut current = PathBuf::with_capacity(path.as_os_str().len() + 1);
    current.push("/");
    push_front_components(&mut pending, path, Cow::Borrowed, &mut current);
    let mut followed = 0usize;
    let mut exists = true;
    while let Some(name) = pending.pop() {
        if &*name == OsStr::new("..") {
            current.pop();
            continue;
        }
        push_name(&mut current, &name);
        if exists {
            match fs_memo::symlink_metadata(&current) {
                Some(meta) if meta.is_symlink() => {
                    followed += 1;
                    if followed > MAX_SYMLINKS {
                        return None;
                    }
                    let target = fs_memo::read_link(&current)?;
                    current.pop();
                    let owned = |n: &OsStr| Cow::Owned(n.to_os_string());
                    push_front_components(&mut pending, &target, owned, &mut current);
                    continue;
                }
                Some(_) => {}
                None => exists = false,
            }
        }
    }
    Some(current)
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

/// Queues `path`'s components before what is left (`pending` is walked from its end); an
/// absolute path restarts at `/` (a root can only be the first component).
fn push_front_components<'a, 'p>(
    pending: &mut Vec<Cow<'a, OsStr>>,
    path: &'p Path,
    name: impl Fn(&'p OsStr) -> Cow<'a, OsStr>,
    current: &mut PathBuf,
) {
    for comp in path.components().rev() {
        match comp {
            Component::RootDir | Component::Prefix(_) => {
                // Back to `/`, keeping the buffer.
                let s = current.as_mut_os_string();
                s.clear();
                s.push("/");
            }
            Component::CurDir => {}
            Component::ParentDir => pending.push(Cow::Borrowed(OsStr::new(".."))),
            Component::Normal(n) => pending.push(name(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
