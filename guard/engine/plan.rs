//! The exec plan: everything about one run, resolved once, before the verdict, and used
//! unchanged by the runner. What runs is exactly what was judged:
//! - the program is the exact file (symlinks resolved) found on the deployment's PATH, never
//!   the request's; it is executed by that path;
//! - the working directory is the request's absolute cwd or, when it names none, the
//!   deployment's workspace; a relative cwd is refused; a cwd outside the workspace is
//!   read-only (the writable workspace always comes from the deployment);
//! - the environment is the deployment's PATH and HOME, the request's inert variables, and
//!   (once a person approved them) its other variables, less names that load code.
//!
//! This module owns those resolutions; the policy judges the [`ExecAction`] the plan
//! describes, and `judge::run` executes the plan.

use crate::policy::env::{self as envname, EnvName};
use crate::policy::request::ExecAction;
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

/// The deployment's facts a plan is resolved against (one owner: `app::config`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Deployment {
    /// The only writable tree of an approved run.
    pub workspace: PathBuf,
    /// The agent's HOME inside runs.
    pub agent_home: PathBuf,
    /// Where bare program names are looked up, and the PATH inside runs.
    pub agent_path: String,
}

/// A directory's identity: the same (device, inode) in two mount namespaces is one directory
/// of one filesystem (a volume both containers mount).
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Deserialize, serde::Serialize)]
pub struct WorkspaceStamp {
    pub dev: u64,
    pub ino: u64,
}

impl WorkspaceStamp {
    /// `dir`'s identity; `None` when it cannot be read.
    pub fn of(dir: &std::path::Path) -> Option<WorkspaceStamp> {
        use std::os::unix::fs::MetadataExt;
        let m = std::fs::metadata(dir).ok().filter(|m| m.is_dir())?;
        Some(WorkspaceStamp {
            dev: m.dev(),
            ino: m.ino(),
        })
    }
}

/// What a door was asked to run.
#[derive(Debug, Clone, Default)]
pub struct PlanInput {
    pub argv: Vec<String>,
    /// The request's cwd as sent (`None` or empty: the workspace).
    pub cwd: Option<String>,
    /// The request's environment overrides, values included (never logged).
    pub env: BTreeMap<String, String>,
    /// The request's own timeout (`timeoutMs`), if any.
    pub timeout_ms: Option<u64>,
}

/// Why a request cannot become a plan. Each is a deny with [`PlanError::reason`].
#[derive(Debug, thiserror::Error)]
pub enum PlanError {
    #[error("empty argv")]
    EmptyArgv,
    #[error("argv contains a NUL byte")]
    Nul,
    #[error("cwd {0:?} is relative; send an absolute cwd or none (the workspace)")]
    RelativeCwd(String),
    #[error("cwd {path}: {source}")]
    Cwd {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("cwd {0} is not a directory")]
    CwdNotDir(PathBuf),
    #[error("workspace {path}: {source}")]
    Workspace {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("program {0:?} not found on the deployment's PATH")]
    NotFound(String),
    #[error("program {0} is not an executable file")]
    NotExecutable(PathBuf),
    #[error("this guard judges commands that run in the agent's container (agent_filesystem); it runs none itself")]
    RunsElsewhere,
}

impl PlanError {
    /// The reason code the agent and the audit log see (OpenClaw's own where one fits).
    pub fn reason(&self) -> &'static str {
        match self {
            PlanError::EmptyArgv | PlanError::Nul => "invalid-command",
            PlanError::RelativeCwd(_) => "cwd-relative",
            PlanError::Cwd { .. } | PlanError::CwdNotDir(_) => "cwd-unavailable",
            PlanError::Workspace { .. } => "workspace-unavailable",
            PlanError::NotFound(_) | PlanError::NotExecutable(_) => "program-not-found",
            PlanError::RunsElsewhere => "runs-elsewhere",
        }
    }
}

