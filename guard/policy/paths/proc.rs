//! `/proc/self`, `/proc/thread-self` and `/dev/fd` as the kernel reads them for the *agent's*
//! process, not the guard's: `/proc/self/cwd` is the request's cwd, `/proc/self/root` is `/`,
//! `/dev/fd` is `/proc/self/fd`. The rewrite happens before `..` is folded, so
//! `/proc/self/cwd/../x` climbs from the real cwd, not from `/proc/self`. Another process's
//! `cwd`, `fd` and `map_files` reach what cannot be known here: their `..` is dropped so the
//! path stays under the sensitive `/proc/*/cwd/`-style rule.

use std::ffi::OsStr;
use std::path::{Component, Path, PathBuf};

/// Does the path spell `/proc/…` or `/dev/fd…` (the only ones [`agent_view`] rewrites)?
pub(super) fn may_be_proc(path: &Path) -> bool {
    let b = path.as_os_str().as_encoded_bytes();
    b.windows(5).any(|w| w == b"/proc" || w == b"/dev/")
}

/// The path as the agent's kernel resolves its `/proc/self`-style prefix (see the module
/// doc); `None` when the path does not start with one.
pub(super) fn agent_view(path: &Path, cwd: &Path) -> Option<PathBuf> {
    let mut comps = path.components().filter(|c| *c != Component::CurDir);
    if comps.next() != Some(Component::RootDir) {
        return None;
    }
    let rest: Vec<&OsStr> = comps
        .map(|c| match c {
            Component::ParentDir => OsStr::new(".."),
            other => other.as_os_str(),
        })
        .collect();
    let mut i = 2;
    match rest.as_slice() {
        // `/dev/fd` is `/proc/self/fd`.
        [d, f, ..] if *d == "dev" && *f == "fd" => in_self(&rest, &mut i, cwd, Some("fd")),
        [p, s, ..] if *p == "proc" && (*s == "self" || *s == "thread-self") => {
            in_self(&rest, &mut i, cwd, None)
        }
        [p, pid, what, ..]
            if *p == "proc"
                && pid.as_encoded_bytes().iter().all(u8::is_ascii_digit)
                && (*what == "cwd" || *what == "fd" || *what == "map_files" || *what == "root") =>
        {
            if *what == "root" {
                // Another process's root: the same `/` in this deployment's namespace.
                return Some(join(Path::new("/"), &rest[3..]));
            }
            // What another process's cwd or fd reaches is unknown: stay under the rule.
            let mut out = PathBuf::from("/proc");
            out.push(pid);
            out.push(what);
            for c in &rest[3..] {
                if *c != ".." {
                    out.push(c);
                }
            }
            Some(out)
        }
        _ => None,
    }
}

/// Walks the components after `/proc/self` (`start_in`: already inside `fd`); `None` when
/// `..` climbs out of `/proc/self` (then the path is left to the lexical rules, which are
/// stricter there).
fn in_self(rest: &[&OsStr], i: &mut usize, cwd: &Path, start_in: Option<&str>) -> Option<PathBuf> {
    let mut dir = start_in;
    while *i < rest.len() {
        let c = rest[*i];
        *i += 1;
        match dir {
            Some(_) if c == ".." => dir = None,
            Some(d) => {
                // `/proc/self/fd/N`: an open file of the agent's process, not known here.
                let mut out = PathBuf::from("/proc/self");
                out.push(d);
                out.push(c);
                for r in &rest[*i..] {
                    if *r != ".." {
                        out.push(r);
                    }
                }
                return Some(out);
            }
            None if c == ".." => return None,
            None if c == "cwd" => return Some(join(cwd, &rest[*i..])),
            None if c == "root" => return Some(join(Path::new("/"), &rest[*i..])),
            None if c == "fd" || c == "map_files" => {
                dir = Some(if c == "fd" { "fd" } else { "map_files" })
            }
            // `/proc/self/task/<tid>` is the same process.
            None if c == "task" && *i < rest.len() => *i += 1,
            None => return Some(join(&Path::new("/proc/self").join(c), &rest[*i..])),
        }
    }
    Some(match dir {
        Some(d) => Path::new("/proc/self").join(d),
        None => PathBuf::from("/proc/self"),
    })
}

fn join(base: &Path, rest: &[&OsStr]) -> PathBuf {
    let mut out = base.to_path_buf();
    for r in rest {
        out.push(r);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn view(p: &str) -> Option<String> {
        agent_view(Path::new(p), Path::new("/ws")).map(|p| p.to_string_lossy().into_owned())
    }

    #[test]
    fn the_agents_process_not_the_guards() {
        assert_eq!(view("/proc/self/cwd/a").as_deref(), Some("/ws/a"));
        assert_eq!(view("/proc/self/cwd/../h").as_deref(), Some("/ws/../h"));
        assert_eq!(view("/proc/thread-self/root/etc").as_deref(), Some("/etc"));
        assert_eq!(view("/dev/fd/../cwd/x").as_deref(), Some("/ws/x"));
        assert_eq!(view("/proc/self/fd/../cwd").as_deref(), Some("/ws"));
        assert_eq!(view("/proc/self/task/7/cwd/x").as_deref(), Some("/ws/x"));
        assert_eq!(view("/proc/self/./root/x").as_deref(), Some("/x"));
        assert_eq!(view("/proc/self/fd/3").as_deref(), Some("/proc/self/fd/3"));
        assert_eq!(
            view("/proc/self/environ").as_deref(),
            Some("/proc/self/environ")
        );
        assert_eq!(view("/proc/1/cwd/../h").as_deref(), Some("/proc/1/cwd/h"));
        assert_eq!(view("/proc/1/root/../x").as_deref(), Some("/../x"));
        assert_eq!(view("/proc/cpuinfo"), None);
        assert_eq!(view("/dev/fd/../../proc/self/environ"), None);
        assert_eq!(view("/ws/a"), None);
    }
}
