//! Turns a resolved profile into a ready-to-spawn plan (Landlock ruleset, BPF, rlimits, env)
//! and starts commands under it (`launch.rs`). Shared by `run`, the CLI, `doctor` and the
//! benchmark, so they all measure and test the same code path.

use super::cgroup::RunCgroup;
use super::child::{ChildPlan, Rlimit};
use super::launch::{launch, ChildStdio, ExecArgs, SpawnError};
use super::process::ConfinedChild;
use super::profile::ResolvedProfile;
use super::status::{EnforcementStatus, Level};
use super::{env, kernel, landlock_rules, resources, seccomp, SandboxError};
use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

/// A plan built once, spawnable many times.
#[derive(Debug, Clone)]
pub struct Prepared {
    plan: Arc<ChildPlan>,
    pub status: EnforcementStatus,
    profile: ResolvedProfile,
    /// The run's cgroup, kept (and its `cgroup.procs` fds open) as long as the plan.
    cgroup: Option<Arc<RunCgroup>>,
    /// The private tmp is bounded by polling its size.
    tmp_poll: bool,
}

const MIB: u64 = 1024 * 1024;

/// The rlimits of a run; `nproc` replaces the profile's RLIMIT_NPROC when the process cap
/// falls back to it (`resources`). With a tmp size, no one file may exceed it either.
/// Each is at most the guard's own hard limit: a run may not raise one (setrlimit would fail
/// with EPERM and the run with it, as under `prlimit --nofile=256`), and lower is tighter.
fn rlimits(p: &ResolvedProfile, nproc: Option<u64>) -> Vec<Rlimit> {
    use nix::sys::resource::{getrlimit, Resource};
    let l = &p.limits;
    let fsize = match l.tmp_mb {
        0 => l.file_size_mb,
        t => l.file_size_mb.min(t),
    };
    [
        (Resource::RLIMIT_NPROC, nproc.unwrap_or(l.nproc)),
        (Resource::RLIMIT_AS, l.address_space_mb.saturating_mul(MIB)),
        (Resource::RLIMIT_FSIZE, fsize.saturating_mul(MIB)),
        (Resource::RLIMIT_CPU, l.cpu_secs),
        (Resource::RLIMIT_NOFILE, l.nofile),
        (Resource::RLIMIT_CORE, 0),
    ]
    .into_iter()
    .map(|(resource, value)| Rlimit {
        resource: resource as libc::__rlimit_resource_t,
        value: match getrlimit(resource) {
            Ok((_, hard)) => value.min(hard),
            Err(_) => value,
        },
    })
    .collect()
}

