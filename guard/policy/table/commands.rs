//! The per-program entries of the command table (Sanctum action table, ClawPal command rules).

use super::args::{operands, operands_skipping, read_all, v};
use super::paths_check::Checker;
use super::programs::{listed, Listed};
use super::{Classification, TableContext};
use crate::policy::shell::Segment;
use crate::policy::verdict::Category;

pub(super) fn classify(seg: &Segment, t: &TableContext, k: &Checker, c: &mut Classification) {
    let argv = &seg.argv;
    let name = v(&argv[0]);
    let args = &argv[1..];
    let prog = seg.program.as_deref().unwrap_or_default();

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
    let overridden = if t.policy.commands().is_empty() {
        None
    } else {
        let override_name = seg
            .resolved
            .as_ref()
            .map_or_else(|| name.to_string(), |p| p.to_string_lossy().into_owned());
        let sargs: Vec<String> = args.iter().map(|w| w.display().to_string()).collect();
        t.policy.command_override(&override_name, &sargs)
    };
    if let Some(cat) = overridden {
        c.add(
            cat,
            "policy-command",
            format!("`{prog}` is {cat:?} by the policy's [[commands]]"),
        );
        read_all(k, c, args, true);
        return;
    }

    let p = prog;
    match (p, listed(p)) {
        (_, Some(Listed::NoFiles)) => super::commands_sys::no_files(seg, k, c, p, args),
        (_, Some(Listed::Enumerate)) => {
            super::read_programs::read_program(seg, k, c, p, args, Category::Enumerate)
        }
        ("find", _) => super::commands_files::find(k, c, args),
        (_, Some(Listed::Read)) => {
            super::read_programs::read_program(seg, k, c, p, args, Category::Read)
        }
        ("env" | "printenv", _) => {
            c.add(Category::Read, "read-env", "prints the environment");
        }
        (_, Some(Listed::Grep)) => super::commands_text::grep(seg, k, c, p, args),
        ("sed", _) => super::commands_text::sed(seg, k, c, args),
        ("awk" | "gawk" | "mawk" | "nawk" | "busybox", _) => {
            super::commands_text::awk(seg, k, c, p, args)
        }
        (_, Some(Listed::WriteAll)) => {
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
        (
            "cp" | "install" | "ln" | "rsync" | "tar" | "zip" | "unzip" | "dd" | "patch" | "gzip"
            | "gunzip" | "bzip2" | "xz" | "7z",
            _,
        ) => {
            if !super::commands_sys::archive_read(seg, k, c, p, args) {
                super::commands_files::copy_like(k, c, p, args)
            }
        }
        (_, Some(Listed::Delete)) => super::commands_files::rm(k, c, p, args),
        ("curl", _) => super::commands_http::curl(k, c, args),
        ("wget", _) => super::commands_http::wget(k, c, args),
        ("http" | "https" | "xh" | "httpie", _) => super::commands_http::httpie(c, args),
        (_, Some(Listed::Network)) => {
            c.add(
                Category::HttpWrite,
                "network",
                format!("`{p}` opens a network connection that can send data"),
            );
            read_all(k, c, args, true);
        }
        ("git", _) => super::commands_git::git(seg, k, c, args),
        ("npm" | "pnpm" | "yarn" | "bun" | "npx" | "bunx", _) => {
            super::commands_dev::node_pm(k, c, p, args, seg)
        }
        (
            "pip" | "pip3" | "pipx" | "uv" | "cargo" | "gem" | "go" | "brew" | "composer" | "conda"
            | "poetry",
            _,
        ) => super::commands_dev::other_pm(k, c, p, args),
        ("openclaw" | "clawhub", _) => super::commands_dev::openclaw(c, p, args),
        ("systemctl" | "service", _) => super::commands_sys::systemctl(c, p, args),
        ("crontab", _) => {
            if args.len() == 1 && v(&args[0]) == "-l" {
                c.add(Category::Enumerate, "enumerate", "lists the crontab");
            } else {
                c.add(
                    Category::Privilege,
                    "persistence",
                    "`crontab` installs scheduled commands",
                );
            }
        }
        ("docker" | "podman" | "kubectl" | "nerdctl", _) => {
            super::commands_sys::containers(c, p, args)
        }
        ("kill" | "pkill" | "killall" | "skill" | "xkill", _) => {
            if p == "kill" && super::commands_sys::kill_lists(args) {
                c.add(Category::Enumerate, "enumerate", "lists signals");
            } else {
                c.add(
                    Category::ProcessExit,
                    "process-exit",
                    format!("`{p}` stops processes (the agent's own too)"),
                );
            }
        }
        (_, Some(Listed::Privilege)) => {
            c.add(
                Category::Privilege,
                "privilege",
                format!("`{p}` changes privileges or system state"),
            );
            read_all(k, c, args, true);
        }
        (_, Some(Listed::Shell)) => super::commands_code::shell(seg, k, c, p, args),
        (_, kind) if kind == Some(Listed::Interpreter) || p.starts_with("python3.") => {
            super::commands_code::interpreter(seg, k, c, p, args)
        }
        ("source" | ".", _) => match operands(args).first() {
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
        ("eval", _) => {
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
        ("trap", _) => {
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
