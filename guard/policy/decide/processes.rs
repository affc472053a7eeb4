//! Other processes' command lines where OpenClaw runs the command. Under the guard's own
//! runs (node host, socket `exec`) a run sees only its own processes, so `ps aux` shows
//! nothing of anyone else's. Where OpenClaw runs the command itself (the socket's `request`,
//! the gateway), nothing hides them: `ps aux`, `pgrep -a`, `w` or `cat /proc/*/cmdline`
//! print every process's arguments, and a server started with its key in argv hands it out.
//! There they are a person's call.

use super::ask_person;
use crate::policy::request::Source;
use crate::policy::verdict::{SegmentVerdict, Verdict};

/// Asks a person when a command OpenClaw runs would print other processes' arguments.
pub(super) fn judge(verdict: &mut Verdict, source: Source) {
    if matches!(source, Source::SocketExec | Source::Node) {
        return;
    }
    let shown: Vec<String> = verdict
        .segments
        .iter()
        .filter(|s| prints_other_processes(s))
        .map(|s| s.text.clone())
        .collect();
    if let Some(first) = shown.first() {
        ask_person(
            verdict,
            "process-arguments",
            format!(
                "`{first}` prints other processes' command lines (they can hold keys), and the \
                 guard does not run this command itself, so nothing hides them"
            ),
        );
    }
}

/// `ps`, `top`, `htop`, `w`, `pgrep -a`, `pstree -a`, or a path into another process's
/// `/proc` directory.
fn prints_other_processes(seg: &SegmentVerdict) -> bool {
    let program = seg
        .argv
        .first()
        .map(|p| p.rsplit('/').next().unwrap_or(p).to_string());
    let args = seg.argv.get(1..).unwrap_or_default();
    let has = |short: char, long: &str| {
        args.iter()
            .any(|a| a == long || (a.starts_with('-') && !a.starts_with("--") && a.contains(short)))
    };
    let by_program = match program.as_deref() {
        Some("ps" | "top" | "htop" | "w" | "atop" | "procs") => true,
        Some("pgrep" | "pkill") => has('a', "--list-full"),
        Some("pstree") => has('a', "--arguments"),
        _ => false,
    };
    by_program || args.iter().any(|a| other_proc_path(a))
}

/// `/proc/<pid>/…` or `/proc/<glob>/…` (not `/proc/self`, `/proc/cpuinfo` and the like).
fn other_proc_path(arg: &str) -> bool {
    let Some(rest) = arg.strip_prefix("/proc/") else {
        return false;
    };
    let first = rest.split('/').next().unwrap_or_default();
    !first.is_empty()
        && (first.bytes().all(|b| b.is_ascii_digit()) || first.contains(['*', '?', '[']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::verdict::{Category, VerdictKind};

    fn seg(argv: &[&str]) -> SegmentVerdict {
        SegmentVerdict {
            text: argv.join(" "),
            argv: argv.iter().map(|s| s.to_string()).collect(),
            resolved_path: None,
            category: Category::Enumerate,
            verdict: VerdictKind::Allow,
            reasons: Vec::new(),
            cwds: None,
        }
    }

    #[test]
    fn other_processes_arguments_are_recognised() {
        let rows: &[(&[&str], bool)] = &[
            (&["ps", "aux"], true),
            (&["/bin/ps", "-eo", "args"], true),
            (&["pgrep", "-a", "node"], true),
            (&["pgrep", "-fa", "node"], true),
            (&["pgrep", "node"], false),
            (&["pstree", "-a"], true),
            (&["pstree"], false),
            (&["cat", "/proc/1/cmdline"], true),
            (&["cat", "/proc/*/cmdline"], true),
            (&["cat", "/proc/cpuinfo"], false),
            (&["cat", "/proc/self/status"], false),
            (&["w"], true),
            (&["ls", "-la"], false),
        ];
        for (argv, want) in rows {
            assert_eq!(prints_other_processes(&seg(argv)), *want, "{argv:?}");
        }
    }
}