/// One run, resolved.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExecPlan {
    /// The exact file executed (absolute, canonical).
    pub program: PathBuf,
    /// The arguments, argv[0] as the request sent it.
    pub argv: Vec<String>,
    /// Canonical working directory.
    pub cwd: PathBuf,
    /// Canonical writable workspace (from the deployment).
    pub workspace: PathBuf,
    /// The whole environment of the run (before the profile adds TMPDIR).
    pub env: BTreeMap<String, String>,
    /// Every variable name the request set, for the verdict and the card (never values).
    pub env_keys: Vec<String>,
    /// Names the request set that the run will not see (replaced or loading code).
    pub dropped_env: Vec<String>,
    /// The program lives where the agent cannot have put it (see [`trusted_location`]).
    pub program_trusted: bool,
    /// The request's own timeout, if it set one.
    pub timeout: Option<Duration>,
}

impl ExecPlan {
    /// Resolves `input` against the deployment. Reads the filesystem (cwd, program lookup).
    pub fn resolve(input: &PlanInput, dep: &Deployment) -> Result<ExecPlan, PlanError> {
        let first = input.argv.first().ok_or(PlanError::EmptyArgv)?;
        if first.is_empty() {
            return Err(PlanError::EmptyArgv);
        }
        if input.argv.iter().any(|a| a.contains('\0')) {
            return Err(PlanError::Nul);
        }
        let workspace = dep
            .workspace
            .canonicalize()
            .map_err(|source| PlanError::Workspace {
                path: dep.workspace.clone(),
                source,
            })?;
        let cwd = resolve_cwd(input.cwd.as_deref(), &workspace)?;
        let program = resolve_program(first, &cwd, &dep.agent_path)?;
        let program_trusted = trusted_location(&program, &workspace, &dep.agent_home);
        let (env, dropped_env) = run_env(&input.env, dep);
        let mut env_keys: Vec<String> = input.env.keys().cloned().collect();
        env_keys.sort();
        Ok(ExecPlan {
            program,
            argv: input.argv.clone(),
            cwd,
            workspace,
            env,
            env_keys,
            dropped_env,
            program_trusted,
            timeout: input
                .timeout_ms
                .filter(|t| *t > 0)
                .map(Duration::from_millis),
        })
    }

    /// [`ExecPlan::action`] with the overrides as the card shows them (bound by the hash).
    pub fn action_with_env(&self, env: &[crate::policy::request::EnvShown]) -> ExecAction {
        ExecAction {
            env: env.to_vec(),
            ..self.action(None)
        }
    }

    /// The request's overrides `requested` as a reviewer sees them (see
    /// [`super::env_shown`]): only the secret-looking parts hidden, a variable this plan's
    /// argv reads marked `expanded`, and whether this plan drops it.
    pub fn env_shown(
        &self,
        requested: Option<&BTreeMap<String, String>>,
    ) -> Vec<crate::policy::request::EnvShown> {
        let reads: Vec<&str> = self.argv.iter().map(String::as_str).collect();
        requested
            .into_iter()
            .flatten()
            .map(|(name, value)| {
                super::env_shown::shown(name, value, self.dropped_env.contains(name), &reads)
            })
            .collect()
    }

    /// The exec action the policy judges: this plan's argv, cwd, program and env names, and
    /// the shell text the request showed (judged too: it must agree with argv).
    pub fn action(&self, command: Option<String>) -> ExecAction {
        ExecAction {
            env: Vec::new(),
            argv: self.argv.clone(),
            command,
            cwd: Some(self.cwd.clone()),
            env_keys: self.env_keys.clone(),
            resolved_path: Some(self.program.clone()),
        }
    }

    /// Whether the cwd is inside the writable workspace.
    pub fn cwd_in_workspace(&self) -> bool {
        self.cwd.starts_with(&self.workspace)
    }

    /// Neutralises what git would run by itself for a run no person approved (see
    /// [`super::git::protective_env`]).
    pub fn neutralise_git(&mut self) {
        self.env.extend(super::git::protective_env());
    }
}

