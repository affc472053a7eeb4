//! HTTP clients: GET is an HTTP read; a body, an upload or a writing method is an HTTP
//! write; output files are writes; `@file` bodies and `file://` URLs are reads.

use super::paths_check::Checker;
use super::Classification;
use crate::policy::shell::Word;
use crate::policy::verdict::Category;

const WRITE_METHODS: &[&str] = &["POST", "PUT", "PATCH", "DELETE"];

/// curl options that take a value (so the value is not a URL).
const CURL_VALUE: &[&str] = &[
    "-d", "-F", "-T", "-X", "-o", "-H", "-u", "-A", "-e", "-b", "-c", "-K", "-x", "-m", "-w", "-r",
    "-E", "-U", "-D", "-z", "-C", "-Y", "-y", "-P", "-Q", "-t",
];
const CURL_LONG_VALUE: &[&str] = &[
    "data",
    "data-raw",
    "data-binary",
    "data-urlencode",
    "data-ascii",
    "form",
    "form-string",
    "upload-file",
    "request",
    "output",
    "header",
    "user",
    "user-agent",
    "referer",
    "cookie",
    "cookie-jar",
    "config",
    "proxy",
    "max-time",
    "connect-timeout",
    "write-out",
    "range",
    "cert",
    "key",
    "cacert",
    "capath",
    "proxy-user",
    "resolve",
    "retry",
    "json",
    "url",
    "dump-header",
    "trace",
    "trace-ascii",
    "stderr",
    "time-cond",
    "limit-rate",
    "continue-at",
    "output-dir",
    "netrc-file",
    "unix-socket",
    "abstract-unix-socket",
    "quote",
    "interface",
    "dns-servers",
    "oauth2-bearer",
    "variable",
    "connect-to",
    "aws-sigv4",
    "mail-from",
    "mail-rcpt",
];

fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// (option, value) pairs and operands, parsing `-X POST`, `-XPOST`, `--data=x`.
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
        } else {
            let head = &s[..2.min(s.len())];
            if shorts.contains(&head) {
                if s.len() > 2 {
                    opts.push((head.to_string(), Word::literal(&s[2..])));
                } else {
                    if let Some(next) = args.get(i + 1) {
                        opts.push((head.to_string(), next.clone()));
                    }
                    i += 1;
                }
            } else {
                for ch in s[1..].chars() {
                    flags.push(format!("-{ch}"));
                }
            }
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
        let f = f.split(';').next().unwrap_or(f);
        if f != "-" {
            k.read(c, &Word::literal(f));
        }
    }
}

pub(super) fn curl(k: &Checker, c: &mut Classification, args: &[Word]) {
    let (opts, flags, ops) = parse(args, CURL_VALUE, CURL_LONG_VALUE);
    let mut write = false;
    for (name, val) in &opts {
        let n = name.as_str();
        match n {
            "-d" | "-F" | "-T" | "json" | "upload-file" | "form" | "form-string" => write = true,
            _ if n.starts_with("data") => write = true,
            "-X" | "request" if WRITE_METHODS.contains(&v(val).to_ascii_uppercase().as_str()) => {
                write = true
            }
            "-Q" | "quote" => write = true,
            _ => {}
        }
        match n {
            "-d" | "json" => body_file(k, c, val, false),
            _ if n.starts_with("data") => body_file(k, c, val, false),
            "-F" | "form" => body_file(k, c, val, true),
            "-T" | "upload-file" | "-E" | "cert" | "key" | "netrc-file" | "cacert" | "-b"
            | "cookie"
                if v(val) != "-" && (n != "-b" && n != "cookie" || v(val).contains('/')) =>
            {
                k.read(c, val);
            }
            "-H" | "header" => body_file(k, c, val, false),
            "-o" | "output" | "-D" | "dump-header" | "-c" | "cookie-jar" | "trace"
            | "trace-ascii" | "stderr" | "output-dir"
                if v(val) != "-" =>
            {
                c.add(
                    Category::Write,
                    "write",
                    format!("curl writes {}", val.display()),
                );
                k.write(c, val);
            }
            "-K" | "config" => {
                c.add(
                    Category::Unanalysable,
                    "unanalysable",
                    "curl reads options from a config file",
                );
                k.read(c, val);
            }
            "url" => file_url(k, c, val),
            _ => {}
        }
    }
    if flags.iter().any(|f| f.starts_with("post")) {
        write = true;
    }
    if flags
        .iter()
        .any(|f| f == "-O" || f == "remote-name" || f == "remote-name-all")
    {
        c.add(
            Category::Write,
            "write",
            "curl saves the download in the working directory",
        );
    }
    for url in &ops {
        file_url(k, c, url);
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
    let (opts, flags, ops) = parse(
        args,
        &[
            "-O", "-o", "-a", "-P", "-i", "-U", "-e", "-t", "-T", "-Q", "-w", "-l", "-B",
        ],
        &[
            "output-document",
            "output-file",
            "append-output",
            "directory-prefix",
            "input-file",
            "post-data",
            "post-file",
            "body-data",
            "body-file",
            "method",
            "header",
            "user-agent",
            "user",
            "password",
            "execute",
            "load-cookies",
            "save-cookies",
            "tries",
            "timeout",
            "quota",
            "wait",
            "level",
            "base",
        ],
    );
    let mut write = false;
    let mut saves = !flags.iter().any(|f| f == "spider");
    for (name, val) in &opts {
        match name.as_str() {
            "post-data" | "body-data" => write = true,
            "post-file" | "body-file" => {
                write = true;
                k.read(c, val);
            }
            "method" => write |= WRITE_METHODS.contains(&v(val).to_ascii_uppercase().as_str()),
            "-O" | "output-document" => {
                saves = false;
                if v(val) != "-" {
                    c.add(
                        Category::Write,
                        "write",
                        format!("wget writes {}", val.display()),
                    );
                    k.write(c, val);
                }
            }
            "-o" | "output-file" | "-a" | "append-output" | "-P" | "directory-prefix"
            | "save-cookies" => {
                c.add(
                    Category::Write,
                    "write",
                    format!("wget writes {}", val.display()),
                );
                k.write(c, val);
            }
            "-i" | "input-file" | "load-cookies" => k.read(c, val),
            "-e" | "execute" => {
                c.add(
                    Category::Unanalysable,
                    "unanalysable",
                    "wget runs a wgetrc command",
                );
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
    for url in &ops {
        file_url(k, c, url);
    }
    let mut first = Classification::default();
    if write {
        first.add(Category::HttpWrite, "http-write", "wget sends data");
    } else {
        first.add(Category::HttpRead, "http-read", "wget fetches a URL");
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
    }
}
