//! The built-in command table: which [`Category`] each analysed shell segment (and each
//! non-exec [`Action`]) falls in, with a reason per finding. A segment can have several
//! findings (`curl -o ~/.ssh/x URL` is an HTTP read, a write and a sensitive path); the
//! caller lets the strictest decide. Policy `[[commands]]` overrides replace the table's
//! own entry for a program, never the path checks.

mod args;
mod commands;
mod commands_code;
mod commands_dev;
mod commands_files;
mod commands_git;
mod commands_http;
mod commands_sys;
mod commands_text;
mod git_content;
mod gram_git;
mod gram_list;
mod gram_misc;
mod gram_net;
mod gram_search;
mod gram_text;
mod grammar;
mod grep_include;
mod http_target;
mod judge;
mod paths_check;
mod programs;
mod queries;
mod read_programs;
mod tools;
mod tree_walk;

pub use tools::classify_tool;

use super::file::Policy;
use super::request::{Action, Status};
use super::shell::{Segment, Stdin};
use super::verdict::{Category, Reason};
use std::path::{Path, PathBuf};

/// One thing a segment does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    pub category: Category,
    pub reason: Reason,
}

/// All findings of one segment or action.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Classification {
    pub findings: Vec<Finding>,
    /// Runs code given inline (`node -e`, `python -c`, `awk '…system()…'`): never persisted.
    pub inline_eval: bool,
}

impl Classification {
    pub fn add(
        &mut self,
        category: Category,
        code: &'static str,
        message: impl Into<std::borrow::Cow<'static, str>>,
    ) {
        self.findings.push(Finding {
            category,
            reason: Reason::new(code, message),
        });
    }
}

/// What the table needs besides the segment.
#[derive(Debug, Clone, Copy)]
pub struct TableContext<'a> {
    pub policy: &'a Policy,
    /// The agent's home.
    pub home: &'a Path,
    /// The workspace (`rm -r` outside it is destructive).
    pub workspace: &'a Path,
    /// The request's working directory.
    pub cwd: &'a Path,
}

/// Classifies one analysed shell segment.
pub fn classify_segment(seg: &Segment, t: &TableContext) -> Classification {
    // Nearly every segment has one or two findings: room for them up front.
    let mut c = Classification {
        findings: Vec::with_capacity(2),
        ..Classification::default()
    };
    if seg.privileged {
        c.add(
            Category::Privilege,
            "privilege",
            format!("runs as another user through {}", seg.wrappers.join(" ")),
        );
    }
    if let Some(problem) = &seg.problem {
        c.add(Category::Unanalysable, "unanalysable", problem.clone());
        return c;
    }
    let checker = paths_check::Checker::new(seg, t);
    checker.env_assignments(&mut c);
    checker.redirects(&mut c);
    if seg.argv.is_empty() {
        if c.findings.is_empty() {
            c.add(
                Category::Enumerate,
                "no-command",
                "assignment or redirection only",
            );
        }
        return c;
    }
    commands::classify(seg, t, &checker, &mut c);
    if c.findings.is_empty() {
        c.add(Category::RunCode, "unknown-program", "runs a program");
    }
    let autonomous_only = c
        .findings
        .iter()
        .all(|f| t.policy.status(f.category) == Status::Autonomous);
    if !seg.trusted_location && autonomous_only {
        let place = seg.resolved.as_ref().map_or_else(
            || "is not found on the agent's PATH".to_string(),
            |p| format!("is {}, outside the system directories", p.display()),
        );
        c.add(
            Category::RunCode,
            "untrusted-location",
            format!(
                "`{}` {place}: it may be any program",
                seg.program.as_deref().unwrap_or("")
            ),
        );
    }
    c
}

/// Is `stdin` fed by another program (a pipe)?
pub(crate) fn stdin_is_pipe(stdin: &Stdin) -> bool {
    matches!(stdin, Stdin::Pipe)
}

/// Keys of OpenClaw's config that turn approvals off (or hand out elevated exec).
pub(crate) fn is_approvals_key(key: &str, value: Option<&str>) -> bool {
    let key = key.trim().to_ascii_lowercase();
    let value = value.map(|v| v.trim().trim_matches('"').to_ascii_lowercase());
    match key.as_str() {
        "tools.exec.security" => {
            value.as_deref() != Some("deny") && value.as_deref() != Some("allowlist")
        }
        "tools.exec.ask" => {
            value.as_deref() != Some("always") && value.as_deref() != Some("on-miss")
        }
        "tools.exec.askfallback" => value.as_deref() != Some("deny"),
        k => {
            k.starts_with("tools.elevated")
                || k.starts_with("approvals")
                || k.starts_with("tools.exec.safebins")
                || k.starts_with("tools.exec.allowlist")
                || k == "skills.autoinstall"
        }
    }
}

