//! Sandbox profiles as they appear in the policy file (`[profiles.<name>]`). A profile says
//! what a confined process may read, write and connect to, and its resource limits.
//! `resolve` turns one into concrete paths for a given workspace.
//!
//! ```toml
//! [profiles.workspace-write]           # built in; a policy may redefine it or add others
//! read = ["/"]                         # read + execute
//! write = ["/dev/null", "{workspace}", "{tmp}"]   # {tmp}: private 0700 dir, TMPDIR, removed after
//! protected = ["{workspace}/.git/hooks", "{workspace}/.git/config",
//!              "{workspace}/.openclaw", "{workspace}/.sanctum"]
//! network = "none"                     # or { ports = [443] }: TCP connect to these only
//! deny_read = ["{home}/.ssh", "{home}/.aws", "{home}/.gnupg", "{home}/.config/gh",
//!              "{workspace}/.env", "/etc/shadow"]   # not even readable ({home} = $HOME)
//! env = ["PATH", "HOME", "LANG", "LC_*", "TERM", "TZ", "USER", ...]  # default list below
//! allow_degraded = false               # true: run even if the kernel lacks a Landlock feature
//! timeout_secs = 600
//! [profiles.workspace-write.limits]    # defaults shown
//! nproc = 512
//! address_space_mb = 16384
//! file_size_mb = 1024
//! cpu_secs = 600
//! nofile = 1024                        # core dumps are always off
//! ```
//! `read-only` is the same with `write = ["/dev/null"]` and no protected paths.
//!
//! Protected paths stay read-only even when they do not exist yet: Landlock rights apply to a
//! whole subtree, so each ancestor of a protected path (the workspace root, `.git`) gets read
//! rights only and its other children are granted write one by one. Consequence: new entries
//! cannot be created directly in the workspace root or in `.git` (so `git commit`, which
//! writes `.git/index.lock`, needs a profile without `.git` protection); existing top-level
//! files stay writable and subdirectories are fully writable.

use super::tmpdir::PrivateTmp;
use super::SandboxError;
pub use crate::policy::profile::{
    builtin_profiles, default_env_allow, Limits, NetworkSpec, ProfileSpec,
};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

impl std::str::FromStr for NetworkSpec {
    type Err = SandboxError;
    /// `none`, or a comma-separated list of TCP ports (`443,80`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        if s == "none" {
            return Ok(NetworkSpec::None);
        }
        let ports = s
            .split(',')
            .map(|p| p.trim().parse::<u16>())
            .collect::<Result<Vec<_>, _>>()
            .map_err(|_| SandboxError::Profile(format!("bad --network value {s:?}")))?;
        if ports.is_empty() || ports.contains(&0) {
            return Err(SandboxError::Profile(format!("bad --network value {s:?}")));
        }
        Ok(NetworkSpec::Ports(ports))
    }
}

/// A profile with concrete, canonical paths for one workspace.
#[derive(Debug, Clone)]
pub struct ResolvedProfile {
    pub workspace: PathBuf,
    pub read: Vec<PathBuf>,
    pub write: Vec<PathBuf>,
    pub protected: Vec<PathBuf>,
    pub deny_read: Vec<PathBuf>,
    pub network: NetworkSpec,
    pub limits: Limits,
    pub env_allow: Vec<String>,
    pub allow_degraded: bool,
    pub timeout: Duration,
    /// The private temp dir, removed when the last clone of this profile is dropped.
    pub tmp: Option<Arc<PrivateTmp>>,
}

