//! The names a login shell's start-up files may set ([`Facts::login_names`]): OpenClaw runs
//! every command as `/bin/sh -lc TEXT`, so `/etc/profile`, `~/.profile` (bash: also
//! `~/.bash_profile`, `~/.bash_login`) and what they source run first. Each file is read
//! with the core's `scan_startup`; a file that sets names chosen at run time, cannot be
//! read, or is too large makes the answer unknown. The answer is kept while every file read
//! (and every directory a sourced glob listed) is unchanged, re-checked at most every
//! [`RECHECK`] and kept at most [`TTL`].
//!
//! [`Facts::login_names`]: crate::policy::facts::Facts::login_names

use super::{Stamp, RECHECK, TTL};
use crate::policy::shell::scan_startup;
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Instant;

/// The files a login `sh`/`bash` reads first, `~/` for the agent's home.
const LOGIN_FILES: &[&str] = &[
    "/etc/profile",
    "~/.bash_profile",
    "~/.bash_login",
    "~/.profile",
];
/// Most files followed through `.`/`source`.
const MAX_FILES: usize = 64;
/// Largest start-up file read.
const MAX_BYTES: u64 = 256 * 1024;

/// Every file and listed directory an answer was read from, with its stamp then.
type Read = Vec<(PathBuf, Option<Stamp>)>;

/// One answer and what it was read from.
struct Entry {
    home: PathBuf,
    names: Option<Arc<BTreeSet<String>>>,
    /// Every file and listed directory, with its stamp then (`None`: missing).
    read: Read,
    at: Instant,
    checked: Instant,
}

fn cache() -> &'static Mutex<Option<Entry>> {
    static CACHE: OnceLock<Mutex<Option<Entry>>> = OnceLock::new();
    CACHE.get_or_init(|| Mutex::new(None))
}

/// The names the login start-up files for `home` may set; `None` when not known.
pub(super) fn login_names(home: &Path) -> Option<Arc<BTreeSet<String>>> {
    let now = Instant::now();
    let hit = cache().lock().ok().and_then(|c| {
        c.as_ref()
            .filter(|e| e.home == home && now.duration_since(e.at) < TTL)
            .map(|e| {
                let fresh = now.duration_since(e.checked) < RECHECK;
                let read = if fresh { Vec::new() } else { e.read.clone() };
                (e.names.clone(), fresh, read)
            })
    });
    if let Some((names, fresh, read)) = hit {
        if fresh {
            return names;
        }
        if read.iter().all(|(p, s)| Stamp::of(p) == *s) {
            if let Ok(mut c) = cache().lock() {
                if let Some(e) = c.as_mut() {
                    e.checked = Instant::now();
                }
            }
            return names;
        }
    }
    let (names, read) = scan(home);
    let cacheable = !read
        .iter()
        .any(|(_, s)| s.as_ref().is_some_and(Stamp::racy));
    if cacheable {
        if let Ok(mut c) = cache().lock() {
            let now = Instant::now();
            *c = Some(Entry {
                home: home.to_path_buf(),
                names: names.clone(),
                read,
                at: now,
                checked: now,
            });
        }
    }
    names
}

/// Reads the login files and everything they source.
fn scan(home: &Path) -> (Option<Arc<BTreeSet<String>>>, Read) {
    let mut names = BTreeSet::new();
    let mut read: Read = Vec::new();
    let mut queue: Vec<PathBuf> = LOGIN_FILES.iter().map(|f| expand(f, home)).collect();
    queue.reverse();
    let mut known = true;
    while let Some(file) = queue.pop() {
        if read.iter().any(|(p, _)| *p == file) {
            continue;
        }
        if read.len() >= MAX_FILES {
            known = false;
            break;
        }
        let stamp = Stamp::of(&file);
        read.push((file.clone(), stamp));
        let text = match std::fs::metadata(&file) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Ok(m) if m.is_file() && m.len() <= MAX_BYTES => std::fs::read(&file),
            _ => {
                known = false;
                break;
            }
        };
        let Ok(text) = text.map(|b| String::from_utf8_lossy(&b).into_owned()) else {
            known = false;
            break;
        };
        let s = scan_startup(&text);
        if s.dynamic {
            known = false;
            break;
        }
        names.extend(s.names);
        for source in s.sources.iter().rev() {
            let path = expand(source, home);
            match glob_files(&path, &mut read) {
                Some(files) => queue.extend(files.into_iter().rev()),
                None => {
                    known = false;
                    break;
                }
            }
        }
        if !known {
            break;
        }
    }
    (known.then(|| Arc::new(names)), read)
}

