//! The `allow-always` entry encoding OpenClaw binds a persisted grant with: `argPattern =
//! "sha256:cwd-argv:v1:" + hex(sha256(S))` (docs/openclaw-protocol.md §2.1). A pure function the
//! allowlist matcher needs; `crate::openclaw::allow_always` writes entries with it.

use sha2::{Digest, Sha256};
use std::borrow::Cow;
use std::cell::RefCell;
use std::hash::BuildHasher;

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

/// Is `path` absolute and already what [`posix_normalize`] returns: `/`, or `/` then names
/// joined by single slashes, none `.` or `..`, with no trailing slash?
fn is_posix_normal(path: &str) -> bool {
    match path.strip_prefix('/') {
        Some("") => true,
        Some(rest) => rest
            .split('/')
            .all(|name| !name.is_empty() && name != "." && name != ".."),
        None => false,
    }
}

/// The `argPattern` OpenClaw writes for an `allow-always` grant of `argv` run in `cwd`.
pub fn cwd_argv_pattern(cwd: &str, argv: &[String]) -> String {
    format!(
        "{CWD_ARGV_PREFIX}{}",
        hex::encode(cwd_argv_digest(cwd, argv))
    )
}

/// The SHA-256 behind [`cwd_argv_pattern`], hashed piece by piece (no subject string is
/// built: the allowlist computes it on every gated segment that has grants).
/// `S = len(cwd)\0cwd\0argc\0` then `len(arg)\0arg\0` for each of `argv[1..]`, where `len`
/// is the decimal UTF-8 byte count and `argc` counts `argv[1..]`.
pub fn cwd_argv_digest(cwd: &str, argv: &[String]) -> [u8; 32] {
    // A cwd is nearly always normal already: then it is hashed as it is.
    let cwd = if is_posix_normal(cwd) {
        Cow::Borrowed(cwd)
    } else {
        Cow::Owned(posix_normalize(cwd))
    };
    let args = argv.get(1..).unwrap_or(&[]);
    let mut h = Sha256::new();
    fn field(h: &mut Sha256, bytes: &[u8]) {
        h.update(bytes);
        h.update([0u8]);
    }
    field(&mut h, decimal(cwd.len(), &mut [0; 20]));
    field(&mut h, cwd.as_bytes());
    field(&mut h, decimal(args.len(), &mut [0; 20]));
    for arg in args {
        field(&mut h, decimal(arg.len(), &mut [0; 20]));
        field(&mut h, arg.as_bytes());
    }
    h.finalize().into()
}

/// Most (cwd, argv) digests [`recent_digest`] keeps per thread before it starts over.
const RECENT_MAX: usize = 256;

/// Recent digests, by a seeded hash of their (cwd, argv); each entry keeps its whole key.
type Recent = foldhash::HashMap<u64, (String, Vec<String>, [u8; 32])>;

thread_local! {
    static RECENT: RefCell<(foldhash::fast::RandomState, Recent)> = RefCell::default();
}

/// [`cwd_argv_digest`], remembered: the digest is a pure function of the text (no file is
/// involved), an agent repeats its commands, and the SHA-256 is most of a grant look-up.
/// Bounded; a hit compares the whole (cwd, argv), so a hash collision is only a miss.
pub fn recent_digest(cwd: &str, argv: &[String]) -> [u8; 32] {
    let (key, found) = RECENT.with(|r| {
        let (seed, map) = &*r.borrow();
        let key = seed.hash_one((cwd, argv));
        let found = map
            .get(&key)
            .filter(|(c, a, _)| c == cwd && a == argv)
            .map(|(_, _, d)| *d);
        (key, found)
    });
    if let Some(digest) = found {
        return digest;
    }
    let digest = cwd_argv_digest(cwd, argv);
    RECENT.with(|r| {
        let (_, map) = &mut *r.borrow_mut();
        if map.len() >= RECENT_MAX {
            map.clear();
        }
        map.insert(key, (cwd.to_string(), argv.to_vec(), digest));
    });
    digest
}

