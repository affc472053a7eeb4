//! The per-program entries of the command table (Sanctum action table, ClawPal command rules):
//! [`PROGRAMS`] says which handler judges which program; a program in no row runs code.

use super::args::{operands, operands_skipping, read_all, v};
use super::judge::program_says;
use super::paths_check::Checker;
use super::programs::{listed, Listed};
use super::{
    commands_code as code, commands_dev as dev, commands_files as files, commands_git as git,
    commands_http as http, commands_sys as sys, commands_text as text, read_programs as reads,
};
use super::{Classification, TableContext};
use crate::policy::shell::{Segment, Word};
use crate::policy::verdict::Category;

/// Which programs a row of [`PROGRAMS`] applies to.
enum Pick {
    /// The programs of one list of `programs.rs`.
    Kind(Listed),
    Names(&'static [&'static str]),
    Prefix(&'static str),
}

/// What a row does with the program's segment.
enum Then {
    /// The program's own handler.
    Run(Handler),
    /// One finding (`{p}` in the message is the program); `true`: the operands are then
    /// path-checked as reads.
    Say(Category, &'static str, &'static str, bool),
}

/// A handler: the segment, its path checker, the findings, the program and its arguments.
type Handler = fn(&Segment, &Checker, &mut Classification, &str, &[Word]);

use Pick::{Kind, Names, Prefix};
use Then::{Run, Say};

/// The programs the table knows, in order: the first row that picks a program judges it.
#[rustfmt::skip]
static PROGRAMS: &[(Pick, Then)] = &[
    (Kind(Listed::NoFiles), Run(sys::no_files)),
    (Kind(Listed::Enumerate), Run(|s, k, c, p, a| reads::read_program(s, k, c, p, a, Category::Enumerate))),
    (Names(&["find"]), Run(|_, k, c, _, a| files::find(k, c, a))),
    (Kind(Listed::Read), Run(|s, k, c, p, a| reads::read_program(s, k, c, p, a, Category::Read))),
    (Names(&["env", "printenv"]), Say(Category::Read, "read-env", "prints the environment", false)),
    (Kind(Listed::Grep), Run(text::grep)),
    (Names(&["sed"]), Run(|s, k, c, _, a| text::sed(s, k, c, a))),
    (Names(&["awk", "gawk", "mawk", "nawk", "busybox"]), Run(text::awk)),
    (Kind(Listed::WriteAll), Run(write_all)),
    (Names(&["cp", "install", "ln", "rsync", "tar", "zip", "unzip", "dd", "patch", "gzip",
             "gunzip", "bzip2", "xz", "7z"]), Run(archive_or_copy)),
    (Kind(Listed::Delete), Run(|_, k, c, p, a| files::rm(k, c, p, a))),
    (Names(&["curl"]), Run(|_, k, c, _, a| http::curl(k, c, a))),
    (Names(&["wget"]), Run(|_, k, c, _, a| http::wget(k, c, a))),
    (Names(&["http", "https", "xh", "httpie"]), Run(|_, _, c, _, a| http::httpie(c, a))),
    (Kind(Listed::Network),
        Say(Category::HttpWrite, "network", "`{p}` opens a network connection that can send data", true)),
    (Names(&["git"]), Run(|s, k, c, _, a| git::git(s, k, c, a))),
    (Names(&["npm", "pnpm", "yarn", "bun", "npx", "bunx"]), Run(|s, k, c, p, a| dev::node_pm(k, c, p, a, s))),
    (Names(&["pip", "pip3", "pipx", "uv", "cargo", "gem", "go", "brew", "composer", "conda",
             "poetry"]), Run(|_, k, c, p, a| dev::other_pm(k, c, p, a))),
    (Names(&["openclaw", "clawhub"]), Run(|_, _, c, p, a| dev::openclaw(c, p, a))),
    (Names(&["systemctl", "service"]), Run(|_, _, c, p, a| sys::systemctl(c, p, a))),
    (Names(&["crontab"]), Run(crontab)),
    (Names(&["docker", "podman", "kubectl", "nerdctl"]), Run(|_, _, c, p, a| sys::containers(c, p, a))),
    (Names(&["kill", "pkill", "killall", "skill", "xkill"]), Run(kill)),
    (Kind(Listed::Privilege),
        Say(Category::Privilege, "privilege", "`{p}` changes privileges or system state", true)),
    (Kind(Listed::Shell), Run(code::shell)),
    (Kind(Listed::Interpreter), Run(code::interpreter)),
    (Prefix("python3."), Run(code::interpreter)),
    (Names(&["source", "."]), Run(source)),
    (Names(&["eval"]), Run(eval)),
    (Names(&["trap"]), Run(trap)),
];