/// `~/x` under `home`; anything else as written.
fn expand(file: &str, home: &Path) -> PathBuf {
    match file.strip_prefix("~/") {
        Some(rest) => home.join(rest),
        None => PathBuf::from(file),
    }
}

/// A sourced path: itself, or the files its last component's glob matches in its (literal)
/// directory, which is recorded as read. `None` when a directory part is a glob.
fn glob_files(path: &Path, read: &mut Read) -> Option<Vec<PathBuf>> {
    let text = path.to_string_lossy();
    if !text.contains(['*', '?']) {
        return Some(vec![path.to_path_buf()]);
    }
    let dir = path.parent()?;
    let pattern = path.file_name()?.to_string_lossy().into_owned();
    if dir.to_string_lossy().contains(['*', '?']) {
        return None;
    }
    let matcher = globset::GlobBuilder::new(&pattern)
        .literal_separator(true)
        .build()
        .ok()?
        .compile_matcher();
    read.push((dir.to_path_buf(), Stamp::of(dir)));
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Some(Vec::new());
    };
    let mut files: Vec<PathBuf> = entries
        .filter_map(|e| e.ok())
        .filter(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            // The shell's glob skips dot files unless the pattern names them.
            (!name.starts_with('.') || pattern.starts_with('.')) && matcher.is_match(&name)
        })
        .map(|e| e.path())
        .collect();
    files.sort();
    Some(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A home with a `.profile` that sources a file through a glob loop and one by `$HOME`:
    /// every name of each file is in the answer; an `eval` anywhere makes it unknown; a
    /// change to a sourced file is seen.
    #[test]
    fn names_follow_sourced_files_and_changes() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().canonicalize().unwrap();
        std::fs::create_dir_all(home.join("p.d")).unwrap();
        std::fs::write(
            home.join(".profile"),
            format!(
                "for f in {}/p.d/*.sh; do . $f; done\n. \"$HOME/extra\"\nalpha=1\n",
                home.display()
            ),
        )
        .unwrap();
        std::fs::write(home.join("p.d/one.sh"), "beta=2\n").unwrap();
        std::fs::write(home.join("p.d/skip.txt"), "gamma=3\n").unwrap();
        std::fs::write(home.join("extra"), "export delta=4\n").unwrap();
        let (names, _) = scan(&home);
        let names = names.expect("known");
        for n in ["alpha", "beta", "delta", "f"] {
            assert!(names.contains(n), "{n}: {names:?}");
        }
        assert!(!names.contains("gamma"), "a file the glob does not match");
        std::fs::write(home.join("extra"), "eval \"$x\"\n").unwrap();
        assert!(scan(&home).0.is_none(), "eval in a sourced file");
        std::fs::write(home.join("extra"), "x=1\n").unwrap();
        std::fs::write(home.join(".bash_profile"), "read \"$v\"\n").unwrap();
        assert!(scan(&home).0.is_none(), "bash's login file counts too");
    }

    #[test]
    fn an_unreadable_or_huge_file_is_unknown() {
        let d = tempfile::tempdir().unwrap();
        let home = d.path().canonicalize().unwrap();
        std::fs::create_dir(home.join(".profile")).unwrap();
        assert!(
            scan(&home).0.is_none(),
            "a directory where the file should be"
        );
        std::fs::remove_dir(home.join(".profile")).unwrap();
        std::fs::write(home.join(".profile"), "a=1\n".repeat(100_000)).unwrap();
        assert!(scan(&home).0.is_none(), "too large to read");
        std::fs::write(home.join(".profile"), "a=1\n").unwrap();
        assert!(scan(&home).0.is_some_and(|n| n.contains("a")));
    }
}
