//! Sandbox profiles as they appear in the policy file (`[profiles.<name>]`). A profile says
//! what a confined process may read, write and connect to, and its resource limits.
//! `resolve` turns one into concrete paths for a given workspace.
//!
//! ```toml
//! [profiles.workspace-write]           # built in; a policy may redefine it or add others
//! read = ["/"]                         # read + execute
//! write = ["/dev/null", "{workspace}", "{tmp}"]   # {tmp}: private 0700 dir, TMPDIR, removed after
//! protected = []                       # read-only paths under a writable root (see below)
//! network = "none"                     # or { ports = [443] }: TCP connect to these only;
//!                                      # or "read-proxy": the guard's read proxy only
//! deny_read = ["{home}/.ssh", "{home}/.aws", "{home}/.gnupg", "{home}/.config/gh",
//!              "/etc/shadow"]          # not even readable ({home} = $HOME)
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
//! `read-only` is the same with `write = ["/dev/null"]` and `{workspace}/.env` also denied.
//! The deployment adds its own secrets to every profile (`resolve_with` and [`DenyList`]).
//!
//! Protected and deny-read paths stay so even when they do not exist yet: Landlock rights
//! apply to a whole subtree, so each ancestor of such a path gets read rights only and its
//! other children are granted write one by one. Consequence: nothing can be created directly
//! in such an ancestor. That is why `workspace-write` protects nothing under the workspace
//! and does not deny its `.env`: an approved command must be able to create files at the
//! workspace root (`echo hi > notes.txt`, `git init`). Git hooks and config, and the agent's
//! `.openclaw`/`.sanctum`, are kept safe by the integrity check around each run instead
//! (`sandbox/integrity/`: snapshot, restore, report).

use super::tmpdir::PrivateTmp;
use super::SandboxError;
pub use crate::policy::profile::{
    builtin_profiles, default_env_allow, Limits, NetworkSpec, ProfileSpec,
};
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

impl std::str::FromStr for NetworkSpec {
    type Err = SandboxError;
    /// `none`, `read-proxy`, or a comma-separated list of TCP ports (`443,80`).
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "none" => return Ok(NetworkSpec::None),
            "read-proxy" => return Ok(NetworkSpec::ReadProxy),
            _ => {}
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
    /// The identity the run takes (`run_as`); None: the guard's own.
    pub run_as: Option<super::RunAs>,
    /// The workspace scan the workspace's secrets were denied from, when the profile keeps
    /// its runs from them that way (`ws_secrets::applies`): the limits layer grants from it
    /// and `sandbox::run` checks it is still valid when the run ends.
    pub scan: Option<Arc<super::ws_secrets::Judged>>,
}

impl ResolvedProfile {
    /// The run takes `run_as`'s identity; its private tmp becomes that identity's (0700), so
    /// the run can use it and nobody else can.
    pub fn with_run_as(mut self, run_as: Option<super::RunAs>) -> Result<Self, SandboxError> {
        if let (Some(r), Some(tmp)) = (run_as, &self.tmp) {
            std::os::unix::fs::chown(tmp.path(), Some(r.uid), Some(r.gid)).map_err(|e| {
                SandboxError::Profile(format!("private tmp {}: {e}", tmp.path().display()))
            })?;
        }
        self.run_as = run_as;
        Ok(self)
    }
}

/// OpenClaw's own secrets at the top of its state dir: config (tokens), stored credentials,
/// per-agent auth profiles and databases, device identity, approvals, SQLite state.
const OPENCLAW_SECRETS: [&str; 6] = [
    "openclaw.json",
    "credentials",
    "agents",
    "identity",
    "exec-approvals.json",
    "state",
];

/// Paths the deployment says no confined process may read, whatever the profile: the
/// guard's state dir, OpenClaw's approvals document and SQLite store, token files. They
/// may not exist yet (a SQLite `-wal` appears later): a missing path is denied by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct DenyList {
    paths: Vec<PathBuf>,
}

