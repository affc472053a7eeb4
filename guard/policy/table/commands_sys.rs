//! System programs of the table: the no-file utilities whose words can still change the
//! system (`date -s`, `hostname NAME`, `ps e`), archive list modes (`tar -t`, `unzip -l`),
//! and the service and container CLIs, whose subcommand is found after their global
//! options (`systemctl --user status`, `kubectl -n x get pods`).

use super::gram_list::G_DATE;
use super::gram_misc::{G_HOSTNAME, G_PS, G_TAR_READ, G_TOP, G_UNZIP_READ};
use super::grammar::{o, parse, Arg::*, Eff::*, Grammar, Parsed};
use super::judge::{judge, read_files};
use super::paths_check::Checker;
use super::read_programs::globs_may_be_options;
use super::Classification;
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

fn v(w: &Word) -> &str {
    w.value.as_deref().unwrap_or("")
}

/// Programs that take no file operands. Most cannot change anything whatever their
/// words; the ones that can are parsed.
pub(super) fn no_files(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    let msg = match p {
        "exit" | "logout" | "return" => {
            "leaves the command's own shell (not the agent)".to_string()
        }
        "cd" | "pushd" | "popd" => "changes the working directory".to_string(),
        _ => format!("`{p}` reads no files"),
    };
    c.add(Category::Enumerate, "enumerate", msg);
    match p {
        "date" => {
            if let Some(parsed) = judge(k, c, p, &G_DATE, args) {
                for w in &parsed.operands {
                    if !v(w).starts_with('+') {
                        c.add(
                            Category::Privilege,
                            "gated-option",
                            format!("`date {}` sets the system clock", w.display()),
                        );
                    }
                }
            }
        }
        "hostname" => {
            if let Some(parsed) = judge(k, c, p, &G_HOSTNAME, args) {
                if !parsed.operands.is_empty() {
                    c.add(
                        Category::Privilege,
                        "gated-option",
                        "`hostname NAME` sets the host name",
                    );
                }
            }
        }
        "top" => {
            // procps' top creates ~/.config/procps on start, even in batch mode (the oracle
            // saw it): a write, not a read.
            let understood = judge(k, c, p, &G_TOP, args).is_some();
            if understood {
                c.add(
                    Category::Write,
                    "write",
                    "`top` creates its config directory (~/.config/procps)",
                );
            }
        }
        "ps" => ps(k, c, args),
        "bc" => {
            c.add(Category::Read, "read", "`bc` reads its file operands");
            let ops: Vec<&Word> = args.iter().filter(|w| !v(w).starts_with('-')).collect();
            read_files(seg, k, c, &ops);
        }
        "history" | "hash" if !(args.is_empty() || p == "hash" && v(&args[0]) == "-r") => {
            c.add(
                Category::Unanalysable,
                "gated-option",
                format!("`{p}` with arguments reads or writes files or binds names"),
            );
        }
        "alias"
            if args
                .iter()
                .any(|w| w.value.as_deref().is_none_or(|s| s.contains('='))) =>
        {
            c.add(
                Category::Unanalysable,
                "gated-option",
                "`alias NAME=…` defines a command",
            );
        }
        _ => {}
    }
}

/// Dashed ps options whose value may be the next word (as in `G_PS`).
const PS_SHORT_VALUE: &str = "CGgoOpqstuUk";
const PS_LONG_VALUE: &[&str] = &[
    "sort",
    "pid",
    "ppid",
    "cols",
    "columns",
    "width",
    "lines",
    "rows",
    "format",
    "quick-pid",
    "sid",
    "tty",
    "user",
    "User",
    "group",
    "Group",
];

