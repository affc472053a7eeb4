//! `doctor`'s checks of the guard's own state: who can change it (runs under the guard's
//! uid), who can read it (the gateway's uid), and entries whose modes are looser than the
//! guard gave them (what an approved run can do, and the engine puts back after each one).

/// Whether approved runs can change the guard's files: they can when they run as the uid
/// that owns the guard's state dir (Landlock does not cover chmod/utime).
pub fn run_identity_warning(cfg: &super::config::Config, guard_uid: u32) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let owner = std::fs::metadata(&cfg.state_dir).map(|m| m.uid()).ok();
    match cfg.run_as {
        None if owner.is_none_or(|o| o == guard_uid) => Some(format!(
            "runs execute as this uid ({guard_uid}), which owns the guard's state dir {}: an \
             approved workspace-write run can change the guard's files (chmod/utime its state \
             dir, audit key and log, inbox, tokens); Landlock does not cover metadata. \
             Autonomous runs cannot (seccomp refuses it), and the guard puts modes back when \
             an approved run ends (a `tamper` audit record), but not while it runs. Set \
             run_as (serve as root) or run the agent's commands under another uid (the \
             compose layout) to close this.",
            cfg.state_dir.display()
        )),
        Some(r) if owner == Some(r.uid) => Some(format!(
            "run_as uid {} owns the guard's state dir {}: approved runs can change the \
             guard's files; the state dir must belong to the guard",
            r.uid,
            cfg.state_dir.display()
        )),
        _ => None,
    }
}

/// A file of the guard's state as the kernel's permission check sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateFile {
    pub name: String,
    pub uid: u32,
    pub gid: u32,
    pub mode: u32,
}

/// The guard's state files a process of `gateway` (uid, gid) can read: root, the owner with
/// the owner's read bit, the group with the group's, anyone with the other's. Why: OpenClaw's
/// own tools run in the gateway's process, so what it can read the agent can ask to read.
pub fn readable_by(gateway: (u32, u32), files: &[StateFile]) -> Vec<String> {
    let (uid, gid) = gateway;
    files
        .iter()
        .filter(|f| {
            uid == 0
                || (f.uid == uid && f.mode & 0o400 != 0)
                || (f.gid == gid && f.mode & 0o040 != 0)
                || f.mode & 0o004 != 0
        })
        .map(|f| f.name.clone())
        .collect()
}

/// Whether the gateway's uid (the owner of OpenClaw's state dir, where it runs) can read the
/// guard's audit key, login link and other state: true on a one-user laptop, where only the
/// plugin's gate on OpenClaw's file tools keeps them from the agent.
pub fn gateway_reads_state_warning(cfg: &super::config::Config) -> Option<String> {
    use std::os::unix::fs::MetadataExt;
    let oc = std::fs::metadata(&cfg.openclaw_state_dir).ok()?;
    let mut files = Vec::new();
    for e in std::fs::read_dir(&cfg.state_dir).ok()?.flatten() {
        if let Ok(m) = e.metadata() {
            files.push(StateFile {
                name: e.file_name().to_string_lossy().into_owned(),
                uid: m.uid(),
                gid: m.gid(),
                mode: m.mode(),
            });
        }
    }
    let readable = readable_by((oc.uid(), oc.gid()), &files);
    if readable.is_empty() {
        return None;
    }
    Some(format!(
        "OpenClaw's gateway runs as uid {} (the owner of {}), which can read the guard's {} in \
         {}: OpenClaw's own file tools run in that process, so only the Sanctum plugin's gate \
         keeps them from the agent. Run the gateway under another uid (the compose layout) \
         to close this (SECURITY.md, \"One-user laptop\").",
        oc.uid(),
        cfg.openclaw_state_dir.display(),
        readable.join(", "),
        cfg.state_dir.display()
    ))
}

/// State files and dirs others may read or write although the guard made them its own
/// (0600 files, a 0700 dir): an approved run can widen them (chmod is outside Landlock);
/// `serve` puts them back after each approved run and audits it, `doctor` names them now.
pub fn loose_modes_warning(cfg: &super::config::Config) -> Option<String> {
    let modes = cfg.state_modes();
    let loose: Vec<String> = modes
        .drift()
        .into_iter()
        .filter(|d| d.loose(modes.public()))
        .map(|d| {
            let name = d.path.strip_prefix(modes.dir()).unwrap_or(&d.path);
            let name = if name.as_os_str().is_empty() {
                "the state dir".to_owned()
            } else {
                name.display().to_string()
            };
            format!("{name} {:04o} (want {:04o})", d.mode, d.wanted_mode)
        })
        .collect();
    if loose.is_empty() {
        return None;
    }
    Some(format!(
        "loose modes in the guard's state dir {}: {}. Others may read or change what only the \
         guard should: chmod them back now (serve does so after each approved run, with a \
         `tamper` audit record, and an approved run under the guard's uid can widen them: see \
         run_as).",
        cfg.state_dir.display(),
        loose.join(", ")
    ))
}
