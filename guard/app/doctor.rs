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
    /// OpenClaw's effective exec approvals for agent `main`, as the guard reads them.
    pub openclaw: Result<OpenClawPosture, String>,
    /// Problems that make `sandbox`/exec refuse to run (exit 1 when non-empty).
    pub problems: Vec<String>,
    /// The OpenClaw side of a node deployment, when its config could be found (warnings only).
    pub openclaw_node: Option<crate::node::doctor::OpenClawSide>,
    /// What this layout does not contain, in plain words (warnings, not problems).
    pub layout: Vec<String>,
    /// The gateway approver's pairing, as `serve` last saw it (none: never connected here).
    pub gateway_approver: Option<ApproverState>,
    /// The gateway's posture as `serve`'s approver last checked it (none: never checked).
    pub gateway_posture: Option<PostureReport>,
    /// The push channels as `serve` last saw them: `name (kind): ok …` or `…: FAILING: …`.
    pub notify: Vec<String>,
}

/// The approver's last posture check (`serve` keeps it in the state dir).
#[derive(Debug, Clone, Serialize)]
pub struct PostureReport {
    /// `safe`, `unsafe` or `unchecked`.
    pub state: String,
    /// `code: detail` of each way around the guard (or why it was not checked).
    pub findings: Vec<String>,
    /// False when serve runs with `--allow-unsafe-posture`.
    pub enforced: bool,
    pub seconds_ago: u64,
}

fn posture_in(state_dir: &std::path::Path) -> Option<PostureReport> {
    let file = state_dir.join(crate::gateway::posture_check::POSTURE_FILE);
    let v: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(file).ok()?).ok()?;
    let p = &v["posture"];
    let mut findings: Vec<String> = p["findings"]
        .as_array()
        .map(|l| {
            l.iter()
                .map(|f| {
                    format!(
                        "{}: {}",
                        f["code"].as_str().unwrap_or("?"),
                        f["detail"].as_str().unwrap_or("")
                    )
                })
                .collect()
        })
        .unwrap_or_default();
    if let Some(why) = p["why"].as_str() {
        findings.push(why.to_owned());
    }
    Some(PostureReport {
        state: p["state"].as_str()?.to_owned(),
        findings,
        enforced: v["enforced"] != false,
        seconds_ago: crate::engine::decision::now_ms()
            .saturating_sub(v["checkedAtMs"].as_u64().unwrap_or(0))
            / 1000,
    })
}

/// The approver's last connect answer (`serve` keeps it in the state dir).
#[derive(Debug, Clone, Serialize)]
pub struct ApproverState {
    /// `paired`, `pending` (waits for `openclaw devices approve`) or `refused`.
    pub state: String,
    pub device_id: String,
    pub request_id: Option<String>,
    pub error: Option<String>,
    pub seconds_ago: u64,
}

fn approver_state_in(state_dir: &std::path::Path) -> Option<ApproverState> {
    let text =
        std::fs::read_to_string(state_dir.join(crate::gateway::approver::STATUS_FILE)).ok()?;
    let v: serde_json::Value = serde_json::from_str(&text).ok()?;
    let at = v["atMs"].as_u64().unwrap_or(0);
    Some(ApproverState {
        state: v["state"].as_str()?.to_owned(),
        device_id: v["deviceId"].as_str().unwrap_or("").to_owned(),
        request_id: v["requestId"].as_str().map(str::to_owned),
        error: v["error"]
            .as_object()
            .map(|e| serde_json::Value::Object(e.clone()).to_string()),
        seconds_ago: crate::engine::decision::now_ms().saturating_sub(at) / 1000,
    })
}

impl ApproverState {
    fn render(&self) -> String {
        let (dev, ago) = (&self.device_id, self.seconds_ago);
        match self.state.as_str() {
            "paired" => format!("paired as device {dev} (seen {ago} s ago)"),
            "pending" => format!(
                "NOT PAIRED: device {dev} waits; on the gateway run `openclaw devices approve {}` (seen {ago} s ago)",
                self.request_id.as_deref().unwrap_or("<requestId>")
            ),
            other => format!(
                "{other}: {} (device {dev}, seen {ago} s ago)",
                self.error.as_deref().unwrap_or("no reason given")
            ),
        }
    }
}

