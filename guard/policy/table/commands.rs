//! The per-program entries of the command table (Sanctum action table, ClawPal command rules).

use super::paths_check::Checker;
use super::{stdin_is_pipe, Classification, TableContext};
use crate::policy::shell::{Segment, Stdin, Word, SHELLS};
use crate::policy::verdict::Category;

/// Programs that take no file operands: their words are never paths.
const NO_FILES: &[&str] = &[
    "echo",
    "printf",
    "true",
    "false",
    ":",
    "test",
    "[",
    "[[",
    "sleep",
    "seq",
    "date",
    "whoami",
    "id",
    "uname",
    "pwd",
    "hostname",
    "uptime",
    "groups",
    "nproc",
    "arch",
    "tty",
    "locale",
    "set",
    "shopt",
    "export",
    "declare",
    "local",
    "readonly",
    "typeset",
    "unset",
    "alias",
    "unalias",
    "hash",
    "type",
    "which",
    "command",
    "wait",
    "jobs",
    "read",
    "exit",
    "logout",
    "return",
    "cd",
    "pushd",
    "popd",
    "dirs",
    "basename",
    "dirname",
    "expr",
    "let",
    "yes",
    "free",
    "ps",
    "top",
    "htop",
    "getconf",
    "lsb_release",
    "umask",
    "ulimit",
    "history",
    "bg",
    "fg",
    "exec",
    "nohup",
    "time",
    "shift",
    "break",
    "continue",
    "caller",
    "times",
    "bc",
    "cal",
];

/// Programs that list or describe files (enumeration).
const ENUMERATE: &[&str] = &[
    "ls", "dir", "vdir", "du", "tree", "stat", "file", "realpath", "readlink", "df", "lsblk",
    "findmnt", "lsof", "pgrep", "whereis",
];

/// Programs that read their file operands.
const READ: &[&str] = &[
    "cat",
    "tac",
    "head",
    "tail",
    "wc",
    "less",
    "more",
    "most",
    "sort",
    "uniq",
    "cut",
    "tr",
    "diff",
    "diff3",
    "cmp",
    "comm",
    "nl",
    "od",
    "xxd",
    "hexdump",
    "strings",
    "md5sum",
    "sha1sum",
    "sha224sum",
    "sha256sum",
    "sha384sum",
    "sha512sum",
    "b2sum",
    "cksum",
    "sum",
    "base64",
    "base32",
    "jq",
    "yq",
    "column",
    "fold",
    "fmt",
    "paste",
    "join",
    "expand",
    "unexpand",
    "rev",
    "zcat",
    "bzcat",
    "xzcat",
    "zless",
    "look",
    "iconv",
    "numfmt",
    "csplit",
    "split",
    "shuf",
    "tsort",
    "ptx",
    "pr",
];

const GREPS: &[&str] = &[
    "grep", "egrep", "fgrep", "zgrep", "rg", "ag", "ack", "git-grep",
];

/// Programs that create or modify their operands.
const WRITE_ALL: &[&str] = &[
    "touch", "mkdir", "mktemp", "truncate", "tee", "mkfifo", "mknod", "mv",
];

const DELETE: &[&str] = &["rm", "rmdir", "unlink", "shred"];

const PRIVILEGE: &[&str] = &[
    "sudo",
    "su",
    "doas",
    "chmod",
    "chown",
    "chgrp",
    "setcap",
    "setfacl",
    "chattr",
    "apt",
    "apt-get",
    "aptitude",
    "dpkg",
    "rpm",
    "yum",
    "dnf",
    "apk",
    "pacman",
    "zypper",
    "snap",
    "mount",
    "umount",
    "chroot",
    "useradd",
    "userdel",
    "usermod",
    "groupadd",
    "passwd",
    "chpasswd",
    "visudo",
    "pkexec",
    "nsenter",
    "unshare",
    "capsh",
    "insmod",
    "rmmod",
    "modprobe",
    "iptables",
    "ip6tables",
    "nft",
    "sysctl",
    "shutdown",
    "reboot",
    "halt",
    "poweroff",
    "init",
    "telinit",
    "at",
    "batch",
    "launchctl",
    "runuser",
    "setpriv",
    "newgrp",
    "sg",
];