/// A file tool call: its category, finding, verb, and whether it writes.
type FileOp = (Category, &'static str, &'static str, bool);

const FILE_READ: FileOp = (Category::Read, "file-read", "reads", false);
const FILE_WRITE: FileOp = (Category::Write, "file-write", "writes", true);
const FILE_DELETE: FileOp = (Category::Delete, "file-delete", "deletes", true);

/// Classifies a non-exec action (tool calls the plugin forwards).
pub fn classify_action(action: &Action, t: &TableContext) -> Classification {
    let mut c = Classification::default();
    match action {
        Action::Exec(_) => {
            c.add(
                Category::Unanalysable,
                "unanalysable",
                "exec is analysed as shell",
            );
        }
        Action::Tool(call) => return classify_tool(call, t),
        Action::FileRead { path } => file_action(&mut c, t, path, FILE_READ),
        Action::FileWrite { path, .. } => file_action(&mut c, t, path, FILE_WRITE),
        Action::FileDelete { path } => file_action(&mut c, t, path, FILE_DELETE),
        Action::Http { method, url } => http_action(&mut c, t, method, url),
        Action::Browser { action, url } => browser_action(&mut c, action, url.as_deref()),
        Action::PackageInstall { manager, packages } => c.add(
            Category::PackageInstall,
            "package-install",
            format!("{manager} installs {}", packages.join(" ")),
        ),
        Action::ProcessExit { code } => c.add(
            Category::ProcessExit,
            "process-exit",
            format!("the agent process exits (code {code:?})"),
        ),
        Action::SkillInstall { name } => c.add(
            Category::SkillInstall,
            "skill-install",
            format!("installs skill {name}"),
        ),
        Action::ConfigChange { key, value } => {
            if is_approvals_key(key, value.as_deref()) {
                c.add(
                    Category::ApprovalsOff,
                    "approvals-off",
                    format!("config `{key}` loosens approvals"),
                );
            } else {
                c.add(
                    Category::ConfigChange,
                    "config-change",
                    format!("sets `{key}`"),
                );
            }
        }
        Action::PluginApproval {
            plugin_id, title, ..
        } => c.add(
            Category::Unanalysable,
            "plugin-approval",
            format!(
                "plugin {} asks: {title}",
                plugin_id.as_deref().unwrap_or("(unnamed)")
            ),
        ),
    }
    c
}

fn file_action(c: &mut Classification, t: &TableContext, path: &Path, op: FileOp) {
    let (category, code, verb, write) = op;
    c.add(category, code, format!("{verb} {}", path.display()));
    paths_check::check_path(c, t, &abs(path, t), write);
}

/// `file://` reads a file; GET, HEAD and OPTIONS only fetch; any other method sends.
fn http_action(c: &mut Classification, t: &TableContext, method: &str, url: &str) {
    let m = method.to_ascii_uppercase();
    if let Some(path) = url.strip_prefix("file://") {
        c.add(Category::Read, "file-url", format!("reads {path}"));
        paths_check::check_path(c, t, &abs(Path::new(path), t), false);
    } else if matches!(m.as_str(), "GET" | "HEAD" | "OPTIONS") {
        c.add(Category::HttpRead, "http-read", format!("{m} {url}"));
        http_target::check(c, url);
    } else {
        c.add(Category::HttpWrite, "http-write", format!("{m} {url}"));
    }
}

/// A local browser launch or screenshot is not allowed; other browser actions browse.
fn browser_action(c: &mut Classification, action: &str, url: Option<&str>) {
    let a = action.to_ascii_lowercase();
    if a.contains("launch") || a.contains("screenshot") {
        c.add(
            Category::Privilege,
            "browser-blocked",
            format!("browser `{action}` is not allowed (local browser launch or screenshot)"),
        );
    } else {
        c.add(
            Category::Browse,
            "browse",
            format!("browser `{action}` {}", url.unwrap_or("")),
        );
        // The browser is on the same networks: an internal page is no public browse.
        if let Some(u) = url.filter(|u| !u.is_empty() && *u != "about:blank") {
            http_target::check(c, u);
        }
    }
}

fn abs(path: &Path, t: &TableContext) -> PathBuf {
    super::shell::normalize_path(&path.to_string_lossy(), t.home, t.cwd)
}

#[cfg(test)]
mod tests;
