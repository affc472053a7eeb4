//! HTTP clients: GET is an HTTP read; a body, an upload or a writing method is an HTTP
//! write; output files are writes; `@file` bodies and `file://` URLs are reads.

use super::gram_net::{G_CURL, G_WGET};
use super::judge::{judge, write_value};
use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;

const WRITE_METHODS: &[&str] = &["POST", "PUT", "PATCH", "DELETE"];

fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// Operands (and `--`) for httpie, which has no grammar table: `-X v` pairs are skipped.
fn parse<'a>(
    args: &'a [Word],
    shorts: &[&str],
    longs: &[&str],
) -> (Vec<(String, Word)>, Vec<String>, Vec<&'a Word>) {
    let mut opts = Vec::new();
    let mut flags = Vec::new();
    let mut ops = Vec::new();
    let mut i = 0;
    let mut after = false;
    while i < args.len() {
        let w = &args[i];
        let s = v(w);
        if after || w.value.is_none() || !s.starts_with('-') || s == "-" {
            ops.push(w);
        } else if s == "--" {
            after = true;
        } else if let Some(long) = s.strip_prefix("--") {
            if let Some((name, val)) = long.split_once('=') {
                opts.push((name.to_string(), Word::literal(val)));
            } else if longs.contains(&long) {
                if let Some(next) = args.get(i + 1) {
                    opts.push((long.to_string(), next.clone()));
                }
                i += 1;
            } else {
                flags.push(long.to_string());
            }
        } else if shorts.contains(&s) {
            if let Some(next) = args.get(i + 1) {
                opts.push((s.to_string(), next.clone()));
            }
            i += 1;
        } else {
            flags.push(s.to_string());
        }
        i += 1;
    }
    (opts, flags, ops)
}

fn file_url(k: &Checker, c: &mut Classification, url: &Word) {
    // `crate::policy::paths::file_url_path` owns the URL -> path model (host, %-escapes,
    // curl globs).
    if let Some(f) = url
        .value
        .as_deref()
        .and_then(crate::policy::paths::file_url_path)
    {
        c.add(
            Category::Read,
            "file-url",
            format!("reads the local file {}", f.path),
        );
        let mut w = Word::literal(&f.path);
        w.glob = f.glob;
        k.read(c, &w);
    }
}

/// `--data-urlencode`, `--url-query`, `--variable`: `name@file` or `@file` reads the file.
fn name_at_file(k: &Checker, c: &mut Classification, val: &Word) {
    let Some(s) = val.value.as_deref() else {
        return;
    };
    let at = s.find('@');
    if let Some(at) = at.filter(|&a| s.find('=').is_none_or(|e| a < e)) {
        let f = &s[at + 1..];
        if f != "-" {
            k.read(c, &Word::literal(f));
        }
    }
}

/// A `@file` (or `<file` for -F) value: the file is read and sent.
fn body_file(k: &Checker, c: &mut Classification, val: &Word, form: bool) {
    let Some(s) = val.value.as_deref() else {
        return;
    };
    let s = if form {
        s.split_once('=').map(|(_, r)| r).unwrap_or(s)
    } else {
        s
    };
    let file = s
        .strip_prefix('@')
        .or_else(|| if form { s.strip_prefix('<') } else { None });
    if let Some(f) = file {
        // `-F 'f=@"name;x";type=…'`: a quoted name may hold `;`.
        let f = match f.strip_prefix('"') {
            Some(q) => q.split('"').next().unwrap_or(q),
            None => f.split(';').next().unwrap_or(f),
        };
        if f != "-" {
            k.read(c, &Word::literal(f));
        }
    }
}

/// A URL operand: `file:` URLs read local files; curl's `{a,b}`/`[1-9]` globs make a URL
/// that cannot be known from the word.
fn url(k: &Checker, c: &mut Classification, w: &Word, globbing: bool) {
    let s = v(w);
    if globbing && s.to_ascii_lowercase().starts_with("file:") && s.contains(['{', '[']) {
        c.add(
            Category::Unanalysable,
            "unknown-argument",
            format!("the file URL `{s}` is a curl glob"),
        );
    }
    if !s.to_ascii_lowercase().starts_with("file:") {
        super::http_target::check(c, s);
    }
    file_url(k, c, w);
}