/// ps: dashed options by grammar; a BSD word (`aux`) is letters, and `e` in it prints
/// other processes' environments.
fn ps(k: &Checker, c: &mut Classification, args: &[Word]) {
    const BSD: &str = "auxwfjlsvmrTHScnhgZLCAX";
    const BSD_VALUE: &str = "oOkpqtU";
    let mut dashed: Vec<Word> = Vec::new();
    let mut i = 0;
    while i < args.len() {
        let w = &args[i];
        let s = v(w);
        if w.value.is_some()
            && !s.starts_with('-')
            && !s.is_empty()
            && s.chars().all(|ch| ch.is_ascii_alphabetic())
        {
            if s.contains('e') {
                c.add(
                    Category::Unanalysable,
                    "gated-option",
                    "`ps e` prints other processes' environments (their secrets)",
                );
                return;
            }
            if let Some(bad) = s
                .chars()
                .find(|ch| !BSD.contains(*ch) && !BSD_VALUE.contains(*ch))
            {
                c.add(
                    Category::Unanalysable,
                    "unknown-option",
                    format!("`ps` option `{bad}` is not in the command table"),
                );
                return;
            }
            // Value letters take the next word.
            i += s.chars().filter(|ch| BSD_VALUE.contains(*ch)).count();
        } else {
            dashed.push(w.clone());
            // A dashed option whose value is the next word (`-C node`, `--sort x`).
            let takes_next = match s.strip_prefix("--") {
                Some(long) => !long.contains('=') && PS_LONG_VALUE.contains(&long),
                None => s
                    .strip_prefix('-')
                    .and_then(|c| {
                        c.find(|ch| PS_SHORT_VALUE.contains(ch))
                            .map(|at| at + 1 == c.len())
                    })
                    .unwrap_or(false),
            };
            if takes_next {
                if let Some(next) = args.get(i + 1) {
                    dashed.push(next.clone());
                    i += 1;
                }
            }
        }
        i += 1;
    }
    if let Some(parsed) = judge(k, c, "ps", &G_PS, &dashed) {
        if parsed.operands.iter().any(|w| v(w).parse::<u32>().is_err()) {
            c.add(
                Category::Unanalysable,
                "unknown-option",
                "`ps` operand is not a process id",
            );
        }
    }
}

/// `tar -t`, `tar -xO` and `unzip -l|-v|-t|-p|-c|-z` read an archive. Returns false when
/// the words are not such a read (the caller judges the command as a write).
pub(super) fn archive_read(
    seg: &Segment,
    k: &Checker,
    c: &mut Classification,
    p: &str,
    args: &[Word],
) -> bool {
    let mut probe = Classification::default();
    if globs_may_be_options(k, &mut probe, p, args) {
        return false;
    }
    match p {
        "tar" => {
            // Old style: `tar tzf x.tgz` is `tar -tzf x.tgz` when at most one letter takes
            // a value (then the values follow in order, as with the dash).
            let mut owned: Vec<Word> = args.to_vec();
            if let Some(first) = owned.first_mut() {
                let s = v(first).to_string();
                if !s.is_empty()
                    && !s.starts_with('-')
                    && s.chars().all(|ch| ch.is_ascii_alphabetic())
                {
                    if s.chars().filter(|ch| "fbCTXIFKLNgV".contains(*ch)).count() > 1 {
                        return false;
                    }
                    *first = Word::literal(&format!("-{s}"));
                }
            }
            let Ok(parsed) = parse(&G_TAR_READ, &owned) else {
                return false;
            };
            let listing = parsed.has("list");
            let to_stdout = parsed.has("extract") || parsed.has("get");
            if !(listing ^ to_stdout) || (to_stdout && !parsed.has("to-stdout")) {
                return false;
            }
            let Some(archive) = parsed.values("file").next().cloned() else {
                return false;
            };
            c.add(Category::Read, "read", "`tar` lists or prints an archive");
            // Judge again on the real words (for the findings of each option).
            let _ = judge(k, c, p, &G_TAR_READ, &owned);
            let a = v(&archive);
            if a.split('/').next().is_some_and(|h| h.contains(':')) && !parsed.has("force-local") {
                c.add(
                    Category::HttpWrite,
                    "network",
                    "`tar -f HOST:FILE` reaches the archive over rsh",
                );
            }
            read_files(seg, k, c, &[&archive]);
            true
        }
        "unzip" => {
            let Ok(parsed) = parse(&G_UNZIP_READ, args) else {
                return false;
            };
            if !["-l", "-v", "-t", "-z", "-p", "-c"]
                .iter()
                .any(|f| parsed.has(f))
            {
                return false;
            }
            c.add(Category::Read, "read", "`unzip` lists or prints an archive");
            // The first operand is the archive; the rest name members inside it.
            read_files(seg, k, c, &parsed.operands[..parsed.operands.len().min(1)]);
            true
        }
        _ => false,
    }
}

