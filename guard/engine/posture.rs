//! The posture gate: while the gateway the guard approves for could act without the guard
//! (a [`Finding`] of `openclaw::posture`), or before its posture was ever checked, every
//! decision is a deny that says why. `serve --allow-unsafe-posture` turns the gate into a
//! warning. Without a gateway url there is nothing to check and the gate stays open.

use crate::openclaw::posture::Finding;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::RwLock;

/// What the guard knows of the gateway's posture.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(tag = "state", rename_all = "kebab-case")]
pub enum PostureState {
    /// No gateway configured: nothing to check.
    NotApplicable,
    /// Not checked yet (the approver has not connected, or its check failed).
    Unchecked { why: String },
    /// Checked: no way around the guard found.
    Safe,
    /// Checked: these ways around the guard.
    Unsafe { findings: Vec<Finding> },
}

pub struct PostureGate {
    state: RwLock<PostureState>,
    /// False under `--allow-unsafe-posture`: findings are reported, decisions go on.
    enforce: bool,
    /// Set when the approver found nothing listening at the gateway url: `serve` then stops
    /// waiting for a first check that cannot come soon.
    unreachable: AtomicBool,
}

impl PostureGate {
    /// A gate for a guard with (`checked`) or without a gateway to check.
    pub fn new(checked: bool, enforce: bool) -> Self {
        let state = if checked {
            PostureState::Unchecked {
                why: "the approver has not reached the gateway yet".into(),
            }
        } else {
            PostureState::NotApplicable
        };
        PostureGate {
            state: RwLock::new(state),
            enforce,
            unreachable: AtomicBool::new(false),
        }
    }

    /// Open: nothing to check.
    pub fn open() -> Self {
        Self::new(false, true)
    }

    /// Records a check. A poisoned lock is still written: a finding must never be lost to a
    /// panic elsewhere (the gate would stay open on an old `Safe`).
    pub fn set(&self, s: PostureState) {
        *self.state.write().unwrap_or_else(|p| p.into_inner()) = s;
    }

    pub fn state(&self) -> PostureState {
        self.state
            .read()
            .map(|g| g.clone())
            .unwrap_or(PostureState::Unchecked {
                why: "posture state unreadable".into(),
            })
    }

    /// The approver's last attempt found nothing listening (false once one connects).
    pub fn set_unreachable(&self, yes: bool) {
        self.unreachable.store(yes, Ordering::Relaxed);
    }

    pub fn unreachable(&self) -> bool {
        self.unreachable.load(Ordering::Relaxed)
    }

    pub fn enforced(&self) -> bool {
        self.enforce
    }

    /// The deny reason while the gate is shut; None when decisions may go on.
    pub fn blocking(&self) -> Option<String> {
        if !self.enforce {
            return None;
        }
        match self.state() {
            PostureState::NotApplicable | PostureState::Safe => None,
            PostureState::Unchecked { why } => Some(format!("posture-unchecked: {why}")),
            PostureState::Unsafe { findings } => Some(format!(
                "unsafe-posture: {}",
                findings
                    .iter()
                    .map(|f| f.code)
                    .collect::<Vec<_>>()
                    .join(",")
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn finding(code: &'static str) -> Finding {
        Finding {
            code,
            detail: String::new(),
        }
    }

    #[test]
    fn the_gate_shuts_until_checked_and_while_unsafe() {
        let g = PostureGate::new(true, true);
        assert!(g
            .blocking()
            .is_some_and(|r| r.starts_with("posture-unchecked")));
        g.set(PostureState::Safe);
        assert_eq!(g.blocking(), None);
        g.set(PostureState::Unsafe {
            findings: vec![finding("plugin"), finding("directives")],
        });
        assert_eq!(
            g.blocking().as_deref(),
            Some("unsafe-posture: plugin,directives")
        );
        g.set(PostureState::Safe);
        assert_eq!(g.blocking(), None);
    }

    #[test]
    fn without_a_gateway_or_when_overridden_it_stays_open() {
        assert_eq!(PostureGate::open().blocking(), None);
        let g = PostureGate::new(true, false);
        assert_eq!(g.blocking(), None);
        g.set(PostureState::Unsafe {
            findings: vec![finding("elevated")],
        });
        assert_eq!(g.blocking(), None);
    }
}
