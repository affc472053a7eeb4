//! The per-program entries of the command table (Sanctum action table, ClawPal command rules).

use super::paths_check::Checker;
use super::{Classification, TableContext};
use crate::policy::shell::{Segment, Word, SHELLS};
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

pub(super) fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// Non-option words (after `--` every word is an operand). Unknown words count as operands.
pub(super) fn operands(args: &[Word]) -> Vec<&Word> {
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
pub(super) fn flag(args: &[Word], short: &str, longs: &[&str]) -> bool {
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
pub(super) fn opt_values(args: &[Word], shorts: &[&str], longs: &[&str]) -> Vec<Word> {
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
pub(super) fn operands_skipping<'a>(
    args: &'a [Word],
    shorts: &[&str],
    longs: &[&str],
) -> Vec<&'a Word> {
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
pub(super) fn read_all(k: &Checker, c: &mut Classification, args: &[Word], allow_unknown: bool) {
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
        "find" => super::commands_files::find(k, c, args),
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
        _ if GREPS.contains(&p) => super::commands_files::grep(k, c, p, args),
        "sed" => super::commands_files::sed(k, c, args),
        "awk" | "gawk" | "mawk" | "nawk" | "busybox" => super::commands_files::awk(k, c, p, args),
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
        | "gunzip" | "bzip2" | "xz" | "7z" => super::commands_files::copy_like(k, c, p, args),
        _ if DELETE.contains(&p) => super::commands_files::rm(k, c, p, args),
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
        _ if SHELLS.contains(&p) => super::commands_code::shell(seg, k, c, p, args),
        _ if INTERPRETERS.contains(&p) || p.starts_with("python3.") => {
            super::commands_code::interpreter(seg, k, c, p, args)
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