fn resolve_cwd(cwd: Option<&str>, workspace: &Path) -> Result<PathBuf, PlanError> {
    let raw = match cwd.filter(|c| !c.is_empty()) {
        None => return Ok(workspace.to_path_buf()),
        Some(c) => c,
    };
    let p = Path::new(raw);
    if !p.is_absolute() {
        return Err(PlanError::RelativeCwd(raw.to_owned()));
    }
    let c = p.canonicalize().map_err(|source| PlanError::Cwd {
        path: p.to_path_buf(),
        source,
    })?;
    if !c.is_dir() {
        return Err(PlanError::CwdNotDir(c));
    }
    Ok(c)
}

/// The file argv[0] names: a path (relative to the cwd) or a bare name on `path`, then
/// every symlink resolved, so the policy judges and the runner executes the same file.
fn resolve_program(name: &str, cwd: &Path, path: &str) -> Result<PathBuf, PlanError> {
    let candidates: Vec<PathBuf> = if name.contains('/') {
        vec![cwd.join(name)]
    } else {
        path.split(':')
            .filter(|d| !d.is_empty() && Path::new(d).is_absolute())
            .map(|d| Path::new(d).join(name))
            .collect()
    };
    for c in candidates {
        let Ok(real) = c.canonicalize() else { continue };
        let Ok(meta) = real.metadata() else { continue };
        if meta.is_file() && meta.permissions().mode() & 0o111 != 0 {
            return Ok(real);
        }
        if name.contains('/') {
            return Err(PlanError::NotExecutable(real));
        }
    }
    Err(PlanError::NotFound(name.to_owned()))
}

/// A program is in a trusted location when the agent cannot have put it there: not under
/// the workspace, the agent's home or a temp dir, and every directory above it (and the file)
/// owned by root and writable by nobody else.
pub fn trusted_location(program: &Path, workspace: &Path, home: &Path) -> bool {
    const TEMP: [&str; 4] = ["/tmp", "/var/tmp", "/dev/shm", "/run/user"];
    if program.starts_with(workspace)
        || program.starts_with(home)
        || TEMP.iter().any(|t| program.starts_with(t))
    {
        return false;
    }
    let mut p = PathBuf::new();
    for comp in program.components() {
        match comp {
            Component::RootDir => p.push("/"),
            Component::Normal(n) => p.push(n),
            _ => return false,
        }
        let Ok(m) = std::fs::symlink_metadata(&p) else {
            return false;
        };
        if m.uid() != 0 || m.mode() & 0o022 != 0 {
            return false;
        }
    }
    true
}