const NETWORK: &[&str] = &[
    "nc", "ncat", "netcat", "socat", "telnet", "ssh", "scp", "sftp", "ftp", "tftp", "rsh",
];

const INTERPRETERS: &[&str] = &[
    "node",
    "nodejs",
    "python",
    "python2",
    "python3",
    "pypy",
    "pypy3",
    "ruby",
    "perl",
    "php",
    "deno",
    "lua",
    "luajit",
    "Rscript",
    "tsx",
    "ts-node",
    "osascript",
    "pwsh",
    "tclsh",
    "irb",
    "julia",
    "R",
];

fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// Non-option words (after `--` every word is an operand). Unknown words count as operands.
fn operands(args: &[Word]) -> Vec<&Word> {
    let mut out = Vec::new();
    let mut after = false;
    for w in args {
        match w.value.as_deref() {
            Some("--") if !after => after = true,
            Some(s) if !after && s.starts_with('-') && s != "-" => {}
            _ => out.push(w),
        }
    }
    out
}

/// Option words `-abc` containing `short`, or equal to one of `longs` (or `--long=…`).
fn flag(args: &[Word], short: &str, longs: &[&str]) -> bool {
    args.iter().any(|w| {
        let s = v(w);
        if let Some(long) = s.strip_prefix("--") {
            let name = long.split('=').next().unwrap_or("");
            longs.contains(&name)
        } else if let Some(cluster) = s.strip_prefix('-') {
            !cluster.is_empty()
                && !cluster.starts_with(|c: char| c.is_ascii_digit())
                && cluster.chars().any(|c| short.contains(c))
        } else {
            false
        }
    })
}

/// The value of an option (`-o X`, `-oX`, `--out X`, `--out=X`).
fn opt_values(args: &[Word], shorts: &[&str], longs: &[&str]) -> Vec<Word> {
    let mut out = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let s = v(&args[i]);
        if s == "--" {
            break;
        }
        if let Some(long) = s.strip_prefix("--") {
            if let Some((name, val)) = long.split_once('=') {
                if longs.contains(&name) {
                    out.push(Word::literal(val));
                }
            } else if longs.contains(&long) {
                if let Some(next) = args.get(i + 1) {
                    out.push(next.clone());
                    i += 1;
                }
            }
        } else {
            for short in shorts {
                if s == *short {
                    if let Some(next) = args.get(i + 1) {
                        out.push(next.clone());
                        i += 1;
                    }
                } else if let Some(attached) = s.strip_prefix(short) {
                    if short.len() == 2 && !attached.is_empty() {
                        out.push(Word::literal(attached));
                    }
                }
            }
        }
        i += 1;
    }
    out
}

/// Operands after removing options that take a value (`-o FILE` is not an operand).
fn operands_skipping<'a>(args: &'a [Word], shorts: &[&str], longs: &[&str]) -> Vec<&'a Word> {
    let mut out = Vec::new();
    let mut i = 0;
    let mut after = false;
    while i < args.len() {
        let w = &args[i];
        let s = v(w);
        if after || w.value.is_none() || s == "-" || !s.starts_with('-') {
            out.push(w);
        } else if s == "--" {
            after = true;
        } else if shorts.contains(&s) || s.strip_prefix("--").is_some_and(|l| longs.contains(&l)) {
            i += 1;
        }
        i += 1;
    }
    out
}

