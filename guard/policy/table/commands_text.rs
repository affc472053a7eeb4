//! The text tools that take a program or pattern: the greps, `sed` and `awk`. Options are
//! parsed by their grammars; a sed or awk program is autonomous only when every command in
//! it is one that reads and prints (no `e`/`w`/`r` in sed; no `system`, pipes, output
//! redirection, `getline`, `@include`/indirect calls or `ARGV` rewriting in awk).

use super::gram_misc::{G_AWK, G_NONE};
use super::gram_search::{G_GREP, G_RG, G_SED};
use super::grammar::Grammar;
use super::judge::{judge, program_says, read_files, write_value};
use super::paths_check::Checker;
use super::read_programs::globs_may_be_options;
use super::tree_walk::Walk;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

pub(super) fn grep(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(Category::Read, "read", program_says(p, " searches files"));
    let g: &'static Grammar = match p {
        "grep" | "egrep" | "fgrep" | "zgrep" => &G_GREP,
        "rg" => &G_RG,
        _ => &G_NONE,
    };
    if globs_may_be_options(k, c, p, args) {
        return;
    }
    let Some(parsed) = judge(k, c, p, g, args) else {
        return;
    };
    // `rg --files` lists the names it would search: no pattern, no content read.
    let names_only = p == "rg" && parsed.has("files");
    let pattern_given = parsed.has("regexp") || parsed.has("file") || names_only;
    let files: Vec<&Word> = parsed
        .operands
        .iter()
        .skip(usize::from(!pattern_given))
        .copied()
        .collect();
    let directories = parsed
        .values("directories")
        .any(|v| v.value.as_deref() != Some("skip") && v.value.as_deref() != Some("read"));
    let follows = parsed.has("dereference-recursive") || (p == "rg" && parsed.has("follow"));
    let recursive =
        matches!(p, "rg" | "ag" | "ack") || parsed.has("recursive") || directories || follows;
    let dot = Word::literal(".");
    let files = if files.is_empty() && recursive {
        vec![&dot]
    } else {
        files
    };
    if parsed
        .values("devices")
        .any(|v| v.value.as_deref() != Some("skip"))
    {
        c.add(
            Category::Unanalysable,
            "gated-option",
            format!("`{p} --devices` reads devices and fifos"),
        );
    }
    read_files(seg, k, c, &files);
    if recursive {
        // rg skips hidden files and directories (a dotenv file is one) unless told
        // otherwise, but reads every other file below, secrets by name included
        // (`deploy.tfstate`, `client_secret.json`).
        let hidden = p != "rg" || parsed.has("hidden") || parsed.has("unrestricted");
        let includes = if p == "rg" {
            None
        } else {
            super::grep_include::grep_includes(&parsed)
        };
        let keep = |name: &str| {
            includes
                .as_ref()
                .is_none_or(|inc| inc.iter().any(|i| i.matches(name)))
        };
        let walk = Walk {
            follow: follows,
            links: follows,
            hidden,
            keep: &keep,
            ..Walk::FOLLOW
        };
        for f in &files {
            k.recursive_names(c, f);
            if !names_only {
                k.walk_below(c, f, &walk);
                if !hidden {
                    hidden_secrets_below(k, c, f, &walk, &rg_types(&parsed));
                }
            }
        }
    }
}

/// `rg` skips hidden entries only until an ignore file whitelists one (`!.env` in a
/// `.ignore`, `.rgignore` or `.gitignore` below or above, or the global excludes file), which a
/// cloned repository can carry and which no walk here can fully see: a hidden secret below is
/// a person's call.
fn hidden_secrets_below(
    k: &Checker,
    c: &mut Classification,
    f: &Word,
    walk: &Walk,
    types: &Option<Vec<&'static str>>,
) {
    let keep = |name: &str| match types {
        Some(exts) => exts.iter().any(|e| name.ends_with(e)),
        None => true,
    };
    let mut hidden = Classification::default();
    k.walk_below(
        &mut hidden,
        f,
        &Walk {
            hidden: true,
            keep: &keep,
            ..*walk
        },
    );
    if let Some(hit) = hidden
        .findings
        .iter()
        .find(|x| matches!(x.category, Category::SensitivePath | Category::SecretInTree))
    {
        c.add(
            Category::Unanalysable,
            "ignore-whitelist",
            format!(
                "`rg` skips hidden files unless an ignore file whitelists them; {}",
                hit.reason.message
            ),
        );
    }
}