impl ProfileSpec {
    /// Expands placeholders and canonicalizes paths. Missing read paths are skipped (a
    /// read grant on nothing grants nothing); a missing write path is an error (fail closed).
    pub fn resolve(&self, workspace: &Path) -> Result<ResolvedProfile, SandboxError> {
        let workspace = workspace.canonicalize().map_err(|e| {
            SandboxError::Profile(format!("workspace {}: {e}", workspace.display()))
        })?;
        if !workspace.is_dir() {
            return Err(SandboxError::Profile(format!(
                "workspace {} is not a directory",
                workspace.display()
            )));
        }
        let uses_tmp = self
            .write
            .iter()
            .chain(&self.read)
            .any(|p| p.contains("{tmp}"));
        let tmp = if uses_tmp {
            Some(Arc::new(PrivateTmp::create()?))
        } else {
            None
        };
        let expand = |s: &str| -> Result<PathBuf, SandboxError> {
            if s.contains("{tmp}") && tmp.is_none() {
                return Err(SandboxError::Profile("{tmp} without a private tmp".into()));
            }
            let mut out = s.replace("{workspace}", &workspace.to_string_lossy());
            if out.contains("{home}") {
                let home = std::env::var("HOME").unwrap_or_else(|_| "/root".into());
                out = out.replace("{home}", &home);
            }
            if let Some(t) = &tmp {
                out = out.replace("{tmp}", &t.path().to_string_lossy());
            }
            let p = PathBuf::from(out);
            if !p.is_absolute() {
                return Err(SandboxError::Profile(format!("path {s:?} is not absolute")));
            }
            Ok(p)
        };
        let mut read = Vec::new();
        for s in &self.read {
            if let Ok(p) = expand(s)?.canonicalize() {
                read.push(p);
            }
        }
        let mut write = Vec::new();
        for s in &self.write {
            let p = expand(s)?;
            let c = p
                .canonicalize()
                .map_err(|e| SandboxError::Profile(format!("write path {}: {e}", p.display())))?;
            write.push(c);
        }
        // Protected paths may not exist yet: keep them lexical, under the canonical workspace.
        let mut protected = Vec::new();
        for s in &self.protected {
            let p = expand(s)?;
            if p.components().any(|c| c == std::path::Component::ParentDir) {
                return Err(SandboxError::Profile(format!(
                    "protected path {s:?} has .."
                )));
            }
            protected.push(p.canonicalize().unwrap_or(p));
        }
        let mut deny_read = Vec::new();
        for s in &self.deny_read {
            let p = expand(s)?;
            if p.components().any(|c| c == std::path::Component::ParentDir) {
                return Err(SandboxError::Profile(format!(
                    "deny_read path {s:?} has .."
                )));
            }
            deny_read.push(p.canonicalize().unwrap_or(p));
        }
        Ok(ResolvedProfile {
            workspace,
            read,
            write,
            protected,
            deny_read,
            network: self.network.clone(),
            limits: self.limits.clone(),
            env_allow: self.env.clone(),
            allow_degraded: self.allow_degraded,
            timeout: Duration::from_secs(self.timeout_secs),
            tmp,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_workspace_write_protects_git_and_agent_config() {
        let dir = tempfile::tempdir().unwrap();
        let p = builtin_profiles()["workspace-write"]
            .resolve(dir.path())
            .unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert!(p.write.contains(&ws));
        assert!(p.protected.contains(&ws.join(".git/hooks")));
        assert!(p.protected.contains(&ws.join(".openclaw")));
        let tmp = p.tmp.clone().unwrap();
        assert!(p.write.contains(&tmp.path().to_path_buf()));
        let tmp_path = tmp.path().to_path_buf();
        drop(tmp);
        drop(p);
        assert!(!tmp_path.exists(), "private tmp removed with the profile");
    }

    #[test]
    fn unknown_fields_rejected_and_defaults_filled() {
        let ok: ProfileSpec =
            toml::from_str("read=[\"/\"]\nwrite=[]\nprotected=[]\nnetwork={ports=[443]}").unwrap();
        assert_eq!(ok.network, NetworkSpec::Ports(vec![443]));
        assert_eq!(ok.limits, Limits::default());
        assert!(!ok.allow_degraded);
        let bad = toml::from_str::<ProfileSpec>(
            "read=[]\nwrite=[]\nprotected=[]\nnetwork=\"none\"\nwritable=[]",
        );
        assert!(bad.is_err());
    }

    #[test]
    fn missing_write_path_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        let mut spec = builtin_profiles()["read-only"].clone();
        spec.write.push("/nonexistent/sanctum".into());
        assert!(matches!(
            spec.resolve(dir.path()),
            Err(SandboxError::Profile(_))
        ));
    }

    #[test]
    fn network_flag_parses() {
        assert_eq!("none".parse::<NetworkSpec>().unwrap(), NetworkSpec::None);
        assert_eq!(
            "443,80".parse::<NetworkSpec>().unwrap(),
            NetworkSpec::Ports(vec![443, 80])
        );
        assert!("0".parse::<NetworkSpec>().is_err());
        assert!("http".parse::<NetworkSpec>().is_err());
    }
}