/// Read checks for every operand and `--opt=value`.
fn read_all(k: &Checker, c: &mut Classification, args: &[Word], allow_unknown: bool) {
    for w in operands(args) {
        if w.value.is_none() && allow_unknown {
            continue;
        }
        k.read(c, w);
    }
    for w in args {
        if let Some((_, val)) = w
            .value
            .as_deref()
            .and_then(|s| s.strip_prefix("--")?.split_once('='))
        {
            if val.contains('/') || val.starts_with('~') || val.starts_with('.') {
                k.read(c, &Word::literal(val));
            }
        }
    }
}

pub(super) fn classify(seg: &Segment, t: &TableContext, k: &Checker, c: &mut Classification) {
    let argv = &seg.argv;
    let name = v(&argv[0]).to_string();
    let args = &argv[1..];
    let prog = seg.program.clone().unwrap_or_default();

    // Chat-style slash commands OpenClaw accepts as text.
    if name == "/elevated" || name == "/exec" {
        let words: Vec<String> = args.iter().map(|w| v(w).to_ascii_lowercase()).collect();
        let off = if name == "/elevated" {
            words.iter().any(|w| w == "full" || w == "on")
        } else {
            words
                .iter()
                .any(|w| w == "security=full" || w == "ask=off" || w.starts_with("security=allow"))
        };
        if off {
            c.add(
                Category::ApprovalsOff,
                "approvals-off",
                format!("`{name}` turns approvals off"),
            );
        } else {
            c.add(
                Category::ConfigChange,
                "config-change",
                format!("`{name}` changes exec settings"),
            );
        }
        return;
    }
    if seg.function_call {
        // The body is analysed on its own; recursion (`:(){ :|:& };:`) and positional
        // arguments are not.
        c.add(
            Category::Unanalysable,
            "function-call",
            format!("calls the shell function `{name}` defined in the same command"),
        );
        read_all(k, c, args, true);
        return;
    }
    if !seg.trusted_name {
        c.add(
            Category::RunCode,
            "run-program",
            format!("runs the program {name}"),
        );
        read_all(k, c, args, true);
        return;
    }
    let override_name = seg
        .resolved
        .as_ref()
        .map(|p| p.to_string_lossy().into_owned())
        .unwrap_or_else(|| name.clone());
    let sargs: Vec<String> = args.iter().map(|w| w.display().to_string()).collect();
    if let Some(cat) = t.policy.command_override(&override_name, &sargs) {
        c.add(
            cat,
            "policy-command",
            format!("`{prog}` is {cat:?} by the policy's [[commands]]"),
        );
        read_all(k, c, args, true);
        return;
    }

    let p = prog.as_str();
    match p {
        _ if NO_FILES.contains(&p) => no_files(seg, p, args, c),
        _ if ENUMERATE.contains(&p) => {
            c.add(
                Category::Enumerate,
                "enumerate",
                format!("`{p}` lists files"),
            );
            read_all(k, c, args, false);
        }
        "find" => find(k, c, args),
        _ if READ.contains(&p) => {
            c.add(Category::Read, "read", format!("`{p}` reads files"));
            let outputs = if p == "sort" {
                opt_values(args, &["-o"], &["output"])
            } else if p == "uniq" || p == "split" || p == "csplit" {
                operands(args)
                    .iter()
                    .skip(1)
                    .map(|w| (*w).clone())
                    .collect()
            } else {
                Vec::new()
            };
            for w in &outputs {
                c.add(
                    Category::Write,
                    "write",
                    format!("`{p}` writes {}", w.display()),
                );
                k.write(c, w);
            }
            read_all(k, c, args, false);
        }
        "env" | "printenv" => {
            c.add(Category::Read, "read-env", "prints the environment");
        }
        _ if GREPS.contains(&p) => grep(k, c, p, args),
        "sed" => sed(k, c, args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => awk(k, c, p, args),
        _ if WRITE_ALL.contains(&p) => {
            c.add(
                Category::Write,
                "write",
                format!("`{p}` creates or changes files"),
            );
            for w in operands_skipping(
                args,
                &["-m", "-p", "-s", "-r", "-t", "--suffix"],
                &[
                    "reference",
                    "size",
                    "mode",
                    "context",
                    "suffix",
                    "target-directory",
                ],
            ) {
                k.write(c, w);
            }
        }
        "cp" | "install" | "ln" | "rsync" | "tar" | "zip" | "unzip" | "dd" | "patch" | "gzip"
        | "gunzip" | "bzip2" | "xz" | "7z" => copy_like(k, c, p, args),
        _ if DELETE.contains(&p) => rm(k, c, p, args),
        "curl" => super::commands_http::curl(k, c, args),
        "wget" => super::commands_http::wget(k, c, args),
        "http" | "https" | "xh" | "httpie" => super::commands_http::httpie(c, args),
        _ if NETWORK.contains(&p) => {
            c.add(
                Category::HttpWrite,
                "network",
                format!("`{p}` opens a network connection that can send data"),
            );
            read_all(k, c, args, true);
        }
        "git" => super::commands_dev::git(k, c, args),
        "npm" | "pnpm" | "yarn" | "bun" | "npx" | "bunx" => {
            super::commands_dev::node_pm(k, c, p, args, seg)
        }
        "pip" | "pip3" | "pipx" | "uv" | "cargo" | "gem" | "go" | "brew" | "composer" | "conda"
        | "poetry" => super::commands_dev::other_pm(k, c, p, args),
        "openclaw" | "clawhub" => super::commands_dev::openclaw(c, p, args),
        "systemctl" | "service" => {
            let sub: Vec<&str> = operands(args).iter().map(|w| v(w)).collect();
            let read_only = [
                "status",
                "is-active",
                "is-enabled",
                "is-failed",
                "list-units",
                "list-unit-files",
                "show",
                "cat",
                "list-timers",
                "--status-all",
            ];
            if sub.iter().any(|s| read_only.contains(s)) || flag(args, "", &["status-all"]) {
                c.add(
                    Category::Enumerate,
                    "service-status",
                    format!("`{p}` shows service status"),
                );
            } else {
                c.add(
                    Category::Privilege,
                    "privilege",
                    format!("`{p}` controls system services"),
                );
            }
        }
        "crontab" => {
            if flag(args, "l", &[]) {
                c.add(Category::Enumerate, "enumerate", "lists the crontab");
            } else {
                c.add(
                    Category::Privilege,
                    "persistence",
                    "`crontab` installs scheduled commands",
                );
            }
        }
        "docker" | "podman" | "kubectl" | "nerdctl" => {
            let sub = operands(args)
                .first()
                .map(|w| v(w).to_string())
                .unwrap_or_default();
            if matches!(
                sub.as_str(),
                "ps" | "images" | "version" | "info" | "inspect" | "logs" | "get" | "describe"
            ) {
                c.add(
                    Category::Enumerate,
                    "enumerate",
                    format!("`{p} {sub}` lists state"),
                );
            } else {
                c.add(
                    Category::Privilege,
                    "privilege",
                    format!("`{p}` controls containers"),
                );
            }
        }
        "kill" | "pkill" | "killall" | "skill" | "xkill" => {
            if p == "kill" && flag(args, "lL", &["list", "table"]) {
                c.add(Category::Enumerate, "enumerate", "lists signals");
            } else {
                c.add(
                    Category::ProcessExit,
                    "process-exit",
                    format!("`{p}` stops processes (the agent's own too)"),
                );
            }
        }
        _ if PRIVILEGE.contains(&p) => {
            c.add(
                Category::Privilege,
                "privilege",
                format!("`{p}` changes privileges or system state"),
            );
            read_all(k, c, args, true);
        }
        _ if SHELLS.contains(&p) => shell(seg, k, c, p, args),
        _ if INTERPRETERS.contains(&p) || p.starts_with("python3.") => {
            interpreter(seg, k, c, p, args)
        }
        "source" | "." => match operands(args).first() {
            Some(w) if w.substitution => c.add(
                Category::PipeToShell,
                "pipe-to-shell",
                format!("`{p}` runs the output of a command"),
            ),
            Some(w) => {
                c.add(
                    Category::RunCode,
                    "run-code",
                    format!("`{p}` runs the script {}", w.display()),
                );
                k.read(c, w);
            }
            None => c.add(
                Category::RunCode,
                "run-code",
                format!("`{p}` runs a script"),
            ),
        },
        "eval" => {
            if args.iter().any(|w| w.substitution) {
                c.add(
                    Category::PipeToShell,
                    "pipe-to-shell",
                    "`eval` runs the output of a command",
                );
            } else {
                c.add(
                    Category::Unanalysable,
                    "unanalysable",
                    "`eval` of text that is not static",
                );
            }
        }
        "trap" => {
            if operands(args).len() >= 2 {
                c.add(
                    Category::Unanalysable,
                    "unanalysable",
                    "`trap` runs text later",
                );
            } else {
                c.add(
                    Category::Enumerate,
                    "builtin",
                    "`trap` lists or clears traps",
                );
            }
        }
        _ => {
            c.add(
                Category::RunCode,
                "unknown-program",
                format!("runs `{p}`, which the command table does not know"),
            );
            read_all(k, c, args, true);
        }
    }
}

fn no_files(seg: &Segment, p: &str, args: &[Word], c: &mut Classification) {
    let msg = match p {
        "exit" | "logout" | "return" => {
            "leaves the command's own shell (not the agent)".to_string()
        }
        "cd" | "pushd" | "popd" => "changes the working directory".to_string(),
        _ => format!("`{p}` reads no files"),
    };
    let _ = (seg, args);
    c.add(Category::Enumerate, "enumerate", msg);
}

fn find(k: &Checker, c: &mut Classification, args: &[Word]) {
    let mut starts: Vec<&Word> = args
        .iter()
        .take_while(|w| {
            w.value
                .as_deref()
                .is_none_or(|s| !s.starts_with('-') && s != "(" && s != "!")
        })
        .collect();
    let dot = Word::literal(".");
    if starts.is_empty() {
        starts.push(&dot);
    }
    c.add(Category::Enumerate, "enumerate", "`find` lists files");
    let has = |name: &str| args.iter().any(|w| v(w) == name);
    let exec = ["-exec", "-execdir", "-ok", "-okdir"]
        .iter()
        .any(|e| has(e));
    for s in &starts {
        k.read(c, s);
        if exec {
            k.recursive_read(c, s);
        }
    }
    if has("-delete") {
        for s in &starts {
            if let Some(hit) = k.contains(s) {
                c.add(
                    Category::DestructiveDelete,
                    "destructive-delete",
                    format!("`find -delete` under {} (holds {hit})", s.display()),
                );
            } else if k.inside_workspace(s) != Some(true) && v(s) != "." {
                c.add(
                    Category::DestructiveDelete,
                    "destructive-delete",
                    format!("`find -delete` outside the workspace ({})", s.display()),
                );
            } else {
                c.add(Category::Delete, "delete", "`find -delete` deletes files");
            }
        }
    }
    for (i, w) in args.iter().enumerate() {
        if matches!(v(w), "-fprint" | "-fprint0" | "-fprintf" | "-fls") {
            c.add(Category::Write, "write", "`find` writes a file");
            if let Some(target) = args.get(i + 1) {
                k.write(c, target);
            }
        }
    }
}

fn grep(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(Category::Read, "read", format!("`{p}` searches files"));
    let value_opts = [
        "-e",
        "-f",
        "-m",
        "-A",
        "-B",
        "-C",
        "-g",
        "-t",
        "-T",
        "--regexp",
        "--file",
        "--glob",
        "--type",
        "--max-count",
        "--include",
        "--exclude",
    ];
    let ops = operands_skipping(
        args,
        &value_opts,
        &[
            "regexp",
            "file",
            "glob",
            "type",
            "max-count",
            "include",
            "exclude",
            "exclude-dir",
            "context",
        ],
    );
    let pattern_given = !opt_values(args, &["-e", "-f"], &["regexp", "file"]).is_empty();
    for f in opt_values(args, &["-f"], &["file"]) {
        k.read(c, &f);
    }
    let files: Vec<&Word> = ops
        .into_iter()
        .skip(if pattern_given { 0 } else { 1 })
        .collect();
    let recursive = matches!(p, "rg" | "ag" | "ack")
        || flag(args, "rR", &["recursive", "dereference-recursive"]);
    let dot = Word::literal(".");
    let files = if files.is_empty() && recursive {
        vec![&dot]
    } else {
        files
    };
    for f in files {
        k.read(c, f);
        if recursive {
            k.recursive_read(c, f);
        }
    }
}

/// A sed script that only substitutes, prints, deletes or quits (no `e`, `w`, `r`, `W`, `R`).
fn sed_script_is_plain(script: &str) -> bool {
    script.split([';', '\n']).all(|cmd| {
        let cmd = cmd.trim();
        let body = cmd.trim_start_matches(|ch: char| ch.is_ascii_digit() || ",$!^ ".contains(ch));
        if body.is_empty() {
            return true;
        }
        if let Some(rest) = body.strip_prefix('s') {
            let mut chars = rest.chars();
            let Some(delim) = chars.next() else {
                return false;
            };
            if delim.is_alphanumeric() || delim == '\\' {
                return false;
            }
            let parts: Vec<&str> = rest[delim.len_utf8()..].split(delim).collect();
            return parts.len() == 3 && parts[2].chars().all(|f| "gpiI0123456789".contains(f));
        }
        matches!(
            body,
            "p" | "d" | "q" | "=" | "n" | "N" | "P" | "D" | "G" | "H" | "g" | "h" | "x" | "l"
        )
    })
}

fn sed(k: &Checker, c: &mut Classification, args: &[Word]) {
    let in_place = flag(args, "i", &["in-place"]);
    let scripts = opt_values(args, &["-e", "-f"], &["expression", "file"]);
    let ops = operands_skipping(
        args,
        &["-e", "-f", "-l"],
        &["expression", "file", "line-length"],
    );
    let (script_words, files): (Vec<Word>, Vec<&Word>) = if scripts.is_empty() {
        (
            ops.first().map(|w| vec![(*w).clone()]).unwrap_or_default(),
            ops.into_iter().skip(1).collect(),
        )
    } else {
        (scripts, ops)
    };
    let plain = !flag(args, "f", &["file"])
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
    if in_place {
        c.add(Category::Write, "write", "`sed -i` edits files in place");
        for f in files {
            k.write(c, f);
        }
    } else {
        c.add(Category::Read, "read", "`sed` reads files");
        for f in files {
            k.read(c, f);
        }
    }
}

fn awk(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    if p == "busybox" {
        c.add(
            Category::Enumerate,
            "enumerate",
            "`busybox` lists its applets",
        );
        return;
    }
    let ops = operands_skipping(
        args,
        &["-f", "-v", "-F"],
        &["file", "assign", "field-separator"],
    );
    let progfile = !opt_values(args, &["-f"], &["file"]).is_empty();
    let (prog, files): (Option<&Word>, Vec<&Word>) = if progfile {
        (None, ops)
    } else {
        (ops.first().copied(), ops.into_iter().skip(1).collect())
    };
    let plain = prog.and_then(|w| w.value.as_deref()).is_some_and(|s| {
        !["system", "|", ">", "getline", "close", "fflush"]
            .iter()
            .any(|bad| s.contains(bad))
    });
    if plain {
        c.add(Category::Read, "read", format!("`{p}` reads files"));
    } else {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("the `{p}` program may run commands or write files"),
        );
    }
    for f in files {
        k.read(c, f);
    }
}

