//! Lexical path cleaning (`.`, `..`, `//`), with a borrowing fast path for paths that are
//! already clean: every operand of every decision goes through it.

use std::borrow::Cow;
use std::path::{Component, Path, PathBuf};

/// Lexical normalisation: drops `.` and empty components, folds `..` (never above `/`).
pub fn lexical_clean(path: &Path) -> PathBuf {
    lexical_clean_cow(path).into_owned()
}

/// [`lexical_clean`], borrowing `path` when it is already clean (the usual case: most
/// operands are plain names under a clean cwd), so the hot path builds nothing.
pub fn lexical_clean_cow(path: &Path) -> Cow<'_, Path> {
    if already_clean(path) {
        Cow::Borrowed(path)
    } else {
        Cow::Owned(clean_components(path))
    }
}

/// [`lexical_clean`] of a path already owned: kept as it is when clean (no copy).
pub(super) fn clean_owned(path: PathBuf) -> PathBuf {
    if already_clean(&path) {
        path
    } else {
        clean_components(&path)
    }
}

/// Is `path` exactly what [`clean_components`] would make of it: `/`, or `/` followed by
/// names joined by single slashes, none of them `.` or `..`, and no trailing slash?
fn already_clean(path: &Path) -> bool {
    let bytes = path.as_os_str().as_encoded_bytes();
    match bytes {
        [b'/'] => true,
        [b'/', rest @ ..] => rest
            .split(|&b| b == b'/')
            .all(|name| !name.is_empty() && name != b"." && name != b".."),
        _ => false,
    }
}

/// The component walk behind [`lexical_clean`].
fn clean_components(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for comp in path.components() {
        match comp {
            Component::RootDir | Component::Prefix(_) => out.push(comp.as_os_str()),
            Component::CurDir => {}
            Component::ParentDir => {
                if !out.pop() || out.as_os_str().is_empty() {
                    if path.is_absolute() {
                        out = PathBuf::from("/");
                    } else {
                        out.push("..");
                    }
                }
            }
            Component::Normal(name) => out.push(name),
        }
    }
    if out.as_os_str().is_empty() {
        out.push(if path.is_absolute() { "/" } else { "." });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fast path says "clean" only where the component walk returns the path unchanged.
    #[test]
    fn fast_path_agrees_with_the_component_walk() {
        let names = ["", ".", "..", "a", "b.c", "...", ".a"];
        let mut cases = vec![String::from("/"), String::from("//"), String::from("a")];
        for x in names {
            for y in names {
                for lead in ["/", "", "./", "//"] {
                    cases.push(format!("{lead}{x}/{y}"));
                    cases.push(format!("{lead}{x}/{y}/"));
                    cases.push(format!("{lead}{x}"));
                }
            }
        }
        for c in &cases {
            let p = Path::new(c);
            let slow = clean_components(p);
            assert_eq!(lexical_clean(p), slow, "{c}");
            let unchanged = slow.as_os_str() == p.as_os_str();
            // Never a wrong "clean"; and for absolute paths (the hot ones) never a missed one.
            if c.starts_with('/') {
                assert_eq!(already_clean(p), unchanged, "{c}");
            } else {
                assert!(!already_clean(p) || unchanged, "{c}");
            }
            assert!(matches!(lexical_clean_cow(p), Cow::Borrowed(_)) == already_clean(p));
        }
    }
}
