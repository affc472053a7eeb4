//! What a workspace's watches saw between its scan and the end of a run granted from it, read
//! as one state per name: could a name the run was able to read have named, at some moment,
//! a file that no scan judged?
//!
//! A directory the scan found no secret in is granted whole, so a name made in it after the
//! scan is readable to the run. The rescan after the run (`sandbox::run`) judges each name as
//! it is then; what it cannot judge is a state that came and went before. A hard link to
//! `~/.ssh/id_ed25519` toggled in and out by a process outside the guard is such a state. The
//! watches report every entry change in order, with names and what ties a rename's two
//! halves together (inotify's cookie; fanotify's handle of the moved file: `ws_fanotify`), so:
//! - a name made in the window (created, or moved in from outside the watched tree or from
//!   another name made in the window) names an unjudged file until the end, when the rescan
//!   judges it: it must still name that file then. Removed, moved out of the tree or
//!   replaced before, it **hid** a state;
//! - a name moved from one the scan judged carries that judgment (an editor's backup), and a
//!   file moved in from a secret's name hid a state at once (the rescan judges names and
//!   content, and a renamed `.env` may match neither);
//! - any directory made or moved in hid a state: its entries were never watched;
//! - a queue overflow hid whatever it dropped.
//!
//! An editor's atomic save (a temporary file renamed over the target) hides nothing: the
//! temporary's file is the target's at the end. Writes into a file change no name: a file
//! rewritten with a secret and restored within one run is not seen (SECURITY.md).

use nix::sys::inotify::AddWatchFlags as F;
use std::collections::{HashMap, HashSet};
use std::ffi::OsStr;
use std::path::{Path, PathBuf};

/// Where a file moved from: what the scan knew of it under its old name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Origin {
    /// The scan judged it readable.
    Judged,
    /// Made in the window: nobody judged it.
    Unjudged,
    /// A secret, or inside a secret directory.
    Secret,
}

/// One watch event, as the state needs it: the full path of the entry it names.
#[derive(Debug, Clone, Copy)]
pub(super) struct Event<'a> {
    pub mask: F,
    /// What ties a rename's two halves together (inotify's cookie, or the moved file's
    /// handle under fanotify); empty: nothing.
    pub pair: &'a [u8],
    /// The watched directory (None: a watch this scan does not know).
    pub dir: Option<&'a Path>,
    pub name: Option<&'a OsStr>,
}

/// The state of a workspace's names since its scan.
#[derive(Debug, Default)]
pub(super) struct Churn {
    /// Any event at all: the scan no longer describes the workspace.
    pub changed: bool,
    /// Why a name may have named an unjudged file that is gone by now (the first reason).
    pub hidden: Option<String>,
    /// Names made in the window, still naming the file they were made with.
    made: HashSet<PathBuf>,
    /// Moved-from halves of renames, by `Event::pair`, until their moved-to half is read.
    moving: HashMap<Vec<u8>, (Origin, PathBuf)>,
    /// The events come from inotify, which merges a rename over a name into an identical
    /// one still queued (its cookie is not compared): a file moved in from outside the
    /// watched tree hides a state, and where the tree is not a mount of its own (such moves
    /// can follow any rename unseen) so does every rename over a name.
    pub merged_renames: Option<Merged>,
}

/// How inotify's merged renames are read (`Churn::merged_renames`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Merged {
    /// The workspace is the root of its own mount: only moves from unlisted directories
    /// can come from outside the watched tree.
    OwnMount,
    /// It shares its filesystem with directories nobody watches.
    SharedFilesystem,
}

impl Churn {
    fn hide(&mut self, why: String) {
        self.hidden.get_or_insert(why);
    }

    /// Reads one event, in queue order; `is_secret` tells whether the scan denied a path.
    pub fn apply(&mut self, ev: Event<'_>, is_secret: impl Fn(&Path) -> bool) {
        self.changed = true;
        if ev.mask.contains(F::IN_Q_OVERFLOW) {
            self.hide("the workspace changed faster than its watches could queue".into());
            return;
        }
        // Once a state was hidden the run's output is withheld whatever follows: nothing
        // more is kept (a flood of events costs a flag).
        if self.hidden.is_some() {
            return;
        }
        let entry = F::IN_CREATE | F::IN_DELETE | F::IN_MOVED_FROM | F::IN_MOVED_TO;
        // Events on a watched directory itself name no entry: its parent reports the entry.
        let Some(name) = ev.name else {
            if ev.mask.intersects(entry) {
                self.hide("an entry changed and its event named none".into());
            }
            return;
        };
        let Some(dir) = ev.dir else {
            self.hide(format!(
                "{} changed in a directory the scan did not list",
                name.to_string_lossy()
            ));
            return;
        };
        let path = dir.join(name);
        let is_dir = ev.mask.contains(F::IN_ISDIR);
        // fanotify merges events about one name and file into one mask, losing their order;
        // arrival first is the order in which a merge can hide a state (made, then gone).
        if ev.mask.intersects(F::IN_CREATE | F::IN_MOVED_TO) {
            self.arrived(ev, path.clone(), is_dir);
        }
        if ev.mask.intersects(F::IN_DELETE | F::IN_MOVED_FROM) {
            self.left(ev, path, is_dir, is_secret);
        }
    }