/// The file endings `rg -t TYPE…` limits a search to, when every type is a built-in one
/// named here and nothing redefines types (`--type-add`, `--type-clear`) or excludes them
/// (`-T`: the rest is then searched); `None`: every file may be searched.
fn rg_types(parsed: &super::grammar::Parsed) -> Option<Vec<&'static str>> {
    const TYPES: &[(&str, &[&str])] = &[
        ("py", &[".py", ".pyi"]),
        ("rust", &[".rs"]),
        ("js", &[".js", ".mjs", ".cjs", ".jsx", ".vue"]),
        ("ts", &[".ts", ".tsx", ".cts", ".mts"]),
        ("go", &[".go"]),
        ("java", &[".java", ".jsp", ".jspx", ".properties"]),
        ("c", &[".c", ".h", ".H", ".cats"]),
        (
            "md",
            &[
                ".md",
                ".markdown",
                ".mdown",
                ".mdwn",
                ".mkd",
                ".mkdn",
                ".mdx",
                ".ron",
            ],
        ),
        (
            "sh",
            &[".sh", ".bash", ".zsh", ".ksh", ".csh", ".tcsh", ".fish"],
        ),
    ];
    if ["type-add", "type-clear", "type-not"]
        .iter()
        .any(|o| parsed.has(o))
    {
        return None;
    }
    let mut exts = Vec::new();
    for v in parsed.values("type") {
        let name = v.value.as_deref()?;
        let (_, e) = TYPES.iter().find(|(t, _)| *t == name)?;
        exts.extend_from_slice(e);
    }
    (!exts.is_empty()).then_some(exts)
}

/// One sed command of a script: addresses, `!`, then a command that only prints, deletes,
/// substitutes (flags without `e`/`w`), or moves text between the buffers.
fn sed_command_is_plain(cmd: &str) -> bool {
    let mut rest = cmd.trim();
    // Addresses: numbers, `$`, `/re/`, `\cREc`, `first~step`, `addr,+N`, separated by `,`.
    loop {
        rest = rest.trim_start();
        if let Some(r) = rest.strip_prefix('/') {
            let Some(end) = regex_end(r, '/') else {
                return false;
            };
            rest = r[end + 1..].trim_start_matches(['I', 'M']);
        } else if let Some(r) = rest.strip_prefix('\\') {
            let Some(delim) = r.chars().next() else {
                return false;
            };
            let Some(end) = regex_end(&r[delim.len_utf8()..], delim) else {
                return false;
            };
            rest = r[delim.len_utf8() + end + delim.len_utf8()..].trim_start_matches(['I', 'M']);
        } else if rest.starts_with(|ch: char| ch.is_ascii_digit() || "$~+,".contains(ch)) {
            rest = rest.trim_start_matches(|ch: char| ch.is_ascii_digit() || "$~+,".contains(ch));
            continue;
        } else {
            break;
        }
        if !rest.starts_with(',') {
            break;
        }
    }
    let body = rest.trim_start().trim_start_matches('!').trim_start();
    if body.is_empty() || body.starts_with('#') || body == "{" || body == "}" {
        return true;
    }
    if let Some(r) = body.strip_prefix('s') {
        let Some(delim) = r.chars().next() else {
            return false;
        };
        if delim.is_alphanumeric() || delim == '\\' || delim == '\n' {
            return false;
        }
        let r = &r[delim.len_utf8()..];
        let Some(a) = regex_end(r, delim) else {
            return false;
        };
        let r = &r[a + delim.len_utf8()..];
        let Some(b) = regex_end(r, delim) else {
            return false;
        };
        let flags = &r[b + delim.len_utf8()..];
        return flags
            .trim_end()
            .chars()
            .all(|f| "gpiImM0123456789".contains(f));
    }
    if let Some(r) = body.strip_prefix('y') {
        return r.chars().next().is_some_and(|d| !d.is_alphanumeric());
    }
    matches!(
        body.trim_end(),
        "p" | "d"
            | "q"
            | "Q"
            | "="
            | "n"
            | "N"
            | "P"
            | "D"
            | "G"
            | "H"
            | "g"
            | "h"
            | "x"
            | "l"
            | "z"
    ) || body
        .trim_end()
        .strip_prefix('q')
        .is_some_and(|n| n.trim().parse::<u8>().is_ok())
}

/// Index of the unescaped `delim` closing a regex (or replacement) in `s`.
fn regex_end(s: &str, delim: char) -> Option<usize> {
    let mut escaped = false;
    for (i, ch) in s.char_indices() {
        if escaped {
            escaped = false;
        } else if ch == '\\' {
            escaped = true;
        } else if ch == delim {
            return Some(i);
        } else if ch == '\n' {
            return None;
        }
    }
    None
}