impl DenyList {
    /// Absolute paths only (a relative one would depend on the guard's cwd).
    pub fn new(paths: impl IntoIterator<Item = PathBuf>) -> Result<DenyList, SandboxError> {
        let mut list = DenyList::default();
        for p in paths {
            list.push(p)?;
        }
        Ok(list)
    }

    pub fn push(&mut self, path: PathBuf) -> Result<(), SandboxError> {
        if !path.is_absolute() || path.components().any(|c| c == Component::ParentDir) {
            return Err(SandboxError::Profile(format!(
                "deny-read path {} is not absolute and normal",
                path.display()
            )));
        }
        self.paths.push(path);
        Ok(())
    }

    /// A SQLite database and the files SQLite creates next to it.
    pub fn push_sqlite(&mut self, db: PathBuf) -> Result<(), SandboxError> {
        for suffix in ["", "-wal", "-shm", "-journal"] {
            let mut name = db.clone().into_os_string();
            name.push(suffix);
            self.push(PathBuf::from(name))?;
        }
        Ok(())
    }

    /// OpenClaw's secrets in its state dir: the approvals document (it holds the socket
    /// token) and the SQLite store (which holds it from 2026.8.1).
    pub fn push_openclaw_state(&mut self, state_dir: &Path) -> Result<(), SandboxError> {
        self.push(state_dir.join("exec-approvals.json"))?;
        self.push_sqlite(state_dir.join("state").join("openclaw.sqlite"))
    }

    /// All of OpenClaw's state dir that is not the way to the workspace: the whole dir when
    /// the workspace lies elsewhere; else every entry of each directory on the way down to
    /// the workspace except the next step (Landlock cannot subtract the workspace from a
    /// denied parent), plus the known secrets by name in case they appear later. Entries
    /// created later beside the way are not covered; the autonomous profile never grants
    /// the state dir at all.
    pub fn push_openclaw_state_dir(
        &mut self,
        state_dir: &Path,
        workspace: &Path,
    ) -> Result<(), SandboxError> {
        let real = |p: &Path| p.canonicalize().unwrap_or_else(|_| p.to_path_buf());
        let (dir, ws) = (real(state_dir), real(workspace));
        if !ws.starts_with(&dir) {
            return self.push(dir);
        }
        let on_way = |p: &Path| ws.starts_with(p);
        let mut at = dir.clone();
        while at != ws {
            let Ok(entries) = std::fs::read_dir(&at) else {
                break;
            };
            let mut next = None;
            for e in entries.flatten() {
                let p = e.path();
                if on_way(&p) {
                    next = Some(p);
                } else {
                    self.push(p)?;
                }
            }
            match next {
                Some(n) => at = n,
                None => break,
            }
        }
        for name in OPENCLAW_SECRETS {
            let p = dir.join(name);
            if !on_way(&p) && !self.paths.contains(&p) {
                self.push(p)?;
            }
        }
        self.push_openclaw_state(&dir)
    }

    pub fn paths(&self) -> &[PathBuf] {
        &self.paths
    }
}