/// What the deployment's layout leaves open: runs that own the guard's files (under its
/// own uid, or a `run_as` uid that owns the state dir), and the socket's `request` frames,
/// whose commands OpenClaw runs itself.
fn layout_warnings() -> Vec<String> {
    let mut out = Vec::new();
    let uid = nix::unistd::getuid().as_raw();
    if let Ok(cfg) = super::config::Config::load(&super::config::Overrides::default()) {
        out.extend(super::doctor_state::run_identity_warning(&cfg, uid));
        out.extend(super::doctor_state::gateway_reads_state_warning(&cfg));
        out.extend(super::doctor_state::loose_modes_warning(&cfg));
    }
    out.push(
        "socket `request` frames: the guard only answers, OpenClaw runs the command itself, \
         and nothing of the guard contains that run (node host, socket `exec` and `sandbox` \
         runs are confined)."
            .into(),
    );
    let mountinfo = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    if kernel::proc_hides_other_processes(&mountinfo) != Some(true) {
        out.push(
            "/proc is not mounted with hidepid=ptraceable: every confined run, autonomous \
             ones too, can read the command line of every process in the guard's pid \
             namespace (`ps aux`, /proc/N/cmdline; Landlock does not cover them). \
             `mount -o remount,hidepid=ptraceable /proc` makes the kernel hide every process \
             outside the run's own Landlock domain (the guard still sees all). In the compose \
             layout the guard has a pid namespace of its own: the guard and its runs."
                .into(),
        );
    }
    out
}

/// OpenClaw's config (`<state>/openclaw.json`) against this machine's node identity.
fn openclaw_side() -> Option<crate::node::doctor::OpenClawSide> {
    let cfg = super::config::Config::load(&super::config::Overrides::default()).ok()?;
    crate::node::doctor::inspect(
        &cfg.openclaw_state_dir.join("openclaw.json"),
        &cfg.state_dir.join("node"),
    )
}

/// What OpenClaw's approvals document says, read where `serve` would read it.
#[derive(Debug, Clone, Serialize)]
pub struct OpenClawPosture {
    pub store: String,
    pub era: &'static str,
    /// Effective `security`/`ask`/`askFallback` for agent `main`.
    pub security: String,
    pub ask: String,
    pub ask_fallback: String,
    /// Whether a socket token is stored (never the token).
    pub socket_token: bool,
}