pub(super) fn classify(seg: &Segment, t: &TableContext, k: &Checker, c: &mut Classification) {
    let name = v(&seg.argv[0]);
    let args = &seg.argv[1..];
    let p = seg.program.as_deref().unwrap_or_default();
    if name == "/elevated" || name == "/exec" {
        slash_command(c, name, args);
        return;
    }
    if let Some((category, code, message)) = outside_table(seg, t, name, p, args) {
        c.add(category, code, message);
        read_all(k, c, args, true);
        return;
    }
    if super::queries::certain_query(seg, k, c, p, args) {
        return;
    }
    let kind = listed(p);
    let row = PROGRAMS.iter().find(|(pick, _)| match pick {
        Kind(l) => kind == Some(*l),
        Names(names) => names.contains(&p),
        Prefix(prefix) => p.starts_with(prefix),
    });
    match row {
        Some((_, Run(handler))) => handler(seg, k, c, p, args),
        Some((_, Say(category, code, message, reads_operands))) => {
            c.add(*category, code, message.replace("{p}", p));
            if *reads_operands {
                read_all(k, c, args, true);
            }
        }
        None => {
            c.add(
                Category::RunCode,
                "unknown-program",
                format!("runs `{p}`, which the command table does not know"),
            );
            read_all(k, c, args, true);
        }
    }
}

/// Chat-style slash commands OpenClaw accepts as text.
fn slash_command(c: &mut Classification, name: &str, args: &[Word]) {
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
}

/// A segment the table does not judge: a shell function, a program whose name is not
/// trusted, or one the policy's `[[commands]]` classify.
fn outside_table(
    seg: &Segment,
    t: &TableContext,
    name: &str,
    p: &str,
    args: &[Word],
) -> Option<(Category, &'static str, String)> {
    if seg.function_call {
        // The body is analysed on its own; recursion (`:(){ :|:& };:`) and positional
        // arguments are not.
        let why = format!("calls the shell function `{name}` defined in the same command");
        return Some((Category::Unanalysable, "function-call", why));
    }
    if !seg.trusted_name {
        let why = format!("runs the program {name}");
        return Some((Category::RunCode, "run-program", why));
    }
    if t.policy.commands().is_empty() {
        return None;
    }
    let override_name = seg
        .resolved
        .as_ref()
        .map_or_else(|| name.to_string(), |p| p.to_string_lossy().into_owned());
    let sargs: Vec<String> = args.iter().map(|w| w.display().to_string()).collect();
    let cat = t.policy.command_override(&override_name, &sargs)?;
    let why = format!("`{p}` is {cat:?} by the policy's [[commands]]");
    Some((cat, "policy-command", why))
}

fn write_all(_: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    c.add(
        Category::Write,
        "write",
        program_says(p, " creates or changes files"),
    );
    let shorts = &["-m", "-p", "-s", "-r", "-t", "--suffix"];
    let longs = &[
        "reference",
        "size",
        "mode",
        "context",
        "suffix",
        "target-directory",
    ];
    for w in operands_skipping(args, shorts, longs) {
        k.write(c, w);
    }
}

fn archive_or_copy(seg: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    if !sys::archive_read(seg, k, c, p, args) {
        files::copy_like(k, c, p, args)
    }
}

fn crontab(_: &Segment, _: &Checker, c: &mut Classification, _: &str, args: &[Word]) {
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

fn kill(_: &Segment, _: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    if p == "kill" && sys::kill_lists(args) {
        c.add(Category::Enumerate, "enumerate", "lists signals");
    } else {
        c.add(
            Category::ProcessExit,
            "process-exit",
            format!("`{p}` stops processes (the agent's own too)"),
        );
    }
}

fn source(_: &Segment, k: &Checker, c: &mut Classification, p: &str, args: &[Word]) {
    match operands(args).first() {
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
    }
}

fn eval(_: &Segment, _: &Checker, c: &mut Classification, _: &str, args: &[Word]) {
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

fn trap(_: &Segment, _: &Checker, c: &mut Classification, _: &str, args: &[Word]) {
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
