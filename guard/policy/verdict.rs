//! Verdicts: what the policy core says about a request, always with the reasons that
//! produced it, so `policy explain`, the inbox and the audit log can show them.

use super::request::{DecisionKind, Status};
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// What kind of side effect a request (or one shell segment) is. The action table maps each
/// category to a [`Status`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Category {
    Read,
    Enumerate,
    Browse,
    HttpRead,
    Write,
    Delete,
    RunCode,
    HttpWrite,
    PackageInstall,
    ProcessExit,
    Privilege,
    PipeToShell,
    DestructiveGit,
    DestructiveDelete,
    SkillInstall,
    SensitivePath,
    /// A recursive read over a tree that holds a secret it does not name (`grep -r foo .`
    /// with a `.env` below): a person's call, and only where the guard runs it under a
    /// profile that keeps the secret unreadable (see `decide::secret_in_tree`).
    SecretInTree,
    ApprovalsOff,
    ConfigChange,
    /// Text the analyser could not understand: gated, never autonomous.
    Unanalysable,
}

/// One reason behind a verdict: a stable machine code and a sentence for people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reason {
    /// Stable, kebab-case (e.g. `sensitive-path`, `pipe-to-shell`, `allowlist-miss`).
    /// Borrowed when static: reasons are copied into every verdict on the hot path.
    pub code: Cow<'static, str>,
    pub message: Cow<'static, str>,
}

impl Reason {
    pub fn new(code: impl Into<Cow<'static, str>>, message: impl Into<Cow<'static, str>>) -> Self {
        Reason {
            code: code.into(),
            message: message.into(),
        }
    }
}

/// allow | ask | deny.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum VerdictKind {
    Allow,
    Ask,
    Deny,
}

impl From<Status> for VerdictKind {
    fn from(s: Status) -> Self {
        match s {
            Status::Autonomous => VerdictKind::Allow,
            Status::Gated => VerdictKind::Ask,
            Status::Blocked => VerdictKind::Deny,
        }
    }
}

/// The verdict for one segment of shell text (or the whole request when it is not shell).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SegmentVerdict {
    /// The segment's text as it appeared (after unwrapping wrappers, the inner command).
    pub text: String,
    /// Its argv, as far as it could be determined statically.
    pub argv: Vec<String>,
    /// Resolved executable, when it was found on PATH or given as a path.
    pub resolved_path: Option<String>,
    pub category: Category,
    pub verdict: VerdictKind,
    pub reasons: Vec<Reason>,
    /// For a git segment of shell text, the directories it may run in (a `cd` before it adds
    /// one; empty: not known). `None` otherwise; a request judged whole runs in its own cwd.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwds: Option<Vec<String>>,
}

/// The policy's answer to one request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Verdict {
    pub kind: VerdictKind,
    /// The category of the strictest segment (the one that decided).
    pub category: Category,
    pub reasons: Vec<Reason>,
    /// For `Ask`: the decisions a human may give. Empty otherwise.
    pub offered: Vec<DecisionKind>,
    pub segments: Vec<SegmentVerdict>,
    /// The sandbox profile an approved run of this request uses.
    pub profile: Option<String>,
}
