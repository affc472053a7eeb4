//! `file:` URLs as the path they read: any host part (`localhost`, `127.0.0.1`, a name) is
//! dropped (curl and wget read the local file or fail), percent-escapes are decoded, and
//! curl's URL globs (`{a,b}`, `[a-z]`) are kept as shell-like globs for the path checks.

/// What a URL names on the local filesystem.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileUrl {
    /// The decoded absolute path.
    pub path: String,
    /// The path holds curl glob characters (`{`, `}`, `[`, `]`): check it as a glob.
    pub glob: bool,
}

/// `Some` for a `file:` URL (any case), with its local path.
pub fn file_url_path(url: &str) -> Option<FileUrl> {
    let scheme = url.get(..5)?;
    if !scheme.eq_ignore_ascii_case("file:") {
        return None;
    }
    let rest = &url[5..];
    let path = match rest.strip_prefix("//") {
        // `file://HOST/path`: the host is dropped.
        Some(r) => match r.find('/') {
            Some(i) => &r[i..],
            None => "/",
        },
        None => rest,
    };
    // A query or fragment is not part of the path.
    let path = path.split(['?', '#']).next().unwrap_or(path);
    let decoded = percent_decode(path);
    let path = if decoded.starts_with('/') {
        decoded
    } else {
        format!("/{decoded}")
    };
    let glob = path.contains(['{', '}', '[', ']']);
    Some(FileUrl { path, glob })
}

fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            let hex = |c: u8| (c as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push((h * 16 + l) as u8);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls() {
        let p = |u: &str| file_url_path(u).map(|f| f.path);
        assert_eq!(p("file:///etc/shadow").as_deref(), Some("/etc/shadow"));
        assert_eq!(
            p("FILE://localhost/h/.ssh/id").as_deref(),
            Some("/h/.ssh/id")
        );
        assert_eq!(
            p("file://127.0.0.1/h/%2essh/id%5frsa").as_deref(),
            Some("/h/.ssh/id_rsa")
        );
        assert_eq!(p("file:/etc/passwd?x#y").as_deref(), Some("/etc/passwd"));
        assert_eq!(p("file:etc/x").as_deref(), Some("/etc/x"));
        assert_eq!(p("https://x/"), None);
        assert!(file_url_path("file:///h/.{ssh,aws}/x").unwrap().glob);
        assert_eq!(p("file:///a%2").as_deref(), Some("/a%2"));
    }
}