    /// `path` was made, or a file was moved to it.
    fn arrived(&mut self, ev: Event<'_>, path: PathBuf, is_dir: bool) {
        if is_dir {
            self.hide(format!("a directory appeared at {}", path.display()));
            return;
        }
        let origin = match ev.mask.contains(F::IN_MOVED_TO) && !ev.pair.is_empty() {
            true => self.moving.remove(ev.pair),
            false => None,
        };
        if ev.mask.contains(F::IN_MOVED_TO) {
            match (self.merged_renames, &origin) {
                (Some(Merged::SharedFilesystem), _) => self.hide(format!(
                    "{} was renamed over, and inotify may have merged other renames into that \
                     one",
                    path.display()
                )),
                (Some(Merged::OwnMount), None) => self.hide(format!(
                    "a file was moved to {} from outside the watched tree, and inotify may \
                     have merged other renames into that one",
                    path.display()
                )),
                _ => {}
            }
        }
        if let Some((Origin::Secret, from)) = &origin {
            let (from, to) = (from.display(), path.display());
            self.hide(format!("{from} (denied) was moved to {to}"));
        }
        if self.made.remove(&path) {
            let why = format!("{} was replaced before the run ended", path.display());
            self.hide(why);
        }
        if !matches!(origin, Some((Origin::Judged, _))) {
            self.made.insert(path);
        }
    }

    /// `path` was removed, or its file moved away.
    fn left(
        &mut self,
        ev: Event<'_>,
        path: PathBuf,
        is_dir: bool,
        is_secret: impl Fn(&Path) -> bool,
    ) {
        if is_dir {
            // Its entries leave with it: one made in the window leaves unjudged.
            if self.made.iter().any(|m| m.starts_with(&path)) {
                let why = format!("{} left with a file made in it", path.display());
                self.hide(why);
            }
            return;
        }
        let was_made = self.made.remove(&path);
        if !ev.mask.contains(F::IN_MOVED_FROM) {
            if was_made {
                let why = format!("{} appeared and was removed", path.display());
                self.hide(why);
            }
            return;
        }
        let origin = if was_made {
            Origin::Unjudged
        } else if is_secret(&path) {
            Origin::Secret
        } else {
            Origin::Judged
        };
        if ev.pair.is_empty() {
            // Unpaired: it can only be seen leaving.
            if origin == Origin::Unjudged {
                self.hide(format!("{} appeared and was moved away", path.display()));
            }
            return;
        }
        self.moving.insert(ev.pair.to_vec(), (origin, path));
    }

