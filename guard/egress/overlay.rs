//! The rules the proxy judges by: the policy's and `--allow`'s (fixed at start) followed by
//! the overlay (`egress-overlay.toml` in the proxy's state dir), which grows when a person
//! answers "always" and is read again at every start, so a stored rule outlives the process.
//! Deny rules win across both (`policy::egress::judge` over the whole list).

use crate::policy::egress::{judge, Destination, EgressRule, EgressVerdict};
use crate::policy::egress_ask::{overlay_entry, parse_overlay};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::RwLock;

/// The overlay file's name in the proxy's state dir.
pub const OVERLAY_FILE: &str = "egress-overlay.toml";

/// The judged rules' answer, owned (the list may grow meanwhile).
#[derive(Debug, Clone)]
pub enum Judged {
    Allow(EgressRule),
    Deny(EgressRule),
    Unlisted,
}

/// The live rule list.
#[derive(Debug)]
pub struct LiveRules {
    rules: RwLock<Vec<EgressRule>>,
    file: Option<PathBuf>,
}

/// Reads an overlay file; a missing one is empty.
pub fn read_overlay(path: &Path) -> Result<Vec<EgressRule>, String> {
    match std::fs::read_to_string(path) {
        Ok(text) => parse_overlay(&text).map_err(|e| format!("{}: {e}", path.display())),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Vec::new()),
        Err(e) => Err(format!("{}: {e}", path.display())),
    }
}

impl LiveRules {
    /// `base` then the overlay in `file` (if any).
    pub fn load(base: Vec<EgressRule>, file: Option<PathBuf>) -> Result<LiveRules, String> {
        let mut rules = base;
        if let Some(f) = &file {
            rules.extend(read_overlay(f)?);
        }
        Ok(LiveRules {
            rules: RwLock::new(rules),
            file,
        })
    }

    pub fn snapshot(&self) -> Vec<EgressRule> {
        self.rules.read().map(|r| r.clone()).unwrap_or_default()
    }

    pub fn judge(&self, d: &Destination) -> Judged {
        // A poisoned lock judges nothing allowed (fail closed).
        let Ok(rules) = self.rules.read() else {
            return Judged::Unlisted;
        };
        match judge(&rules, d) {
            EgressVerdict::Allow(r) => Judged::Allow(r.clone()),
            EgressVerdict::Deny(r) => Judged::Deny(r.clone()),
            EgressVerdict::Unlisted => Judged::Unlisted,
        }
    }

    /// Appends the rule "always" stored (fsynced) and serves it from now on; the rule as
    /// served is returned.
    pub fn add(&self, rule_text: &str) -> Result<EgressRule, String> {
        let block = overlay_entry(rule_text)?;
        let mut rules = self.rules.write().map_err(|_| "rules lock poisoned")?;
        let n = rules
            .iter()
            .filter(|r| r.origin.starts_with("overlay rule "))
            .count();
        let mut rule = parse_overlay(&block)?
            .pop()
            .ok_or("the overlay entry holds no rule")?;
        rule.origin = format!("overlay rule {}", n + 1);
        if let Some(path) = &self.file {
            use std::os::unix::fs::OpenOptionsExt;
            let mut f = std::fs::OpenOptions::new()
                .create(true)
                .append(true)
                .mode(0o600)
                .open(path)
                .map_err(|e| format!("{}: {e}", path.display()))?;
            f.write_all(block.as_bytes())
                .and_then(|()| f.sync_all())
                .map_err(|e| format!("{}: {e}", path.display()))?;
        }
        rules.push(rule.clone());
        Ok(rule)
    }
}