/// Reads OpenClaw's approvals document from the deployment's OpenClaw state dir.
fn openclaw_posture() -> Result<OpenClawPosture, String> {
    use crate::openclaw::document::ApprovalsDocument;
    use crate::openclaw::store::{Era, Store};
    let cfg = super::config::Config::load(&super::config::Overrides::default())
        .map_err(|e| e.to_string())?;
    let store = Store::open(&cfg.openclaw_state_dir, Era::Sqlite).map_err(|e| e.to_string())?;
    let doc = match store.read_raw().map_err(|e| e.to_string())? {
        Some(raw) => ApprovalsDocument::parse_lenient(&raw).map_err(|e| e.to_string())?,
        None => ApprovalsDocument::default(),
    };
    let eff = crate::openclaw::resolve::resolve(&doc, "main");
    Ok(OpenClawPosture {
        store: store.path().display().to_string(),
        era: match store.era() {
            Era::Json => "json",
            Era::Sqlite => "sqlite",
        },
        security: eff.values.security.as_str().to_owned(),
        ask: eff.values.ask.as_str().to_owned(),
        ask_fallback: eff.values.ask_fallback.as_str().to_owned(),
        socket_token: doc.socket_token().is_some(),
    })
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

/// What "root fs read-only: NO" means, so the line does not read as a failure.
const ROOT_FS_WRITABLE: &str = "NO (normal on a laptop: runs are confined by Landlock, not by a \
     read-only /; in a container, a read-only root (`--read-only`) also keeps the guard's own \
     binary and config from being changed)";

/// The warning `doctor` and `serve` give when the guard runs as root (SECURITY.md §4: as
/// root, RLIMIT_NPROC does not bind and a `workspace-write` child can chmod its own files
/// outside the workspace).
pub fn root_warning(uid: u32) -> Option<&'static str> {
    (uid == 0).then_some(
        "running as root: run the guard as a non-root user (SECURITY.md §4: as root the \
         process limit does not bind and an approved run can change the metadata of files \
         it owns outside the workspace)",
    )
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
    // What `serve` keeps about the gateway (approver pairing, posture) is in its state dir.
    let state_dir = super::config::Config::load(&super::config::Overrides::default())
        .ok()
        .map(|c| c.state_dir);
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
        openclaw: openclaw_posture(),
        problems,
        openclaw_node: openclaw_side(),
        layout: layout_warnings(),
        gateway_approver: state_dir.as_deref().and_then(approver_state_in),
        gateway_posture: state_dir.as_deref().and_then(posture_in),
        notify: state_dir
            .as_deref()
            .and_then(crate::notify::read_state)
            .map(|v| crate::notify::state_lines(&v))
            .unwrap_or_default(),
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
                match self.root_read_only {
                    Some(true) => "yes",
                    Some(false) => ROOT_FS_WRITABLE,
                    None => "unknown",
                }
            ),
        ];
        if let Some(w) = root_warning(self.uid) {
            out.push(format!("warning:             {w}"));
        }
        match &self.trial {
            Ok(s) => out.push(format!(
                "trial spawn:         ok (landlock {:?}, seccomp {}, caps cleared {})",
                s.landlock, s.seccomp, s.caps_cleared
            )),
            Err(e) => out.push(format!("trial spawn:         FAILED: {e}")),
        }
        match &self.openclaw {
            Ok(o) => {
                out.push(format!(
                "openclaw approvals:  {} ({}): security={} ask={} askFallback={}, socket token {}",
                o.store,
                o.era,
                o.security,
                o.ask,
                o.ask_fallback,
                if o.socket_token { "stored" } else { "not stored yet (serve seeds one)" }
            ))
            }
            Err(e) => out.push(format!("openclaw approvals:  not readable: {e}")),
        }
        match &self.openclaw_node {
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
        match &self.gateway_approver {
            None => out.push("gateway approver:    not configured or never connected".into()),
            Some(a) => out.push(format!("gateway approver:    {}", a.render())),
        }
        if let Some(p) = &self.gateway_posture {
            let how = if p.enforced {
                ""
            } else {
                ", NOT enforced (--allow-unsafe-posture)"
            };
            out.push(format!(
                "gateway posture:     {} (checked {} s ago{how})",
                p.state, p.seconds_ago
            ));
            for f in &p.findings {
                out.push(format!("warning:             {f}"));
            }
        }
        for n in &self.notify {
            out.push(format!("notify channel:      {n}"));
        }
        for w in &self.layout {
            out.push(format!("warning:             {w}"));
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

#[cfg(test)]
mod tests {
    use super::approver_state_in;
    use crate::app::doctor_state::{readable_by, StateFile};
    use crate::gateway::approver::{connect_answer, STATUS_FILE};
    use serde_json::json;

    /// What the approver's connect answers leave for `doctor`, rendered as a person reads it.
    #[test]
    fn the_gateways_uid_reading_guard_state_is_named() {
        let f = |name: &str, uid, gid, mode| StateFile {
            name: name.into(),
            uid,
            gid,
            mode,
        };
        let files = [
            f("audit.key", 1000, 1000, 0o600),
            f("web-login-link", 1000, 1000, 0o600),
            f("inbox.db", 10001, 10001, 0o600),
            f("web-url", 10001, 10001, 0o644),
            f("token", 10001, 1000, 0o440),
        ];
        // Laptop: the gateway is the guard's uid.
        assert_eq!(
            readable_by((1000, 1000), &files),
            ["audit.key", "web-login-link", "web-url", "token"]
        );
        // Compose: another uid and group reads only what others may.
        assert_eq!(readable_by((1001, 1001), &files), ["web-url"]);
        // Root reads everything.
        assert_eq!(readable_by((0, 0), &files).len(), files.len());
    }

    #[test]
    fn the_approvers_pairing_reaches_doctor() {
        let dir = tempfile::tempdir().unwrap();
        let status = dir.path().join(STATUS_FILE);
        assert!(approver_state_in(dir.path()).is_none());
        let not_paired = json!({"ok": false, "error": {"code": "NOT_PAIRED",
            "details": {"code": "PAIRING_REQUIRED", "requestId": "req-42"}}});
        assert!(connect_answer(&not_paired, "dev-1", &status).is_err());
        let s = approver_state_in(dir.path()).unwrap();
        assert_eq!(
            (s.state.as_str(), s.request_id.as_deref()),
            ("pending", Some("req-42"))
        );
        assert!(
            s.render().contains("openclaw devices approve req-42"),
            "{}",
            s.render()
        );
        let refused =
            json!({"ok": false, "error": {"code": "INVALID_REQUEST", "message": "bad token"}});
        assert!(connect_answer(&refused, "dev-1", &status).is_err());
        let s = approver_state_in(dir.path()).unwrap();
        assert!(
            s.render().starts_with("refused:") && s.render().contains("bad token"),
            "{}",
            s.render()
        );
        assert!(connect_answer(&json!({"ok": true}), "dev-1", &status).is_ok());
        let s = approver_state_in(dir.path()).unwrap();
        assert!(
            s.render().starts_with("paired as device dev-1"),
            "{}",
            s.render()
        );
    }
}