    /// After a read of the whole queue: a moved-from half whose moved-to half never came left
    /// the watched tree; an unjudged file that left hid a state.
    pub fn settle(&mut self) {
        let left: Vec<PathBuf> = self
            .moving
            .drain()
            .filter(|(_, (o, _))| *o == Origin::Unjudged)
            .map(|(_, (_, p))| p)
            .collect();
        if let Some(p) = left.first() {
            self.hide(format!(
                "{} appeared and was moved out of the workspace",
                p.display()
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One step of a table: what happened, in `dir` (relative to /ws; "?" for an unknown
    /// watch), to `name`, with a rename cookie.
    type Step = (F, u32, &'static str, &'static str);

    const MADE: F = F::IN_CREATE;
    const GONE: F = F::IN_DELETE;
    const FROM: F = F::IN_MOVED_FROM;
    const TO: F = F::IN_MOVED_TO;

    fn run(steps: &[Step]) -> Churn {
        run_on(Churn::default(), steps)
    }

    fn run_on(mut c: Churn, steps: &[Step]) -> Churn {
        let dirs: Vec<PathBuf> = steps
            .iter()
            .map(|(_, _, d, _)| Path::new("/ws").join(d))
            .collect();
        for ((mask, cookie, dir, name), path) in steps.iter().zip(&dirs) {
            let pair = cookie.to_ne_bytes();
            let ev = Event {
                mask: *mask,
                pair: if *cookie == 0 { &[] } else { &pair },
                dir: (*dir != "?").then_some(path.as_path()),
                name: (!name.is_empty()).then(|| OsStr::new(*name)),
            };
            c.apply(ev, |p| p.starts_with("/ws/.ssh") || p.ends_with(".env"));
        }
        c.settle();
        c
    }

    #[test]
    fn toggles_hide_a_state() {
        let table: &[(&str, &[Step])] = &[
            (
                "link made, then removed",
                &[(MADE, 0, "a", "race.txt"), (GONE, 0, "a", "race.txt")],
            ),
            (
                "renamed over, then renamed over again (the red team's toggle)",
                &[(TO, 7, "a", "race.txt"), (TO, 8, "a", "race.txt")],
            ),
            (
                "made, then moved out of the tree",
                &[(MADE, 0, "a", "x"), (FROM, 9, "a", "x")],
            ),
            (
                "made, moved within, then removed",
                &[
                    (MADE, 0, "a", "x"),
                    (FROM, 3, "a", "x"),
                    (TO, 3, "b", "y"),
                    (GONE, 0, "b", "y"),
                ],
            ),
            ("a directory made", &[(MADE | F::IN_ISDIR, 0, "a", "d")]),
            ("a directory moved in", &[(TO | F::IN_ISDIR, 4, "a", "d")]),
            (
                "a secret renamed to a plain name",
                &[(FROM, 5, ".", ".env"), (TO, 5, "a", "notes.txt")],
            ),
            (
                "a file moved out of a secret directory",
                &[(FROM, 6, ".ssh", "id_ed25519"), (TO, 6, "a", "k")],
            ),
            ("the queue overflowed", &[(F::IN_Q_OVERFLOW, 0, "?", "")]),
            ("an entry in an unknown watch", &[(MADE, 0, "?", "x")]),
            ("an entry event without a name", &[(GONE, 0, "a", "")]),
            (
                "made and removed, merged into one event",
                &[(MADE | GONE, 0, "a", "x")],
            ),
            (
                "moved in and out again, merged into one event",
                &[(TO | FROM, 11, "a", "x")],
            ),
            (
                "made in a directory that then left",
                &[(MADE, 0, "a/d", "x"), (FROM | F::IN_ISDIR, 2, "a", "d")],
            ),
        ];
        for (what, steps) in table {
            let c = run(steps);
            assert!(c.changed, "{what}");
            assert!(c.hidden.is_some(), "{what}: nothing hidden");
        }
    }

    #[test]
    fn inotify_s_merged_renames_are_read_by_where_the_workspace_lies() {
        let save: &[Step] = &[
            (MADE, 0, "a", ".swp"),
            (FROM, 1, "a", ".swp"),
            (TO, 1, "a", "notes.txt"),
        ];
        let from_outside: &[Step] = &[(TO, 2, "a", "notes.txt")];
        let read = |steps: &[Step], m: Option<Merged>| {
            let c = Churn {
                merged_renames: m,
                ..Churn::default()
            };
            run_on(c, steps).hidden.is_some()
        };
        assert!(!read(save, None), "fanotify: an atomic save");
        assert!(
            !read(from_outside, None),
            "fanotify: kept, judged at the end"
        );
        assert!(!read(save, Some(Merged::OwnMount)));
        assert!(read(from_outside, Some(Merged::OwnMount)));
        assert!(read(save, Some(Merged::SharedFilesystem)));
        assert!(read(from_outside, Some(Merged::SharedFilesystem)));
    }

    #[test]
    fn ordinary_churn_hides_nothing() {
        let table: &[(&str, &[Step])] = &[
            (
                "a build output made and kept",
                &[
                    (MADE, 0, "a", "out.o"),
                    (F::IN_CLOSE_WRITE, 0, "a", "out.o"),
                ],
            ),
            (
                "a file written in place",
                &[(F::IN_MODIFY, 0, "a", "notes.txt")],
            ),
            ("a judged file removed", &[(GONE, 0, "a", "notes.txt")]),
            (
                "an atomic save: a temporary renamed over the target",
                &[
                    (MADE, 0, "a", ".notes.swp"),
                    (FROM, 1, "a", ".notes.swp"),
                    (TO, 1, "a", "notes.txt"),
                ],
            ),
            (
                "a backup: the judged file renamed aside, a new one made, the backup removed",
                &[
                    (FROM, 2, "a", "notes.txt"),
                    (TO, 2, "a", "notes.txt~"),
                    (MADE, 0, "a", "notes.txt"),
                    (GONE, 0, "a", "notes.txt~"),
                ],
            ),
            ("a judged file moved out", &[(FROM, 3, "a", "old.txt")]),
            (
                "an atomic save whose temporary's two events were merged",
                &[(MADE | FROM, 12, "a", ".swp"), (TO, 12, "a", "notes.txt")],
            ),
            (
                "a watched directory's own attributes",
                &[(F::IN_ATTRIB, 0, "a", "")],
            ),
        ];
        for (what, steps) in table {
            let c = run(steps);
            assert!(c.changed, "{what}");
            assert_eq!(c.hidden, None, "{what}");
        }
        assert!(!Churn::default().changed);
    }
}