fn copy_like(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(Category::Write, "write", format!("`{p}` writes files"));
    let recursive =
        matches!(p, "rsync" | "tar" | "zip" | "7z") || flag(args, "rRa", &["recursive", "archive"]);
    if p == "dd" {
        for w in args {
            let s = v(w);
            if let Some(f) = s.strip_prefix("if=") {
                k.read(c, &Word::literal(f));
            } else if let Some(f) = s.strip_prefix("of=") {
                k.write(c, &Word::literal(f));
            } else if w.value.is_none() {
                k.read(c, w);
            }
        }
        return;
    }
    if p == "rsync"
        && args
            .iter()
            .any(|w| v(w).split('/').next().is_some_and(|h| h.contains(':')))
    {
        c.add(
            Category::HttpWrite,
            "network",
            "`rsync` to or from a remote host",
        );
    }
    let value_opts: &[&str] = match p {
        "tar" => &["-f", "-C", "-T", "-X", "--file", "--directory"],
        "zip" => &["-x", "-i", "-b"],
        "unzip" => &["-d", "-x"],
        "install" => &["-m", "-o", "-g", "-t", "-S"],
        _ => &["-t", "-S", "--suffix", "--target-directory"],
    };
    for w in opt_values(
        args,
        &["-f", "-C", "-t", "-d"],
        &["file", "directory", "target-directory"],
    ) {
        k.write(c, &w);
    }
    let ops = operands_skipping(
        args,
        value_opts,
        &["file", "directory", "target-directory", "suffix"],
    );
    let target_dir = !opt_values(args, &["-t"], &["target-directory"]).is_empty();
    let last = ops.len().saturating_sub(1);
    for (i, w) in ops.iter().enumerate() {
        let is_target = match p {
            "tar" | "unzip" | "gzip" | "gunzip" | "bzip2" | "xz" | "patch" => true,
            "zip" | "7z" => i == 0,
            _ => !target_dir && i == last && ops.len() > 1,
        };
        if is_target {
            k.write(c, w);
        } else {
            k.read(c, w);
        }
        if recursive && !is_target || (p == "tar" || p == "zip") {
            k.recursive_read(c, w);
        }
    }
}