/// systemctl's options before and around its verb.
#[rustfmt::skip]
static G_SYSTEMCTL: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('\0', "user", No, Safe), o('\0', "system", No, Safe), o('\0', "no-pager", No, Safe),
    o('\0', "no-legend", No, Safe), o('a', "all", No, Safe), o('l', "full", No, Safe),
    o('t', "type", Req, Safe), o('\0', "state", Req, Safe), o('p', "property", Req, Safe),
    o('P', "", Req, Safe), o('\0', "value", No, Safe), o('q', "quiet", No, Safe),
    o('\0', "plain", No, Safe), o('n', "lines", Req, Safe), o('o', "output", Req, Safe),
    o('\0', "failed", No, Safe), o('r', "recursive", No, Safe), o('\0', "reverse", No, Safe),
    o('\0', "after", No, Safe), o('\0', "before", No, Safe), o('\0', "with-dependencies", No, Safe),
    o('\0', "show-types", No, Safe), o('\0', "status-all", No, Safe), o('h', "help", No, Safe),
    o('\0', "version", No, Safe),
    o('H', "host", Req, Gate(Category::Privilege, "controls another host's services")),
    o('M', "machine", Req, Gate(Category::Privilege, "controls a container's services")),
]};

pub(super) fn systemctl(c: &mut Classification, p: &str, args: &[Word]) {
    const READ_ONLY: &[&str] = &[
        "status",
        "is-active",
        "is-enabled",
        "is-failed",
        "list-units",
        "list-unit-files",
        "list-sockets",
        "list-timers",
        "list-jobs",
        "list-dependencies",
        "show",
        "cat",
        "help",
        "get-default",
        "is-system-running",
    ];
    let parsed: Result<Parsed, _> = parse(&G_SYSTEMCTL, args);
    let read_only = match &parsed {
        Ok(parsed) => {
            let ops: Vec<&str> = parsed.operands.iter().map(|w| v(w)).collect();
            let gated = parsed.opts.iter().any(|m| m.opt.eff != Safe);
            !gated
                && parsed.operands.iter().all(|w| w.value.is_some())
                && if p == "service" {
                    (ops.is_empty() && parsed.has("status-all"))
                        || (ops.len() == 2 && ops[1] == "status")
                } else {
                    ops.first().is_none_or(|s| READ_ONLY.contains(s)) && !parsed.has("status-all")
                }
        }
        Err(_) => false,
    };
    if read_only {
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

/// docker/podman/kubectl options accepted around a read-only verb.
#[rustfmt::skip]
static G_CONTAINERS: Grammar = Grammar { permute: true, numeric: false, opts: &[
    o('D', "debug", No, Safe), o('\0', "log-level", Req, Safe), o('n', "namespace", Req, Safe),
    o('A', "all-namespaces", No, Safe), o('a', "all", No, Safe), o('q', "quiet", No, Safe),
    o('\0', "no-trunc", No, Safe), o('\0', "digests", No, Safe), o('\0', "filter", Req, Safe),
    o('\0', "format", Req, Safe), o('o', "output", Req, Check), o('l', "selector", Req, Safe),
    o('\0', "field-selector", Req, Safe), o('\0', "sort-by", Req, Safe), o('L', "label-columns", Req, Safe),
    o('\0', "show-labels", No, Safe), o('\0', "no-headers", No, Safe), o('w', "watch", No, Safe),
    o('\0', "details", No, Safe), o('f', "follow", No, Safe), o('\0', "since", Req, Safe),
    o('\0', "until", Req, Safe), o('\0', "tail", Req, Safe), o('t', "timestamps", No, Safe),
    o('c', "container", Req, Safe), o('p', "previous", No, Safe), o('\0', "all-containers", No, Safe),
    o('s', "size", No, Safe), o('\0', "type", Req, Safe), o('\0', "last", Req, Safe),
    o('\0', "latest", No, Safe), o('\0', "no-stream", No, Safe), o('\0', "show-events", Req, Safe),
    o('\0', "request-timeout", Req, Safe), o('v', "v", Req, Safe), o('\0', "context", Req, Safe),
    o('\0', "kubeconfig", Req, Read),
    o('H', "host", Req, Gate(Category::Privilege, "talks to another container daemon")),
    o('\0', "server", Req, Gate(Category::Privilege, "talks to another cluster")),
]};

pub(super) fn containers(c: &mut Classification, p: &str, args: &[Word]) {
    let verbs: &[&str] = if p == "kubectl" {
        &[
            "get",
            "describe",
            "logs",
            "version",
            "explain",
            "api-resources",
            "api-versions",
            "cluster-info",
            "top",
            "events",
        ]
    } else {
        &[
            "ps", "images", "version", "info", "inspect", "logs", "top", "port", "history", "stats",
        ]
    };
    let read = parse(&G_CONTAINERS, args).is_ok_and(|parsed| {
        let ops: Vec<&str> = parsed.operands.iter().map(|w| v(w)).collect();
        let stats_ok = ops.first() != Some(&"stats") || parsed.has("no-stream");
        let output_ok = parsed.values("output").all(|w| !v(w).contains("file"));
        parsed.operands.iter().all(|w| w.value.is_some())
            && ops.first().is_some_and(|s| verbs.contains(s))
            && !ops.iter().any(|s| names_secrets(s))
            && (p != "kubectl"
                || !args.iter().any(|w| {
                    let a = v(w);
                    ["-f", "--filename", "-k", "--kustomize", "--raw"]
                        .iter()
                        .any(|o| a == *o || a.starts_with(&format!("{o}=")))
                        || a.starts_with("-f")
                        || a.starts_with("-k")
                }))
            && stats_ok
            && output_ok
            && parsed
                .opts
                .iter()
                .all(|m| m.opt.eff == Safe || m.opt.eff == Check)
    });
    if read {
        // A listing, but through the user's credentials: ~/.kube/config goes to the
        // cluster, ~/.docker/config.json is read and the daemon's socket is root's.
        let sub = args.iter().map(v).find(|s| verbs.contains(s)).unwrap_or("");
        c.add(
            Category::Unanalysable,
            "loads-user-config",
            format!(
                "`{p} {sub}` lists state with the user's credentials ({})",
                credentials(p)
            ),
        );
    } else {
        c.add(
            Category::Privilege,
            "privilege",
            format!("`{p}` controls containers"),
        );
    }
}

/// Where `p` finds the credentials it sends.
fn credentials(p: &str) -> &'static str {
    match p {
        "kubectl" => "~/.kube/config, sent to the cluster",
        "podman" => "~/.config/containers/auth.json and the user's containers",
        _ => "~/.docker/config.json and the daemon's root socket",
    }
}

/// Could this operand name Secrets (`secret`, `Secrets/x`, `pods,secrets`, `secret.v1.`)?
/// Resource names are case-insensitive and comma-separated.
fn names_secrets(op: &str) -> bool {
    op.to_ascii_lowercase()
        .split(',')
        .any(|r| r.trim_start().starts_with("secret"))
}

/// `kill -l [SIG…]` / `kill -L` list signals; only as the first word, with signal
/// names or numbers after it (`kill 1 -l` kills 1 first).
pub(super) fn kill_lists(args: &[Word]) -> bool {
    let Some(first) = args.first() else {
        return false;
    };
    matches!(v(first), "-l" | "-L" | "--list" | "--table")
        && args[1..].iter().all(|w| {
            w.value.as_deref().is_some_and(|s| {
                !s.starts_with('-') && s.bytes().all(|b| b.is_ascii_alphanumeric())
            })
        })
}