/// The 32 bytes of a grant's hash, when `arg_pattern` is exactly the prefix and 64 lowercase
/// hex digits: the only spelling [`cwd_argv_pattern`] produces, so any other can never match.
pub fn parse_cwd_argv(arg_pattern: &str) -> Option<[u8; 32]> {
    let hex = arg_pattern.strip_prefix(CWD_ARGV_PREFIX)?.as_bytes();
    if hex.len() != 64 {
        return None;
    }
    let digit = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut out = [0u8; 32];
    for (o, pair) in out.iter_mut().zip(hex.chunks_exact(2)) {
        *o = (digit(pair[0])? << 4) | digit(pair[1])?;
    }
    Some(out)
}

/// `n` in decimal ASCII, written at the end of `buf` (20 digits hold any `u64`).
fn decimal(mut n: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut at = buf.len();
    loop {
        at -= 1;
        // `n % 10` < 10, so the cast cannot truncate.
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            return &buf[at..];
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The piecewise hash equals the hash of the subject string built whole, and the
    /// parser reads back exactly the lowercase spelling.
    #[test]
    fn digest_matches_the_whole_subject_and_parses_back() {
        let cases: [(&str, &[&str]); 4] = [
            ("/tmp", &["tee", "out.txt"]),
            ("/a/./b/../c/", &["x"]),
            ("", &[]),
            ("/w", &["ls", "", "héllo wörld", &"y".repeat(1234)]),
        ];
        for (cwd, argv) in cases {
            let argv: Vec<String> = argv.iter().map(|s| s.to_string()).collect();
            let norm = posix_normalize(cwd);
            let args = argv.get(1..).unwrap_or(&[]);
            let mut subject = format!("{}\0{}\0{}\0", norm.len(), norm, args.len());
            for a in args {
                subject.push_str(&format!("{}\0{}\0", a.len(), a));
            }
            let want = Sha256::digest(subject.as_bytes());
            assert_eq!(cwd_argv_digest(cwd, &argv)[..], want[..], "{cwd} {argv:?}");
            let pattern = cwd_argv_pattern(cwd, &argv);
            assert_eq!(pattern, format!("{CWD_ARGV_PREFIX}{}", hex::encode(want)));
            assert_eq!(parse_cwd_argv(&pattern), Some(cwd_argv_digest(cwd, &argv)));
            let upper = format!("{CWD_ARGV_PREFIX}{}", hex::encode_upper(want));
            assert_eq!(
                parse_cwd_argv(&upper),
                None,
                "only lowercase is ever produced"
            );
            assert_eq!(parse_cwd_argv(&format!("{pattern}0")), None);
            assert_eq!(parse_cwd_argv(&pattern[..pattern.len() - 1]), None);
        }
        assert_eq!(decimal(0, &mut [0; 20]), b"0");
        // Remembered digests are the computed ones, for each distinct key, again and again.
        let keys: Vec<(String, Vec<String>)> = (0..RECENT_MAX + 10)
            .map(|i| (format!("/w{}", i % 7), vec!["x".into(), format!("{i}")]))
            .collect();
        for _ in 0..2 {
            for (c, a) in &keys {
                assert_eq!(recent_digest(c, a), cwd_argv_digest(c, a), "{c} {a:?}");
            }
        }
        let names = ["", ".", "..", "a", ".a", "a."];
        for x in names {
            for y in names {
                for lead in ["/", "", "//", "./"] {
                    for tail in ["", "/"] {
                        let p = format!("{lead}{x}/{y}{tail}");
                        if is_posix_normal(&p) {
                            assert_eq!(posix_normalize(&p), p, "{p}");
                        } else if p.starts_with('/') && !p.ends_with('/') {
                            // Only a kept trailing slash may be normal yet not fast-pathed.
                            assert_ne!(posix_normalize(&p), p, "{p}");
                        }
                    }
                }
            }
        }
        assert!(is_posix_normal("/") && is_posix_normal("/a") && !is_posix_normal("a"));
        assert_eq!(
            decimal(usize::MAX, &mut [0; 20]),
            usize::MAX.to_string().as_bytes()
        );
    }
}