fn rm(k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let recursive = p == "rm" && flag(args, "rR", &["recursive"]);
    let ops = operands(args);
    if ops.is_empty() {
        c.add(Category::Delete, "delete", format!("`{p}` deletes files"));
    }
    for w in ops {
        if recursive {
            if let Some(hit) = k.contains(w) {
                c.add(
                    Category::DestructiveDelete,
                    "destructive-delete",
                    format!("`rm -r {}` deletes a directory holding {hit}", w.display()),
                );
            } else {
                match k.inside_workspace(w) {
                    Some(true) => c.add(
                        Category::Delete,
                        "delete",
                        format!("`rm -r` deletes {} in the workspace", w.display()),
                    ),
                    Some(false) => c.add(
                        Category::DestructiveDelete,
                        "destructive-delete",
                        format!("`rm -r {}` reaches outside the workspace", w.display()),
                    ),
                    None => c.add(
                        Category::Delete,
                        "delete",
                        format!("`rm -r` deletes {}", w.display()),
                    ),
                }
            }
        } else {
            c.add(
                Category::Delete,
                "delete",
                format!("`{p}` deletes {}", w.display()),
            );
        }
        k.write(c, w);
    }
}

fn shell(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let ops = operands_skipping(args, &["-o", "-O", "+o", "+O"], &["rcfile", "init-file"]);
    let reads_stdin = flag(args, "s", &[]) || ops.is_empty();
    script_or_stdin(
        seg,
        k,
        c,
        p,
        ops.first().copied().filter(|_| !flag(args, "s", &[])),
        reads_stdin,
    );
}