/// A sed script whose every command is plain. Commands are split at `;` and newlines; a
/// `;` inside a regex makes a piece that does not parse, which is not plain (gated).
pub(super) fn sed_script_is_plain(script: &str) -> bool {
    script
        .split([';', '\n'])
        .flat_map(|s| s.split_inclusive(['{', '}']))
        .map(|s| s.trim_end_matches(['{', '}']))
        .all(sed_command_is_plain)
}

pub(super) fn sed(seg: &Segment, k: &Checker, c: &mut Classification, args: &[Word]) {
    if globs_may_be_options(k, c, "sed", args) {
        return;
    }
    let Some(parsed) = judge(k, c, "sed", &G_SED, args) else {
        c.add(Category::Read, "read", "`sed` reads files");
        return;
    };
    let scripts: Vec<&Word> = parsed.values("expression").collect();
    let from_file = parsed.has("file");
    let (script_words, files): (Vec<&Word>, Vec<&Word>) = if scripts.is_empty() && !from_file {
        (
            parsed.operands.first().copied().into_iter().collect(),
            parsed.operands.iter().skip(1).copied().collect(),
        )
    } else {
        (scripts, parsed.operands.clone())
    };
    for f in parsed.values("file") {
        k.read(c, f);
    }
    let plain = !from_file
        && !script_words.is_empty()
        && script_words
            .iter()
            .all(|w| w.value.as_deref().is_some_and(sed_script_is_plain));
    if !plain {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            "the sed script may run commands or write files",
        );
    }
    if parsed.has("in-place") {
        c.add(Category::Write, "write", "`sed -i` edits files in place");
        for f in files {
            k.write(c, f);
        }
    } else {
        c.add(Category::Read, "read", "`sed` reads files");
        read_files(seg, k, c, &files);
    }
}

/// Words of awk program text that run commands, write or read other files, or call
/// functions by name (gawk `@f()`, `PROCINFO["sorted_in"]`), or rewrite the file list.
const AWK_BANNED: &[&str] = &[
    "system", "getline", "close", "ARGV", "ARGC", "PROCINFO", "@", "|&", "SYMTAB", "FUNCTAB",
    "ENVIRON",
];

/// Is this awk program text one that only reads its input and prints to standard output?
pub(super) fn awk_program_is_plain(text: &str) -> bool {
    let Some(code) = strip_awk_literals(text) else {
        return false;
    };
    if AWK_BANNED.iter().any(|b| code.contains(b)) {
        return false;
    }
    // `|` is a pipe unless it is `||`.
    let bytes = code.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'|' && bytes.get(i + 1) != Some(&b'|') && (i == 0 || bytes[i - 1] != b'|') {
            return false;
        }
    }
    // `>` after `print`/`printf` at the statement's own paren depth is a redirection.
    for stmt in code.split([';', '\n', '{', '}']) {
        let Some(at) = find_word(stmt, "print") else {
            continue;
        };
        let mut depth = 0i32;
        for ch in stmt[at..].chars() {
            match ch {
                '(' => depth += 1,
                ')' => depth -= 1,
                '>' if depth <= 0 => return false,
                _ => {}
            }
        }
    }
    true
}

/// Position of `word` as a whole identifier (or prefix of `printf`).
fn find_word(s: &str, word: &str) -> Option<usize> {
    let mut from = 0;
    while let Some(i) = s[from..].find(word) {
        let at = from + i;
        let before_ok = at == 0
            || !s[..at]
                .chars()
                .next_back()
                .is_some_and(|ch| ch.is_alphanumeric() || ch == '_');
        if before_ok {
            return Some(at);
        }
        from = at + word.len();
    }
    None
}

/// The program with string literals and regex literals blanked (their bytes cannot run
/// anything); `None` for an unterminated string (not understood).
fn strip_awk_literals(text: &str) -> Option<String> {
    let mut out = String::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    let mut prev_sig = '\n';
    while let Some(ch) = chars.next() {
        let regex_start = ch == '/' && "(,{;!~&|\n=".contains(prev_sig);
        if ch == '"' || regex_start {
            let mut escaped = false;
            let mut closed = false;
            let mut lit = String::new();
            for n in chars.by_ref() {
                lit.push(n);
                if escaped {
                    escaped = false;
                } else if n == '\\' {
                    escaped = true;
                } else if n == ch {
                    closed = true;
                    break;
                } else if n == '\n' {
                    break;
                }
            }
            if closed {
                out.push_str(" \"\" ");
                prev_sig = '"';
            } else if ch == '"' {
                return None;
            } else {
                out.push(ch);
                out.push_str(&lit);
            }
            continue;
        }
        out.push(ch);
        if !ch.is_whitespace() || ch == '\n' {
            prev_sig = ch;
        }
    }
    Some(out)
}