impl ProfileSpec {
    /// [`ProfileSpec::resolve_with`] for standalone use (the `sandbox` command, tests,
    /// `doctor`): no deployment secrets, and `{home}` is the calling user's own HOME.
    pub fn resolve(&self, workspace: &Path) -> Result<ResolvedProfile, SandboxError> {
        // The one read of the environment outside the config: a standalone run confines
        // on behalf of the user who started it.
        #[allow(clippy::disallowed_methods)]
        let home = std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|h| h.is_absolute())
            .unwrap_or_else(|| PathBuf::from("/root"));
        self.resolve_with(workspace, &home, &DenyList::default())
    }

    /// Expands placeholders and canonicalizes paths, and adds the deployment's `deny` list to
    /// the profile's deny_read (`profile_paths`, cached and re-checked per use). Missing read
    /// paths are skipped (a read grant on nothing grants nothing); a missing write path is an
    /// error (fail closed), and so is a deny-read path at or above the workspace (nothing
    /// could run there).
    /// `home` is what `{home}` means: the agent's HOME of the deployment.
    pub fn resolve_with(
        &self,
        workspace: &Path,
        home: &Path,
        deny: &DenyList,
    ) -> Result<ResolvedProfile, SandboxError> {
        let tmp = self.private_tmp()?;
        let super::profile_paths::Paths {
            workspace,
            read,
            write,
            protected,
            mut deny_read,
        } = super::profile_paths::resolve(
            self,
            workspace,
            home,
            deny,
            tmp.as_deref().map(PrivateTmp::path),
        )?;
        // A run that cannot write the workspace can be kept from its secrets without capping
        // its root: each one is denied, its siblings granted (see `ws_secrets`). Only where
        // the workspace is what grants them: a profile that reads a parent of the workspace
        // (`read-only` reads `/`) reads far more than the workspace's secrets anyway, and its
        // workspace may be a home or /tmp, too big to scan.
        let writes_ws = write.iter().any(|w| workspace.starts_with(w));
        let reads_parent = read
            .iter()
            .any(|r| r != &workspace && workspace.starts_with(r));
        let mut scan = None;
        if !writes_ws && !reads_parent {
            let judged = super::ws_secrets::scan(&workspace)?;
            for s in judged.secrets().iter() {
                if !deny_read.contains(s) {
                    deny_read.push(s.clone());
                }
            }
            scan = Some(judged);
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
            run_as: None,
            scan,
        })
    }

    /// A fresh private tmp when a read or write path names `{tmp}`.
    fn private_tmp(&self) -> Result<Option<Arc<PrivateTmp>>, SandboxError> {
        let uses_tmp = self
            .write
            .iter()
            .chain(&self.read)
            .any(|p| p.contains("{tmp}"));
        Ok(if uses_tmp {
            Some(Arc::new(PrivateTmp::create()?))
        } else {
            None
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtin_workspace_write_caps_nothing_under_the_workspace() {
        let dir = tempfile::tempdir().unwrap();
        let p = builtin_profiles()["workspace-write"]
            .resolve(dir.path())
            .unwrap();
        let ws = dir.path().canonicalize().unwrap();
        assert!(p.write.contains(&ws));
        let under = |l: &[PathBuf]| l.iter().any(|x| x.starts_with(&ws));
        assert!(!under(&p.protected) && !under(&p.deny_read));
        let ro = builtin_profiles()["read-only"].resolve(dir.path()).unwrap();
        assert!(ro.deny_read.contains(&ws.join(".env")));
        let tmp = p.tmp.clone().unwrap();
        assert!(p.write.contains(&tmp.path().to_path_buf()));
        let tmp_path = tmp.path().to_path_buf();
        std::fs::write(tmp_path.join("left"), "x").unwrap();
        drop(tmp);
        drop(p);
        // Emptied with the profile (and pooled, or removed when the pool is full).
        assert!(
            !tmp_path.join("left").exists(),
            "private tmp emptied with the profile"
        );
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

    #[test]
    fn deployment_deny_list_added_to_every_profile() {
        let dir = tempfile::tempdir().unwrap();
        let ws = dir.path().join("ws");
        std::fs::create_dir(&ws).unwrap();
        let mut deny = DenyList::new([dir.path().join("guard-state")]).unwrap();
        deny.push_openclaw_state(dir.path()).unwrap();
        for (name, spec) in builtin_profiles() {
            let p = spec.resolve_with(&ws, Path::new("/root"), &deny).unwrap();
            for d in deny.paths() {
                assert!(p.deny_read.contains(d), "{name}: {}", d.display());
            }
            assert!(p
                .deny_read
                .contains(&dir.path().join("state/openclaw.sqlite-wal")));
        }
        assert!(DenyList::new([PathBuf::from("state")]).is_err());
        assert!(DenyList::new([PathBuf::from("/a/../etc")]).is_err());
        let around = DenyList::new([dir.path().to_path_buf()]).unwrap();
        let spec = &builtin_profiles()["read-only"];
        assert!(matches!(
            spec.resolve_with(&ws, Path::new("/root"), &around),
            Err(SandboxError::Profile(_))
        ));
    }
}