pub(super) fn curl(k: &Checker, c: &mut Classification, args: &[Word]) {
    let Some(parsed) = judge(k, c, "curl", &G_CURL, args) else {
        c.add(Category::HttpRead, "http-read", "curl fetches a URL");
        return;
    };
    let mut write = false;
    for m in &parsed.opts {
        let Some(val) = &m.value else {
            if matches!(m.opt.long, "netrc" | "netrc-optional") {
                c.add(
                    Category::SensitivePath,
                    "sensitive-path",
                    "`curl --netrc` sends the credentials in ~/.netrc",
                );
            }
            continue;
        };
        let name = m.opt.long;
        match name {
            // `[name]@file` (the file is read and sent) unless a `=` comes first.
            "data-urlencode" | "url-query" | "variable" => {
                write = true;
                name_at_file(k, c, val);
            }
            "data" | "data-ascii" | "data-binary" | "json" => {
                write = true;
                body_file(k, c, val, false);
            }
            "data-raw" | "form-string" | "mail-from" | "mail-rcpt" | "mail-auth" | "quote" => {
                write = true
            }
            "form" => {
                write = true;
                body_file(k, c, val, true);
            }
            "upload-file" => {
                write = true;
                if v(val) != "-" {
                    k.read(c, val);
                }
            }
            "request" => write |= WRITE_METHODS.contains(&v(val).to_ascii_uppercase().as_str()),
            "header" | "proxy-header" | "write-out" => body_file(k, c, val, false),
            "cookie" if v(val).contains('/') || !v(val).contains('=') => k.read(c, val),
            "pinnedpubkey" | "proxy-pinnedpubkey" if !v(val).starts_with("sha256//") => {
                k.read(c, val)
            }
            "output" | "dump-header" | "stderr" if v(val) != "-" => {
                write_value(k, c, "curl", &format!("--{name}"), val)
            }
            "url" => url(k, c, val, !parsed.has("globoff")),
            _ => {}
        }
    }
    for w in &parsed.operands {
        url(k, c, w, !parsed.has("globoff"));
    }
    if write {
        c.add(
            Category::HttpWrite,
            "http-write",
            "curl sends data (body, upload or a writing method)",
        );
    } else {
        c.add(Category::HttpRead, "http-read", "curl fetches a URL");
    }
}

pub(super) fn wget(k: &Checker, c: &mut Classification, args: &[Word]) {
    let mut first = Classification::default();
    let Some(parsed) = judge(k, c, "wget", &G_WGET, args) else {
        first.add(Category::HttpRead, "http-read", "wget fetches a URL");
        c.findings.splice(0..0, first.findings);
        return;
    };
    let mut write = false;
    let mut saves = !parsed.has("spider");
    for m in &parsed.opts {
        let Some(val) = &m.value else { continue };
        match m.opt.long {
            "post-data" | "body-data" => write = true,
            "post-file" | "body-file" => {
                write = true;
                k.read(c, val);
            }
            "method" => write |= WRITE_METHODS.contains(&v(val).to_ascii_uppercase().as_str()),
            "pinnedpubkey" if !v(val).starts_with("sha256//") => k.read(c, val),
            "output-document" => {
                saves = false;
                if v(val) != "-" {
                    write_value(k, c, "wget", "--output-document", val);
                }
            }
            _ => {}
        }
    }
    if saves {
        c.add(
            Category::Write,
            "write",
            "wget saves the download in the working directory",
        );
    }
    for w in &parsed.operands {
        url(k, c, w, false);
    }
    if write {
        first.add(Category::HttpWrite, "http-write", "wget sends data");
    } else {
        first.add(Category::HttpRead, "http-read", "wget fetches a URL");
        // Even a plain fetch is not all in its arguments: the oracle saw wget open ~/.netrc.
        c.add(
            Category::Unanalysable,
            "loads-user-config",
            "wget obeys /etc/wgetrc and ~/.wgetrc (any option, `execute` included) and sends ~/.netrc passwords",
        );
    }
    c.findings.splice(0..0, first.findings);
}

pub(super) fn httpie(c: &mut Classification, args: &[Word]) {
    let (_, _, ops) = parse(args, &["-a", "-o"], &["auth", "output", "session"]);
    let method_write = ops
        .first()
        .is_some_and(|w| WRITE_METHODS.contains(&v(w).to_ascii_uppercase().as_str()));
    let items = ops.iter().skip(1).any(|w| {
        let s = v(w);
        w.value.is_none() || s.contains('=') || s.contains('@')
    });
    if method_write || items {
        c.add(Category::HttpWrite, "http-write", "sends data over HTTP");
    } else {
        c.add(Category::HttpRead, "http-read", "fetches a URL");
        // The URL follows an optional method; httpie's `:3000/x` is localhost.
        let method = ops.first().is_some_and(|w| {
            let m = v(w);
            !m.is_empty() && m.bytes().all(|b| b.is_ascii_uppercase())
        });
        let target = ops.get(usize::from(method)).map(|w| v(w));
        if let Some(u) = target {
            let u = if u.starts_with(':') {
                format!("localhost{u}")
            } else {
                u.to_owned()
            };
            super::http_target::check(c, &u);
        }
    }
}
