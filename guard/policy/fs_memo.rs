//! The facts of the decision under way, and a per-decision memo of the questions asked of
//! them (`stat`, `lstat`, `readlink`, `realpath`, PATH look-ups). One `decide()` checks the
//! same directories again and again (`/tmp` for every operand, each PATH entry for every
//! segment); inside a [`Scope`] each distinct question is asked of the [`Facts`] once.
//! Nothing outlives the scope, so no decision sees an answer older than itself. Outside a
//! scope there are no facts: every answer is `None` (unknown, never proven safe).

use super::facts::{Facts, Found, LinkStatus, Meta};
use std::cell::RefCell;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Keys are agent-chosen paths: foldhash keeps a per-process random seed (no flooding by
/// chosen collisions) at a fraction of SipHash's cost. Keyed by the raw bytes, so a hit
/// needs the same spelling (never a wrong answer, at worst one more question).
type Map = foldhash::HashMap<OsString, Answer>;

/// Which question was asked about a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Op {
    Stat,
    Lstat,
    ReadLink,
    Canonicalize,
    Link,
}

#[derive(Debug, Clone)]
enum Answer {
    Meta(Option<Meta>),
    Path(Option<PathBuf>),
    Link(Option<LinkStatus>),
}

/// This thread's decision state, in one thread-local (each access to one costs a check).
struct State {
    /// Open [`Scope`]s; `0`: no memo.
    depth: usize,
    facts: Option<Arc<dyn Facts>>,
    /// One map per [`Op`], indexed by `Op as usize`.
    memo: [Map; 5],
}

thread_local! {
    static STATE: RefCell<State> = RefCell::new(State {
        depth: 0,
        facts: None,
        memo: Default::default(),
    });
}

/// While alive, this thread's questions go to its facts and are memoised; the memo is
/// emptied (and the previous facts restored) when the scope ends. Scopes nest.
#[derive(Debug)]
pub struct Scope {
    previous: Option<Arc<dyn Facts>>,
    _not_send: std::marker::PhantomData<*const ()>,
}

impl Scope {
    /// Installs `facts` for this thread until the scope is dropped.
    pub fn enter(facts: Arc<dyn Facts>) -> Self {
        let previous = STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.depth += 1;
            // Answers from other facts must not leak into these.
            s.memo.iter_mut().for_each(Map::clear);
            s.facts.replace(facts)
        });
        Scope {
            previous,
            _not_send: std::marker::PhantomData,
        }
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        STATE.with(|s| {
            let mut s = s.borrow_mut();
            s.depth = s.depth.saturating_sub(1);
            s.facts = self.previous.take();
            s.memo.iter_mut().for_each(Map::clear);
        });
    }
}

/// The installed facts (`None` when there are none). A clone of the handle, so no borrow of
/// the state is held while they answer.
fn facts() -> Option<Arc<dyn Facts>> {
    STATE.with(|s| s.borrow().facts.clone())
}

/// Asks the installed facts (`None` when there are none).
fn ask<T>(q: impl FnOnce(&dyn Facts) -> Option<T>) -> Option<T> {
    facts().as_deref().and_then(q)
}

/// The memoised answer to `op` on `path`, else `q`'s (remembered inside a scope). A hit
/// costs one access to the state and no allocation.
fn memo(op: Op, path: &Path, q: impl FnOnce(&dyn Facts) -> Answer, unknown: Answer) -> Answer {
    let key: &OsStr = path.as_os_str();
    let (facts, remember) = match STATE.with(|s| {
        let s = s.borrow();
        let hit = (s.depth > 0)
            .then(|| s.memo[op as usize].get(key).cloned())
            .flatten();
        hit.ok_or_else(|| (s.facts.clone(), s.depth > 0))
    }) {
        Ok(hit) => return hit,
        Err(miss) => miss,
    };
    let answer = facts.as_deref().map_or(unknown, q);
    if remember {
        STATE.with(|s| s.borrow_mut().memo[op as usize].insert(key.to_os_string(), answer.clone()));
    }
    answer
}

fn meta(a: Answer) -> Option<Meta> {
    match a {
        Answer::Meta(m) => m,
        _ => None,
    }
}

fn path(a: Answer) -> Option<PathBuf> {
    match a {
        Answer::Path(p) => p,
        _ => None,
    }
}

/// `stat` (follows symlinks); `None` when unknown.
pub fn metadata(p: &Path) -> Option<Meta> {
    meta(memo(
        Op::Stat,
        p,
        |f| Answer::Meta(f.stat(p)),
        Answer::Meta(None),
    ))
}

/// `lstat`; `None` when unknown.
pub fn symlink_metadata(p: &Path) -> Option<Meta> {
    meta(memo(
        Op::Lstat,
        p,
        |f| Answer::Meta(f.lstat(p)),
        Answer::Meta(None),
    ))
}

/// `readlink`; `None` when unknown.
pub fn read_link(p: &Path) -> Option<PathBuf> {
    path(memo(
        Op::ReadLink,
        p,
        |f| Answer::Path(f.read_link(p)),
        Answer::Path(None),
    ))
}

/// [`Facts::link_status`]; `None` when unknown.
pub fn link_status(p: &Path) -> Option<LinkStatus> {
    match memo(
        Op::Link,
        p,
        |f| Answer::Link(f.link_status(p)),
        // No facts: nothing is known to exist (as a failed `lstat`).
        Answer::Link(Some(LinkStatus::Missing)),
    ) {
        Answer::Link(l) => l,
        _ => None,
    }
}

/// `realpath`; `None` when unknown.
pub fn canonicalize(p: &Path) -> Option<PathBuf> {
    path(memo(
        Op::Canonicalize,
        p,
        |f| Answer::Path(f.realpath(p)),
        Answer::Path(None),
    ))
}

/// The names in a directory (glob expansion; not memoised: asked once per glob word).
pub fn list_dir(p: &Path) -> Option<Vec<String>> {
    ask(|f| f.list_dir(p))
}

/// A bare command name's PATH look-up (the analyser memoises it per analysis).
pub fn which(name: &str, path_var: &str, cwd: &Path) -> Found {
    ask(|f| Some(f.which(name, path_var, cwd))).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::facts::FakeFs;

    /// Inside a scope the facts answer; outside, nothing is known.
    #[test]
    fn scope_installs_facts_and_forgets_them() {
        let f = Path::new("/w/f");
        assert!(metadata(f).is_none());
        {
            let _s = Scope::enter(Arc::new(FakeFs::new().file("/w/f", 0o644)));
            assert!(symlink_metadata(f).is_some_and(|m| m.is_file()));
            {
                let _inner = Scope::enter(Arc::new(FakeFs::new()));
                assert!(metadata(f).is_none(), "inner facts, no stale memo");
            }
            assert!(metadata(f).is_some(), "outer facts restored");
        }
        assert!(metadata(f).is_none(), "no facts outside a scope");
    }
}
