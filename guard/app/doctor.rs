//! `sanctum-guard doctor`: what this machine can enforce, checked for real (a trial confined
//! spawn), with a non-zero exit when a layer the sandbox requires is missing.

use crate::sandbox::landlock_rules::REQUIRED_ABI;
use crate::sandbox::{
    builtin_profiles, kernel, prepare, ChildStdio, EnforcementStatus, SpawnError,
};
use serde::Serialize;
use std::collections::BTreeMap;

/// The machine report.
#[derive(Debug, Clone, Serialize)]
pub struct DoctorReport {
    pub kernel: String,
    pub landlock_abi: u8,
    pub landlock_required_abi: u8,
    pub seccomp: bool,
    pub uid: u32,
    /// The guard's own effective capabilities (hex), and whether it can clear the bounding set.
    pub guard_cap_eff: Option<String>,
    pub can_clear_bounding_set: bool,
    pub root_read_only: Option<bool>,
    /// A real `/bin/true` under the read-only profile: its status, or why it failed.
    pub trial: Result<EnforcementStatus, String>,
    /// Problems that make `sandbox`/exec refuse to run (exit 1 when non-empty).
    pub problems: Vec<String>,
    /// The OpenClaw side of a node deployment, when its config could be found (warnings only).
    pub openclaw: Option<crate::node::doctor::OpenClawSide>,
}

/// OpenClaw's config (`<state>/openclaw.json`) against this machine's node identity.
fn openclaw_side() -> Option<crate::node::doctor::OpenClawSide> {
    let state = crate::openclaw::store::state_dir(None).ok()?;
    let cfg = super::config::Config::load(&super::config::Overrides::default()).ok()?;
    crate::node::doctor::inspect(&state.join("openclaw.json"), &cfg.state_dir.join("node"))
}

fn trial() -> Result<EnforcementStatus, String> {
    let dir = std::env::temp_dir();
    let spec = builtin_profiles()
        .remove("read-only")
        .ok_or_else(|| "no read-only profile".to_string())?;
    let profile = spec.resolve(&dir).map_err(|e| e.to_string())?;
    let prepared = prepare(&profile).map_err(|e| e.to_string())?;
    let argv = vec!["/bin/true".to_string()];
    let mut child = prepared
        .spawn(&argv, &dir, &BTreeMap::new(), ChildStdio::null())
        .map_err(|e| match e {
            SpawnError::Sandbox(setup) => setup.to_string(),
            SpawnError::Exec(exec) => format!("exec /bin/true: {exec}"),
        })?;
    let st = child
        .exited_blocking()
        .and_then(|()| child.finish())
        .map_err(|e| format!("wait /bin/true: {e}"))?;
    if !st.success() {
        return Err(format!("/bin/true exited with {st}"));
    }
    Ok(prepared.status)
}

/// Probes the machine.
pub fn check() -> DoctorReport {
    let abi = kernel::landlock_abi();
    let seccomp = kernel::seccomp_available();
    let root_ro = nix::sys::statvfs::statvfs("/")
        .ok()
        .map(|s| s.flags().contains(nix::sys::statvfs::FsFlags::ST_RDONLY));
    let trial = trial();
    let mut problems = Vec::new();
    if abi < REQUIRED_ABI {
        problems.push(format!(
            "Landlock ABI {abi} < {REQUIRED_ABI} (need Linux >= 6.12 with landlock in lsm=)"
        ));
    }
    if !seccomp {
        problems.push("seccomp filters unavailable".into());
    }
    match &trial {
        Err(e) => problems.push(format!("trial confined spawn failed: {e}")),
        Ok(s) if !s.is_full() => problems.push("trial spawn not fully enforced".into()),
        Ok(_) => {}
    }
    DoctorReport {
        kernel: nix::sys::utsname::uname()
            .map(|u| u.release().to_string_lossy().into_owned())
            .unwrap_or_default(),
        landlock_abi: abi,
        landlock_required_abi: REQUIRED_ABI,
        seccomp,
        uid: nix::unistd::getuid().as_raw(),
        guard_cap_eff: kernel::effective_caps().map(|c| format!("{c:016x}")),
        can_clear_bounding_set: kernel::can_drop_bounding(),
        root_read_only: root_ro,
        trial,
        problems,
        openclaw: openclaw_side(),
    }
}

impl DoctorReport {
    /// Human-readable lines.
    pub fn render(&self) -> String {
        let yn = |b: bool| if b { "yes" } else { "NO" };
        let mut out = vec![
            format!("kernel:              {}", self.kernel),
            format!(
                "landlock ABI:        {} (required {})",
                self.landlock_abi, self.landlock_required_abi
            ),
            format!("seccomp filters:     {}", yn(self.seccomp)),
            format!("uid:                 {}", self.uid),
            format!(
                "guard CapEff:        {}",
                self.guard_cap_eff.as_deref().unwrap_or("unknown")
            ),
            format!("can clear bounding:  {}", yn(self.can_clear_bounding_set)),
            format!(
                "root fs read-only:   {}",
                self.root_read_only.map(yn).unwrap_or("unknown")
            ),
        ];
        match &self.trial {
            Ok(s) => out.push(format!(
                "trial spawn:         ok (landlock {:?}, seccomp {}, caps cleared {})",
                s.landlock, s.seccomp, s.caps_cleared
            )),
            Err(e) => out.push(format!("trial spawn:         FAILED: {e}")),
        }
        match &self.openclaw {
            None => out.push("openclaw config:     not found (node checks skipped)".into()),
            Some(o) => {
                out.push(format!("openclaw config:     {}", o.config.display()));
                if let Some(e) = &o.error {
                    out.push(format!("warning:             {e}"));
                }
                for f in &o.findings {
                    let tag = if f.ok { "ok:     " } else { "warning:" };
                    out.push(format!("{tag}             {}", f.text));
                }
            }
        }
        if self.problems.is_empty() {
            out.push("verdict:             sandbox fully enforceable".into());
        } else {
            for p in &self.problems {
                out.push(format!("problem:             {p}"));
            }
        }
        out.join("\n")
    }
}
