//! Tool calls: what the Sanctum plugin in OpenClaw forwards from `before_tool_call` for
//! every tool other than `exec` (which reaches the guard through the node host). The call
//! is judged by the same action table as shell text: a `write` of a path gets the verdict
//! `echo > path` gets, a `read` the verdict `cat path` gets (see `table::classify_tool`).

use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Tools no Sanctum agent should have, blocked by the default table whatever their
/// parameters: they change OpenClaw's config, plugins or nodes (so they can turn approvals
/// off), or run code or a terminal outside every gate.
pub const BLOCKED_TOOLS: &[(&str, &str)] = &[
    (
        "openclaw",
        "changes OpenClaw's config, plugins and agents without asking",
    ),
    ("gateway", "controls the gateway and its config"),
    ("plugins", "installs or changes plugins"),
    ("code_execution", "runs code outside the guard's sandbox"),
    ("terminal", "an interactive terminal outside every gate"),
    ("nodes", "invokes commands on paired nodes"),
    ("computer", "drives the desktop outside every gate"),
    ("secrets", "reads the secret store"),
];

/// Tools that only look at OpenClaw's own catalog or sessions: nothing on disk or network.
pub const INTERNAL_TOOLS: &[&str] = &[
    "tool_search",
    "tool_describe",
    "sessions_yield",
    "sessions_list",
    "session_status",
];

/// One tool call, as a person sees it on the card and the audit log records it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCall {
    /// The tool's name (`read`, `write`, `edit`, `apply_patch`, `web_fetch`, ...).
    pub name: String,
    /// Paths the call touches, as the tool got them (relative ones are the workspace's).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub paths: Vec<PathBuf>,
    /// `write`: lowercase hex SHA-256 of the content, so a person approves exact bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_sha256: Option<String>,
    /// `write`: the content's size in bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content_bytes: Option<u64>,
    /// `write`: the start of the content, when the whole content did not fit the frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub preview: Option<String>,
    /// `write`: the end of the content, beside `preview`, when the whole did not fit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail: Option<String>,
    /// `write`: the whole content, checked by the guard against `content_sha256` (so what a
    /// person reads is what is hashed); absent when it was too large for the frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<String>,
    /// `edit` (as a diff of its edits) and `apply_patch` (the patch itself).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub patch: Option<String>,
    /// `web_fetch`: the HTTP method (GET when the tool has none).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// `web_search`: the query.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub query: Option<String>,
    /// `browser` and `process`: the tool's action.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// `process`: the signal of a kill.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signal: Option<String>,
    /// OpenClaw's ids of this call, for the audit log.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool_call_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

/// Why a tool path still carries a form OpenClaw rewrites after `before_tool_call` (see
/// docs/openclaw-param-rewrites.md), or `None` when the guard reads it as the tool opens it.
/// The plugin resolves each of these before asking; one that arrives anyway (an older
/// plugin, another client) would be judged as one file and opened as another, so it is
/// refused rather than guessed at.
pub fn unresolved_path_form(path: &str) -> Option<&'static str> {
    let lower = path.to_ascii_lowercase();
    if path.starts_with('@') {
        return Some("starts with `@`, OpenClaw's file-reference prefix");
    }
    if path == "~" || path.starts_with("~/") || path.starts_with("~\\") {
        return Some("starts with `~`, which OpenClaw expands to the gateway's home");
    }
    if path.contains("</arg_value>") {
        return Some("carries `</arg_value>`, which OpenClaw strips from a path's end");
    }
    if lower.starts_with("file:") {
        return Some("is a `file:` URL, which OpenClaw turns into a path");
    }
    if lower.trim_start().starts_with("media://") {
        return Some("is a `media://` reference, which OpenClaw maps into its media store");
    }
    let office = ["doc", "ppt", "xls"].iter().any(|family| {
        ["odex", "codex", "xodex", "xcodex"]
            .iter()
            .any(|tail| lower.ends_with(&format!(".{family}{tail}")))
    });
    if office {
        return Some("ends in a `.docodex`-like extension, which OpenClaw renames to `.docx`");
    }
    None
}

/// One file operation of an `apply_patch` input.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PatchOp {
    Add(String),
    Update(String),
    Delete(String),
    /// `*** Move to:` of an update: the new name is written.
    MoveTo(String),
}

/// The file operations an `apply_patch` input names (OpenClaw's `*** Begin Patch` format).
/// `None` when the text is not a patch that format accepts: the caller gates it.
pub fn patch_ops(patch: &str) -> Option<Vec<PatchOp>> {
    let mut ops = Vec::new();
    let mut lines = patch.lines().map(|l| l.trim_end_matches('\r'));
    if lines.next().map(str::trim) != Some("*** Begin Patch") {
        return None;
    }
    let mut ended = false;
    for line in lines {
        // Lenient about indentation: naming a path too many is safe, one too few is not.
        let line = line.trim_start();
        let header = |p: &str| line.strip_prefix(p).map(|s| s.trim().to_string());
        if let Some(p) = header("*** Add File:") {
            ops.push(PatchOp::Add(p));
        } else if let Some(p) = header("*** Update File:") {
            ops.push(PatchOp::Update(p));
        } else if let Some(p) = header("*** Delete File:") {
            ops.push(PatchOp::Delete(p));
        } else if let Some(p) = header("*** Move to:") {
            ops.push(PatchOp::MoveTo(p));
        } else if line.trim() == "*** End Patch" {
            ended = true;
            break;
        }
    }
    let named = ops.iter().all(|op| match op {
        PatchOp::Add(p) | PatchOp::Update(p) | PatchOp::Delete(p) | PatchOp::MoveTo(p) => {
            !p.is_empty()
        }
    });
    (ended && named && !ops.is_empty()).then_some(ops)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unresolved_path_forms_are_named_and_plain_paths_pass() {
        for p in [
            "@.env",
            "@@x",
            "@",
            "~",
            "~/.ssh/id_rsa",
            ".env</arg_value>>",
            "x</arg_value>",
            "file:///etc/passwd",
            "FILE:///etc/passwd",
            "  media://inbound/a.png",
            "report.docodex",
            "r.XLSXCODEX",
            "r.pptcodex",
        ] {
            assert!(unresolved_path_form(p).is_some(), "{p}");
        }
        for p in [
            ".env",
            "./@x",
            "a/@b",
            "/home/u/.ssh/id_rsa",
            "~user/x",
            "x.docx",
            "codex",
            " @x",
            "notes</arg_valu>",
        ] {
            assert_eq!(unresolved_path_form(p), None, "{p}");
        }
    }

    #[test]
    fn patch_ops_reads_every_header_and_refuses_what_is_not_a_patch() {
        let p = "*** Begin Patch\n*** Add File: a.txt\n+hi\n*** Update File: b.txt\n*** Move to: c.txt\n@@\n-x\n+y\n*** Delete File: d.txt\n*** End Patch\n";
        assert_eq!(
            patch_ops(p),
            Some(vec![
                PatchOp::Add("a.txt".into()),
                PatchOp::Update("b.txt".into()),
                PatchOp::MoveTo("c.txt".into()),
                PatchOp::Delete("d.txt".into()),
            ])
        );
        assert_eq!(patch_ops("*** Add File: a\n*** End Patch"), None);
        assert_eq!(patch_ops("*** Begin Patch\n*** Add File: a\n"), None);
        assert_eq!(patch_ops("*** Begin Patch\n*** End Patch\n"), None);
        assert_eq!(
            patch_ops("*** Begin Patch\n*** Add File: \n*** End Patch\n"),
            None
        );
    }
}