pub(super) fn awk(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    if p == "busybox" {
        c.add(
            Category::Enumerate,
            "enumerate",
            "`busybox` lists its applets",
        );
        return;
    }
    let Some(parsed) = judge(k, c, p, &G_AWK, args) else {
        c.add(Category::Read, "read", program_says(p, " reads files"));
        return;
    };
    let mut plain = true;
    for w in parsed.values("-W") {
        if !matches!(
            w.value.as_deref(),
            Some("version" | "v" | "interactive" | "i")
        ) {
            plain = false;
        }
    }
    for name in ["dump-variables", "pretty-print", "profile"] {
        for m in parsed.opts.iter().filter(|m| m.opt.long == name) {
            let target = m.value.clone().unwrap_or_else(|| {
                Word::literal(if name == "dump-variables" {
                    "awkvars.out"
                } else {
                    "awkprof.out"
                })
            });
            write_value(k, c, p, &format!("--{name}"), &target);
        }
    }
    let from_file = parsed.has("file");
    for f in parsed.values("file") {
        k.read(c, f);
    }
    let sources: Vec<&Word> = parsed.values("source").collect();
    let (program, files): (Vec<&Word>, Vec<&Word>) = if from_file || !sources.is_empty() {
        (sources, parsed.operands.clone())
    } else {
        (
            parsed.operands.first().copied().into_iter().collect(),
            parsed.operands.iter().skip(1).copied().collect(),
        )
    };
    plain &= !from_file
        && !program.is_empty()
        && program
            .iter()
            .all(|w| w.value.as_deref().is_some_and(awk_program_is_plain));
    if plain {
        c.add(Category::Read, "read", program_says(p, " reads files"));
    } else {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("the `{p}` program may run commands or write files"),
        );
    }
    // `name=value` operands are assignments, not files.
    let files: Vec<&Word> = files
        .into_iter()
        .filter(|w| {
            !w.value.as_deref().is_some_and(|s| {
                s.split_once('=').is_some_and(|(n, _)| {
                    !n.is_empty() && n.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                })
            })
        })
        .collect();
    read_files(seg, k, c, &files);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn awk_programs() {
        for plain in [
            "{print $1}",
            "$3 > 100 {print $1}",
            "NR==1",
            "{s+=$1} END {print s}",
            "/a|b/ {print}",
            "$1 || $2",
            "{print ($1 > 2)}",
            "BEGIN{FS=\":\"} {print $1, \"|\", $2}",
        ] {
            assert!(awk_program_is_plain(plain), "{plain}");
        }
        for bad in [
            "{print > \"/tmp/x\"}",
            "{print $1 > \"out\"}",
            "{if ($1) print >> \"f\"}",
            "{print | \"sh\"}",
            "BEGIN{system(\"id\")}",
            "BEGIN{while ((getline l < \"/etc/shadow\") > 0) print l}",
            "BEGIN{ARGV[1]=\"/etc/shadow\"} {print}",
            "BEGIN{f=\"system\"; @f(\"id\")}",
            "@include \"x\"",
            "BEGIN{\"id\" |& getline}",
            "BEGIN { PROCINFO[\"sorted_in\"]=\"f\" }",
            "{printf \"%s\", $0 > \"/dev/tcp/x/1\"}",
            "{print \"unterminated > x}",
        ] {
            assert!(!awk_program_is_plain(bad), "{bad}");
        }
    }

    #[test]
    fn sed_scripts() {
        for plain in [
            "s/a/b/g",
            "1,5p",
            "/foo/p",
            "/foo/,/bar/d",
            "$!N",
            "s|a|b|",
            "10q",
            "y/abc/xyz/",
            "/^#/!p",
            "2,+3d",
            "0~2p",
            "s/x/y/2",
        ] {
            assert!(sed_script_is_plain(plain), "{plain}");
        }
        for bad in [
            "s/a/b/e",
            "s/a/b/w out",
            "w out",
            "r /etc/shadow",
            "R f",
            "W f",
            "e id",
            "1e id",
            "/x/e id",
            "s/a/b/;e",
            "/a/w /tmp/x",
            "F",
            "v",
        ] {
            assert!(!sed_script_is_plain(bad), "{bad}");
        }
    }
}