/// The run's environment: the deployment's PATH and HOME, then each request variable by
/// what its name does (see `policy::env`). Returns the environment and the dropped names.
fn run_env(
    req: &BTreeMap<String, String>,
    dep: &Deployment,
) -> (BTreeMap<String, String>, Vec<String>) {
    let mut env = BTreeMap::new();
    env.insert("PATH".to_owned(), dep.agent_path.clone());
    env.insert(
        "HOME".to_owned(),
        dep.agent_home.to_string_lossy().into_owned(),
    );
    let mut dropped = Vec::new();
    for (k, v) in req {
        let keep = match envname::classify(k) {
            EnvName::Inert => envname::inert_value(k, v),
            EnvName::Other => true,
            EnvName::Replaced | EnvName::Loads => false,
        };
        if keep && !k.is_empty() && !k.contains('=') && !v.contains('\0') {
            env.insert(k.clone(), v.clone());
        } else {
            dropped.push(k.clone());
        }
    }
    (env, dropped)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dep(ws: &Path) -> Deployment {
        Deployment {
            workspace: ws.to_path_buf(),
            agent_home: ws.join("home"),
            agent_path: "/usr/local/bin:/usr/bin:/bin".into(),
        }
    }

    fn input(argv: &[&str], cwd: Option<&str>) -> PlanInput {
        PlanInput {
            argv: argv.iter().map(|s| s.to_string()).collect(),
            cwd: cwd.map(str::to_owned),
            ..PlanInput::default()
        }
    }

    #[test]
    fn cwd_defaults_to_the_workspace_and_relative_is_refused() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        for none in [None, Some("")] {
            let p = ExecPlan::resolve(&input(&["ls"], none), &dep(&ws)).unwrap();
            assert_eq!(p.cwd, ws);
            assert!(p.cwd_in_workspace());
        }
        for rel in [".", "sub", "../x", "~"] {
            let e = ExecPlan::resolve(&input(&["ls"], Some(rel)), &dep(&ws)).unwrap_err();
            assert_eq!(e.reason(), "cwd-relative", "{rel}");
        }
        let p = ExecPlan::resolve(&input(&["ls"], Some("/")), &dep(&ws)).unwrap();
        assert_eq!(p.workspace, ws, "the workspace never follows the cwd");
        assert!(!p.cwd_in_workspace());
        let e = ExecPlan::resolve(&input(&["ls"], Some("/nonexistent-x")), &dep(&ws)).unwrap_err();
        assert_eq!(e.reason(), "cwd-unavailable");
    }

    #[test]
    fn program_is_the_real_file_on_the_deployment_path() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let p = ExecPlan::resolve(&input(&["ls", "-l"], None), &dep(&ws)).unwrap();
        assert_eq!(p.program, Path::new("/usr/bin/ls").canonicalize().unwrap());
        assert!(p.program_trusted);
        // A symlink named like a harmless program is judged as what it points to.
        std::os::unix::fs::symlink("/usr/bin/python3", ws.join("ls")).unwrap();
        let p = ExecPlan::resolve(&input(&["./ls"], None), &dep(&ws)).unwrap();
        assert_eq!(
            p.program,
            Path::new("/usr/bin/python3").canonicalize().unwrap()
        );
        // A file planted in the workspace is never trusted.
        std::fs::write(ws.join("tool"), "#!/bin/sh\n").unwrap();
        std::fs::set_permissions(ws.join("tool"), std::fs::Permissions::from_mode(0o755)).unwrap();
        let p = ExecPlan::resolve(&input(&["./tool"], None), &dep(&ws)).unwrap();
        assert!(!p.program_trusted);
        let e = ExecPlan::resolve(&input(&["no-such-prog-x"], None), &dep(&ws)).unwrap_err();
        assert_eq!(e.reason(), "program-not-found");
    }

    #[test]
    fn request_environment_never_replaces_path_or_home_nor_loads_code() {
        let d = tempfile::tempdir().unwrap();
        let ws = d.path().canonicalize().unwrap();
        let mut i = input(&["ls"], None);
        for (k, v) in [
            ("PATH", "/evil"),
            ("HOME", "/evil"),
            ("LD_PRELOAD", "/evil.so"),
            ("GIT_CONFIG_COUNT", "1"),
            ("BASH_ENV", "/evil"),
            ("LANG", "C.UTF-8"),
            ("TZ", ":/etc/shadow"),
            ("FOO", "bar"),
        ] {
            i.env.insert(k.into(), v.into());
        }
        let p = ExecPlan::resolve(&i, &dep(&ws)).unwrap();
        assert_eq!(p.env["PATH"], "/usr/local/bin:/usr/bin:/bin");
        assert_eq!(p.env["HOME"], ws.join("home").to_string_lossy());
        assert_eq!(p.env.get("LANG").map(String::as_str), Some("C.UTF-8"));
        assert_eq!(p.env.get("FOO").map(String::as_str), Some("bar"));
        for gone in ["LD_PRELOAD", "GIT_CONFIG_COUNT", "BASH_ENV", "TZ"] {
            assert!(!p.env.contains_key(gone), "{gone}");
            assert!(p.dropped_env.iter().any(|k| k == gone), "{gone}");
        }
        assert_eq!(p.env_keys.len(), 8);
    }
}
