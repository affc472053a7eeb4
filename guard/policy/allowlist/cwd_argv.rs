//! The `allow-always` entry encoding OpenClaw binds a persisted grant with: `argPattern =
//! "sha256:cwd-argv:v1:" + hex(sha256(S))` (docs/openclaw-protocol.md §2.1). A pure function the
//! allowlist matcher needs; `crate::openclaw::allow_always` writes entries with it.

use sha2::{Digest, Sha256};

/// Prefix of a cwd-bound hashed `argPattern`.
pub const CWD_ARGV_PREFIX: &str = "sha256:cwd-argv:v1:";

/// Prefix of the legacy argv-only hash; OpenClaw treats such entries as inactive.
pub const LEGACY_ARGV_PREFIX: &str = "sha256:argv:";

/// Node's `path.posix.normalize`, including its relative-path corner cases (`./`, `..`).
/// OpenClaw normalises the cwd this way before hashing it.
pub fn posix_normalize(path: &str) -> String {
    if path.is_empty() {
        return ".".into();
    }
    let absolute = path.starts_with('/');
    let trailing = path.ends_with('/');
    let mut parts: Vec<&str> = Vec::new();
    for part in path.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                if parts.last().is_some_and(|p| *p != "..") {
                    parts.pop();
                } else if !absolute {
                    parts.push("..");
                }
            }
            other => parts.push(other),
        }
    }
    let mut out = parts.join("/");
    if out.is_empty() {
        if absolute {
            return "/".into();
        }
        return if trailing { "./".into() } else { ".".into() };
    }
    if trailing {
        out.push('/');
    }
    if absolute {
        out.insert(0, '/');
    }
    out
}

/// The `argPattern` OpenClaw writes for an `allow-always` grant of `argv` run in `cwd`.
/// `S = len(cwd)\0cwd\0argc\0` then `len(arg)\0arg\0` for each of `argv[1..]`, where `len`
/// is the decimal UTF-8 byte count and `argc` counts `argv[1..]`.
pub fn cwd_argv_pattern(cwd: &str, argv: &[String]) -> String {
    let cwd = posix_normalize(cwd);
    let args = argv.get(1..).unwrap_or(&[]);
    let mut subject = format!("{}\0{}\0{}\0", cwd.len(), cwd, args.len());
    for arg in args {
        subject.push_str(&arg.len().to_string());
        subject.push('\0');
        subject.push_str(arg);
        subject.push('\0');
    }
    format!(
        "{CWD_ARGV_PREFIX}{}",
        hex::encode(Sha256::digest(subject.as_bytes()))
    )
}
