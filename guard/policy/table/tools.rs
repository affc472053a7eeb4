//! Tool calls through the same rows as shell text: each path a tool touches is checked as
//! the operand of the shell command that does the same (`read` as `cat P`, `write` and
//! `edit` as `echo … > P`, a patch's deletion as `rm P`), so the verdicts cannot differ.
//! A tool the table does not know is gated; the tools in [`BLOCKED_TOOLS`] are blocked.

use super::paths_check::Checker;
use super::{Action, Classification, TableContext};
use crate::policy::shell::{Segment, Stdin, Word};
use crate::policy::tools::{
    patch_ops, unresolved_path_form, PatchOp, ToolCall, BLOCKED_TOOLS, INTERNAL_TOOLS,
};
use crate::policy::verdict::Category;

/// What a tool does to one path.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Read,
    List,
    Write,
    Delete,
}

/// Classifies one tool call.
pub fn classify_tool(call: &ToolCall, t: &TableContext) -> Classification {
    let mut c = Classification::default();
    let name = call.name.as_str();
    if let Some((_, why)) = BLOCKED_TOOLS.iter().find(|(n, _)| *n == name) {
        let category = match name {
            "openclaw" | "gateway" | "plugins" => Category::ApprovalsOff,
            _ => Category::Privilege,
        };
        c.add(category, "tool-blocked", format!("the `{name}` tool {why}"));
        return c;
    }
    match name {
        "read" => paths(&mut c, t, call, Op::Read),
        "ls" => paths(&mut c, t, call, Op::List),
        "write" | "edit" => paths(&mut c, t, call, Op::Write),
        "apply_patch" => apply_patch(&mut c, t, call),
        "web_fetch" => {
            let method = call.method.as_deref().unwrap_or("GET");
            match call.url.as_deref() {
                Some(url) if !url.is_empty() => {
                    let http = Action::Http {
                        method: method.to_string(),
                        url: url.to_string(),
                    };
                    c.findings.extend(super::classify_action(&http, t).findings);
                }
                _ => c.add(
                    Category::Unanalysable,
                    "tool-params",
                    "web_fetch without a url",
                ),
            }
        }
        "web_search" => c.add(
            Category::HttpRead,
            "web-search",
            format!(
                "searches the web for {:?}",
                call.query.as_deref().unwrap_or("")
            ),
        ),
        "browser" => {
            let browse = Action::Browser {
                action: call.action.clone().unwrap_or_default(),
                url: call.url.clone(),
            };
            c.findings
                .extend(super::classify_action(&browse, t).findings);
        }
        "process" => process(&mut c, call),
        n if INTERNAL_TOOLS.contains(&n) => c.add(
            Category::Enumerate,
            "tool-internal",
            format!("the `{n}` tool reads OpenClaw's own catalog or sessions"),
        ),
        "exec" | "bash" => c.add(
            Category::RunCode,
            "tool-exec",
            "a command through the plugin (commands reach the guard through its node host)",
        ),
        other => c.add(
            Category::Unanalysable,
            "unknown-tool",
            format!("the table does not know the `{other}` tool"),
        ),
    }
    c
}

/// `read`, `ls`, `write`, `edit`: every path the call names, none is a malformed call.
fn paths(c: &mut Classification, t: &TableContext, call: &ToolCall, op: Op) {
    if call.paths.is_empty() {
        c.add(
            Category::Unanalysable,
            "tool-params",
            format!("`{}` names no path", call.name),
        );
        return;
    }
    for p in &call.paths {
        path(c, t, &p.to_string_lossy(), op);
    }
}

/// Every file the patch names (its own headers and OpenClaw's resolved `derivedPaths`,
/// both: a path either names is touched).
fn apply_patch(c: &mut Classification, t: &TableContext, call: &ToolCall) {
    let Some(ops) = call.patch.as_deref().and_then(patch_ops) else {
        c.add(
            Category::Unanalysable,
            "patch-unreadable",
            "the patch names no file the guard can read",
        );
        for p in &call.paths {
            path(c, t, &p.to_string_lossy(), Op::Write);
        }
        return;
    };
    for op in &ops {
        match op {
            PatchOp::Add(p) | PatchOp::Update(p) | PatchOp::MoveTo(p) => path(c, t, p, Op::Write),
            PatchOp::Delete(p) => path(c, t, p, Op::Delete),
        }
    }
    for p in &call.paths {
        path(c, t, &p.to_string_lossy(), Op::Write);
    }
}

/// `process`: looking at a session reads; input to it runs code; ending it is an exit.
fn process(c: &mut Classification, call: &ToolCall) {
    let action = call.action.as_deref().unwrap_or("");
    let what = format!("process `{action}`");
    match action {
        "list" | "poll" | "log" => c.add(Category::Enumerate, "process-read", what),
        "write" | "send-keys" | "submit" | "paste" => {
            c.add(Category::RunCode, "process-input", what)
        }
        "kill" | "clear" | "remove" => {
            let signal = call.signal.as_deref().unwrap_or("default signal");
            c.add(
                Category::ProcessExit,
                "process-exit",
                format!("{what} ({signal})"),
            )
        }
        _ => c.add(Category::Unanalysable, "process-unknown", what),
    }
}

/// One path, checked as the operand of the equivalent shell command in the workspace.
/// A path in a form OpenClaw rewrites after the hook is refused: judged as written it
/// could name a different file than the one the tool opens (a secret among them).
fn path(c: &mut Classification, t: &TableContext, p: &str, op: Op) {
    if let Some(why) = unresolved_path_form(p) {
        c.add(
            Category::SensitivePath,
            "tool-path-unresolved",
            format!("the path {p:?} {why}; the guard does not judge a path the tool would open as another"),
        );
        return;
    }
    let word = Word::literal(p);
    let seg = operand_segment(t);
    let checker = Checker::new(&seg, t);
    match op {
        Op::Read => {
            c.add(Category::Read, "file-read", format!("reads {p}"));
            checker.read(c, &word);
        }
        Op::List => {
            c.add(Category::Enumerate, "file-list", format!("lists {p}"));
            checker.read(c, &word);
        }
        Op::Write => {
            c.add(Category::Write, "file-write", format!("writes {p}"));
            checker.write(c, &word);
        }
        Op::Delete => {
            c.add(Category::Delete, "file-delete", format!("deletes {p}"));
            checker.write(c, &word);
        }
    }
}

/// A segment that only fixes where relative paths resolve: the table context's cwd.
fn operand_segment(t: &TableContext) -> Segment {
    Segment {
        text: String::new(),
        argv: Vec::new(),
        program: None,
        trusted_name: false,
        trusted_location: true,
        resolved: None,
        resolved_real: None,
        redirects: Vec::new(),
        stdin: Stdin::Inherited,
        wrappers: Vec::new(),
        privileged: false,
        env_assignments: Vec::new(),
        cwds: vec![t.cwd.to_path_buf()],
        function_call: false,
        problem: None,
    }
}
