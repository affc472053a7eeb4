//! Per-decision memo of the filesystem look-ups the policy makes (`stat`, `lstat`,
//! `readlink`, `realpath`). One `decide()` checks the same directories again and again
//! (`/tmp` for every operand, each PATH entry for every segment); inside a [`Scope`] each
//! distinct question is asked of the kernel once. Nothing outlives the scope, so no
//! decision ever sees an answer older than the decision itself. Outside a scope every
//! call goes straight to the kernel.

use std::cell::{Cell, RefCell};
use std::ffi::{OsStr, OsString};
use std::fs::Metadata;
use std::path::{Path, PathBuf};

/// Keys are agent-chosen paths: foldhash keeps a per-process random seed (no flooding by
/// chosen collisions) at a fraction of SipHash's cost. Keyed by the raw bytes, so a hit
/// needs the same spelling (never a wrong answer, at worst one more syscall).
type Map = foldhash::HashMap<OsString, Answer>;

/// Which question was asked about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Stat,
    Lstat,
    ReadLink,
    Canonicalize,
}

#[derive(Debug, Clone)]
enum Answer {
    Meta(Option<Metadata>),
    Path(Option<PathBuf>),
}

thread_local! {
    static DEPTH: Cell<usize> = const { Cell::new(0) };
    /// One map per [`Op`], indexed by `Op as usize`.
    static MEMO: RefCell<[Map; 4]> = RefCell::new(Default::default());
}

/// While alive, this thread's look-ups are memoised; the memo is emptied when the
/// outermost scope ends (scopes nest).
#[derive(Debug)]
pub struct Scope {
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Scope {
    pub fn enter() -> Self {
        DEPTH.with(|d| d.set(d.get() + 1));
        Scope {
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        let left = DEPTH.with(|d| {
            let n = d.get().saturating_sub(1);
            d.set(n);
            n
        });
        if left == 0 {
            MEMO.with(|m| m.borrow_mut().iter_mut().for_each(Map::clear));
        }
    }
}

fn memo(op: Op, path: &Path, ask: impl FnOnce() -> Answer) -> Answer {
    if DEPTH.with(Cell::get) == 0 {
        return ask();
    }
    let key: &OsStr = path.as_os_str();
    if let Some(hit) = MEMO.with(|m| m.borrow()[op as usize].get(key).cloned()) {
        return hit;
    }
    let answer = ask();
    MEMO.with(|m| m.borrow_mut()[op as usize].insert(key.to_os_string(), answer.clone()));
    answer
}

fn meta(a: Answer) -> Option<Metadata> {
    match a {
        Answer::Meta(m) => m,
        Answer::Path(_) => None,
    }
}

fn path(a: Answer) -> Option<PathBuf> {
    match a {
        Answer::Path(p) => p,
        Answer::Meta(_) => None,
    }
}

/// `stat` (follows symlinks); `None` on any error.
pub fn metadata(p: &Path) -> Option<Metadata> {
    meta(memo(Op::Stat, p, || {
        Answer::Meta(std::fs::metadata(p).ok())
    }))
}

/// `lstat`; `None` on any error.
pub fn symlink_metadata(p: &Path) -> Option<Metadata> {
    meta(memo(Op::Lstat, p, || {
        Answer::Meta(std::fs::symlink_metadata(p).ok())
    }))
}

/// `readlink`; `None` on any error.
pub fn read_link(p: &Path) -> Option<PathBuf> {
    path(memo(Op::ReadLink, p, || {
        Answer::Path(std::fs::read_link(p).ok())
    }))
}

/// `realpath`; `None` on any error.
pub fn canonicalize(p: &Path) -> Option<PathBuf> {
    path(memo(Op::Canonicalize, p, || {
        Answer::Path(std::fs::canonicalize(p).ok())
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Inside a scope a changed file is seen as it was; after the scope, as it is.
    #[test]
    fn scope_memoises_and_forgets() {
        let dir = tempfile::tempdir().expect("tempdir");
        let f = dir.path().join("f");
        assert!(metadata(&f).is_none());
        {
            let _s = Scope::enter();
            assert!(symlink_metadata(&f).is_none());
            std::fs::write(&f, b"x").expect("write");
            assert!(symlink_metadata(&f).is_none(), "memoised inside the scope");
            assert!(metadata(&f).is_some(), "stat is a separate question");
        }
        assert!(symlink_metadata(&f).is_some(), "forgotten after the scope");
        std::fs::remove_file(&f).expect("rm");
        assert!(metadata(&f).is_none(), "no memo outside a scope");
    }
}