/// An interpreter running a script operand, or reading its program from stdin.
fn script_or_stdin(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    script: Option<&Word>,
    reads_stdin: bool,
) {
    if let Some(w) = script {
        if w.process_substitution || w.substitution {
            c.add(
                Category::PipeToShell,
                "pipe-to-shell",
                format!("`{p}` runs code produced by another command"),
            );
            return;
        }
        if matches!(w.value.as_deref(), Some("-" | "/dev/stdin")) {
            return script_or_stdin(seg, k, c, p, None, true);
        }
        c.add(
            Category::RunCode,
            "run-code",
            format!("`{p}` runs {}", w.display()),
        );
        k.read(c, w);
        return;
    }
    if !reads_stdin {
        c.add(Category::RunCode, "run-code", format!("runs `{p}`"));
        return;
    }
    match &seg.stdin {
        s if stdin_is_pipe(s) => c.add(
            Category::PipeToShell,
            "pipe-to-shell",
            format!("`{p}` runs code piped from another command"),
        ),
        Stdin::Here(_) => {
            c.inline_eval = true;
            c.add(
                Category::RunCode,
                "inline-eval",
                format!("`{p}` runs a here-document"),
            );
        }
        Stdin::File => c.add(
            Category::RunCode,
            "run-code",
            format!("`{p}` runs a script from a redirect"),
        ),
        _ => c.add(
            Category::RunCode,
            "run-code",
            format!("starts an interactive `{p}`"),
        ),
    }
}