/// Builds everything the child needs; fails (nothing runs) if the kernel lacks a feature the
/// profile requires and degraded mode is not allowed.
pub fn prepare(profile: &ResolvedProfile) -> Result<Prepared, SandboxError> {
    let abi = kernel::landlock_abi();
    let (layers, ll) = landlock_rules::build(profile, abi)?;
    let (base, limits) = match layers {
        Some(l) => (Some(l.base), l.limits),
        None => (None, None),
    };
    let mut missing = ll.missing.clone();
    let (filter, seccomp_on) = if kernel::seccomp_available() {
        (Some(seccomp::build(profile)?), true)
    } else if profile.allow_degraded {
        missing.push("seccomp".into());
        (None, false)
    } else {
        return Err(SandboxError::Unsupported {
            missing: "seccomp filters".into(),
            abi,
        });
    };
    let res = resources::plan(profile)?;
    missing.extend(res.missing.iter().cloned());
    if !res.missing.is_empty() && !profile.allow_degraded {
        return Err(SandboxError::Unsupported {
            missing: res.missing.join(", "),
            abi,
        });
    }
    let drop_bounding = kernel::can_drop_bounding();
    // Without CAP_SETPCAP we cannot clear the bounding set; a process without privileges has
    // an empty effective set anyway, so "cleared" holds when we are not uid 0.
    // SAFETY: geteuid has no preconditions and cannot fail.
    let caps_cleared = drop_bounding || unsafe { libc::geteuid() } != 0;
    let status = EnforcementStatus {
        landlock_abi: abi,
        landlock: ll.level,
        fs_rights: ll.fs_rights,
        net_rights: ll.net_rights,
        scopes: ll.scopes,
        seccomp: seccomp_on,
        seccomp_parts: if seccomp_on {
            seccomp::parts(profile)
                .iter()
                .map(|s| s.to_string())
                .collect()
        } else {
            vec![]
        },
        caps_cleared,
        no_new_privs: true,
        rlimits: true,
        network: profile.network.to_string(),
        missing,
        resources: res.how.clone(),
    };
    if status.landlock == Level::None && !profile.allow_degraded {
        return Err(SandboxError::Unsupported {
            missing: "landlock".into(),
            abi,
        });
    }
    let plan = ChildPlan {
        landlock: base,
        landlock_limits: limits,
        seccomp: filter,
        rlimits: rlimits(profile, res.nproc),
        // Nothing to drop when every thread's set is known to be empty (saves 41 reads).
        drop_bounding: drop_bounding && !kernel::bounding_set_empty_everywhere(),
        cap_last: kernel::cap_last_cap(),
        parent_pid: std::process::id() as libc::pid_t,
        run_as: profile.run_as.map(|r| (r.uid, r.gid)),
        cgroup_procs: res
            .cgroup
            .as_ref()
            .map(|c| c.procs_fds())
            .unwrap_or_default(),
    };
    Ok(Prepared {
        plan: Arc::new(plan),
        status,
        profile: profile.clone(),
        cgroup: res.cgroup.map(Arc::new),
        tmp_poll: res.tmp_poll,
    })
}

impl Prepared {
    /// The child's environment: the guard's own variables and `overrides`, filtered by the
    /// profile's allow-list, plus TMPDIR pointing at the private tmp.
    pub fn env(&self, overrides: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut extra = Vec::new();
        if let Some(t) = &self.profile.tmp {
            extra.push((
                "TMPDIR".to_string(),
                t.path().to_string_lossy().into_owned(),
            ));
        }
        // The standalone `sandbox` command passes the user's own environment through the
        // profile's allow-list; the engine's runs use `env_exact` and inherit nothing.
        #[allow(clippy::disallowed_methods)]
        let inherited = std::env::vars();
        env::build_env(inherited, overrides, &self.profile.env_allow, &extra)
    }

    /// The child's environment when the caller judged all of it (an exec plan): `vars`
    /// less secret-looking names, plus TMPDIR; nothing of the guard's own.
    pub fn env_exact(&self, vars: &BTreeMap<String, String>) -> BTreeMap<String, String> {
        let mut extra = Vec::new();
        if let Some(t) = &self.profile.tmp {
            extra.push((
                "TMPDIR".to_string(),
                t.path().to_string_lossy().into_owned(),
            ));
        }
        env::build_env(Vec::new(), vars, &["*".to_string()], &extra)
    }

    pub fn profile(&self) -> &ResolvedProfile {
        &self.profile
    }

    /// The private tmp's size is checked by polling.
    pub fn tmp_poll(&self) -> bool {
        self.tmp_poll
    }

    /// Kills everything in the run's cgroup, where the kernel offers that (v2).
    pub fn kill_cgroup(&self) {
        if let Some(c) = &self.cgroup {
            c.kill();
        }
    }

    /// Starts `argv` confined, in `cwd`, with exactly the environment `env` (see
    /// [`Prepared::env`]). Returns once the command has exec'd.
    pub fn spawn(
        &self,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
        stdio: ChildStdio,
    ) -> Result<ConfinedChild, SpawnError> {
        self.spawn_program(None, argv, cwd, env, stdio)
    }

    /// [`Self::spawn`] executing exactly `program` (when given) with `argv` as its arguments.
    pub fn spawn_program(
        &self,
        program: Option<&Path>,
        argv: &[String],
        cwd: &Path,
        env: &BTreeMap<String, String>,
        stdio: ChildStdio,
    ) -> Result<ConfinedChild, SpawnError> {
        let exec = ExecArgs::new(program, argv, cwd, env)?;
        launch(&self.plan, &exec, stdio)
    }
}
