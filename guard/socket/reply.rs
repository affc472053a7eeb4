//! The one reply line(s) a connection gets: `decision` for `request`, `exec-res` for `exec`,
//! both for an unknown frame; exactly the bytes the real Node client accepts.

use super::wire::{FrameKind, RejectReason};
use crate::policy::request::DecisionKind;
use serde::{Deserialize, Serialize};

/// The `system.run` result the node host forwards as is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ExecPayload {
    pub exit_code: Option<i32>,
    pub timed_out: bool,
    pub success: bool,
    pub stdout: String,
    pub stderr: String,
    pub error: Option<String>,
}

/// `exec-res` error object.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExecError {
    pub code: String,
    pub message: String,
    pub reason: String,
}

impl ExecError {
    /// A policy or human deny: the node host reports `SYSTEM_RUN_DENIED: <message>` and keeps
    /// `reason` when it is one it knows.
    pub fn denied(reason: &str, message: &str) -> Self {
        ExecError {
            code: "UNAVAILABLE".into(),
            message: format!("SYSTEM_RUN_DENIED: {message}"),
            reason: reason.into(),
        }
    }

    pub fn rejected(reason: RejectReason, message: &str) -> Self {
        ExecError {
            code: reason.code().into(),
            message: message.into(),
            reason: reason.as_str().into(),
        }
    }
}

#[derive(Serialize)]
struct DecisionOut<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    id: &'a Option<String>,
    decision: &'static str,
    #[serde(skip_serializing_if = "Option::is_none")]
    reason: Option<&'a str>,
}

#[derive(Serialize)]
struct ExecResOut<'a> {
    #[serde(rename = "type")]
    ty: &'static str,
    id: &'a Option<String>,
    ok: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    payload: Option<&'a ExecPayload>,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<&'a ExecError>,
}

/// The one reply of a connection.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reply {
    /// `{"type":"decision","id","decision"}`. `reject` is set only for protocol rejections
    /// (token, json, ...), where the extra `reason` field (ignored by the Node client) tells a
    /// raw client why; a policy deny carries no reason on the wire (it goes to the audit).
    Decision {
        id: Option<String>,
        decision: DecisionKind,
        reject: Option<RejectReason>,
    },
    ExecOk {
        id: Option<String>,
        payload: ExecPayload,
    },
    ExecErr {
        id: Option<String>,
        error: ExecError,
    },
    /// A frame whose type is unknown: both a `deny` decision and an `exec-res` error line, so
    /// whichever client sent it gets an explicit answer (each client skips lines it does not
    /// recognise).
    Both {
        id: Option<String>,
        reason: RejectReason,
        message: String,
    },
    /// One line built by a door extension (`super::outcome`: the node's decision with its
    /// reason and profile, the outcome acknowledgement).
    Line(serde_json::Value),
}

impl Reply {
    /// The rejection reply in the shape `kind` understands.
    pub fn reject(
        id: Option<String>,
        kind: FrameKind,
        reason: RejectReason,
        message: &str,
    ) -> Self {
        match kind {
            FrameKind::Request => Reply::Decision {
                id,
                decision: DecisionKind::Deny,
                reject: Some(reason),
            },
            FrameKind::Exec => Reply::ExecErr {
                id,
                error: ExecError::rejected(reason, message),
            },
            FrameKind::Unknown => Reply::Both {
                id,
                reason,
                message: message.into(),
            },
        }
    }

    /// Serialises to the exact bytes written, each line ending with `\n`.
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(160);
        let mut line = |v: &dyn erased::Ser| {
            v.write(&mut out);
            out.push(b'\n');
        };
        match self {
            Reply::Decision {
                id,
                decision,
                reject,
            } => line(&DecisionOut {
                ty: "decision",
                id,
                decision: decision.as_str(),
                reason: reject.map(|r| r.as_str()),
            }),
            Reply::ExecOk { id, payload } => line(&ExecResOut {
                ty: "exec-res",
                id,
                ok: true,
                payload: Some(payload),
                error: None,
            }),
            Reply::ExecErr { id, error } => line(&ExecResOut {
                ty: "exec-res",
                id,
                ok: false,
                payload: None,
                error: Some(error),
            }),
            Reply::Both {
                id,
                reason,
                message,
            } => {
                line(&DecisionOut {
                    ty: "decision",
                    id,
                    decision: "deny",
                    reason: Some(reason.as_str()),
                });
                line(&ExecResOut {
                    ty: "exec-res",
                    id,
                    ok: false,
                    payload: None,
                    error: Some(&ExecError::rejected(*reason, message)),
                });
            }
            Reply::Line(v) => line(v),
        }
        out
    }
}

/// Serialising our own plain structs to a Vec cannot fail; this keeps `to_bytes` infallible
/// without an `unwrap`.
mod erased {
    pub trait Ser {
        fn write(&self, out: &mut Vec<u8>);
    }
    impl<T: serde::Serialize> Ser for T {
        fn write(&self, out: &mut Vec<u8>) {
            if serde_json::to_writer(&mut *out, self).is_err() {
                out.extend_from_slice(br#"{"type":"decision","decision":"deny"}"#);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_have_the_documented_bytes() {
        let r = Reply::Decision {
            id: Some("a".into()),
            decision: DecisionKind::AllowOnce,
            reject: None,
        };
        assert_eq!(
            r.to_bytes(),
            b"{\"type\":\"decision\",\"id\":\"a\",\"decision\":\"allow-once\"}\n"
        );
        let r = Reply::ExecErr {
            id: Some("b".into()),
            error: ExecError::denied("user-denied", "user denied"),
        };
        assert_eq!(
            String::from_utf8(r.to_bytes()).expect("utf8"),
            "{\"type\":\"exec-res\",\"id\":\"b\",\"ok\":false,\"error\":{\"code\":\"UNAVAILABLE\",\"message\":\"SYSTEM_RUN_DENIED: user denied\",\"reason\":\"user-denied\"}}\n"
        );
        let r = Reply::ExecOk {
            id: Some("c".into()),
            payload: ExecPayload {
                exit_code: Some(0),
                timed_out: false,
                success: true,
                stdout: "guard-ran\n".into(),
                stderr: String::new(),
                error: None,
            },
        };
        assert_eq!(
            String::from_utf8(r.to_bytes()).expect("utf8"),
            "{\"type\":\"exec-res\",\"id\":\"c\",\"ok\":true,\"payload\":{\"exitCode\":0,\"timedOut\":false,\"success\":true,\"stdout\":\"guard-ran\\n\",\"stderr\":\"\",\"error\":null}}\n"
        );
        let both = Reply::reject(None, FrameKind::Unknown, RejectReason::Json, "bad");
        let text = String::from_utf8(both.to_bytes()).expect("utf8");
        assert_eq!(text.lines().count(), 2);
        assert!(text.contains("\"decision\":\"deny\""));
        assert!(text.contains("\"reason\":\"json\""));
    }
}