fn interpreter(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let inline: &[&str] = match p {
        "node" | "nodejs" | "bun" => &["-e", "--eval", "-p", "--print"],
        "ruby" | "irb" | "lua" | "luajit" | "julia" => &["-e"],
        "perl" => &["-e", "-E"],
        "php" => &["-r"],
        "deno" => &["eval"],
        "osascript" => &["-e"],
        "pwsh" => &["-c", "-Command", "-command"],
        "Rscript" | "R" => &["-e"],
        _ => &["-c"],
    };
    if args.iter().any(|w| {
        w.value.as_deref().is_some_and(|s| {
            inline.contains(&s)
                || (s.len() > 2
                    && inline
                        .iter()
                        .any(|i| i.len() == 2 && s.starts_with(i) && !s.starts_with("--")))
        })
    }) {
        c.inline_eval = true;
        c.add(
            Category::RunCode,
            "inline-eval",
            format!("`{p}` runs code given inline"),
        );
        read_all(k, c, args, true);
        return;
    }
    if p.starts_with("python") {
        let modules = opt_values(args, &["-m"], &[]);
        if let Some(m) = modules.first() {
            let rest: Vec<String> = args.iter().map(|w| v(w).to_string()).collect();
            if v(m) == "pip" && rest.iter().any(|s| s == "install" || s == "uninstall") {
                c.add(
                    Category::PackageInstall,
                    "package-install",
                    "`python -m pip install` installs packages",
                );
            } else {
                c.add(
                    Category::RunCode,
                    "run-code",
                    format!("`{p} -m {}` runs a module", m.display()),
                );
            }
            read_all(k, c, args, true);
            return;
        }
    }
    let value_opts: &[&str] = match p {
        "node" | "nodejs" => &[
            "-r",
            "--require",
            "--import",
            "--loader",
            "--experimental-loader",
            "--env-file",
            "-C",
            "--conditions",
            "--input-type",
            "--title",
        ],
        _ if p.starts_with("python") || p.starts_with("pypy") => &["-W", "-X", "-Q"],
        "deno" => &["--allow-read", "--config", "-c"],
        _ => &["-I", "-M"],
    };
    let ops = operands_skipping(args, value_opts, &[]);
    let mut ops = ops.into_iter();
    let mut script = ops.next();
    if p == "deno" && script.is_some_and(|w| matches!(v(w), "run" | "task" | "test" | "serve")) {
        script = ops.next();
    }
    script_or_stdin(seg, k, c, p, script, true);
    for w in ops {
        if w.value.is_some() {
            k.read(c, w);
        }
    }
}
